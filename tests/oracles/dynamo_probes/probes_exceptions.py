"""Exceptions: try/except/else/finally around tensor work, handlers picked by class, raise from, bare raise,
the chaining attributes (__context__, __cause__, __suppress_context__), sys.exc_info() inside and after
handlers, exceptions raised by callees, by __getattr__, by dict lookups and by graph ops, and control flow
(return/break/continue) leaving a finally."""
import sys
import traceback

import torch

from . import probe

GB = torch._dynamo.graph_break
G_TABLE = {"c": 5}
G_PARAMS = {"a": 3, "b": 4, "c": 5}


def _t():
    torch.set_grad_enabled(True)
    return (torch.randn(4),)


def _log():
    return (torch.randn(4), [])


class MyError(Exception):
    pass


class ErrorWithInit(Exception):
    def __init__(self, a, b=None):
        self.a = a
        self.b = b


class ErrorWithSuperInit(Exception):
    def __init__(self, a, b=None):
        super().__init__(a, b)
        self.total = a + (b or 0)


class GetattrBase:
    def __init__(self):
        self._b = 20

    def __getattr__(self, name):
        fixed = "_" + name
        if fixed in self.__dict__:
            return self.__dict__[fixed]
        raise AttributeError(f"{name} absent")


class GetattrChild(GetattrBase):
    def __init__(self):
        super().__init__()
        self.a = 10

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return 30


class OnlyA:
    def __init__(self):
        self.a = 5

    def __getattr__(self, name):
        if name != "a":
            raise AttributeError("missing")
        return self.__dict__["a"]


class Mapping:
    def __init__(self, d):
        self._d = d

    def __getitem__(self, key):
        try:
            return self._d[key]
        except KeyError:
            raise KeyError(key) from None

    def __eq__(self, other):
        return type(other) is Mapping and other._d == self._d


def _raises_not_implemented():
    raise NotImplementedError("foo")


def _reraises(x, log):
    try:
        x = torch.cos(x)
        raise NotImplementedError("inner")
    except NotImplementedError:
        log.append("inner handler")
        raise


def _kw_raiser(x, k=None):
    if k:
        raise TypeError("error")
    return x.sin()


def _appends_then_raises(log, x):
    log.append(x.sum().item() > -1e9)
    log.append("before raise")
    raise LookupError("from callee")


# -- handlers ------------------------------------------------------------------------------------------

@probe(_t)
def raise_caught_by_base_class(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError
    except Exception:
        x = torch.sigmoid(x)
    return x


@probe(_t)
def raise_caught_by_tuple(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError
    except (NotImplementedError, AttributeError):
        x = torch.sigmoid(x)
    return x


@probe(_t)
def second_handler_then_finally(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError("Not implemented")
    except AssertionError:
        x = torch.sigmoid(x)
    except NotImplementedError:
        x = torch.cos(x)
    finally:
        x = torch.cos(x)
    return x


@probe(_t)
def raise_in_loop_with_early_return(x):
    for i in range(10):
        if i == 5:
            return x
        try:
            x = torch.sin(x)
            raise NotImplementedError
        except Exception:
            x = torch.sigmoid(x)
    return x


@probe(_t)
def nested_try_in_handler(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError("Not implemented")
    except NotImplementedError:
        x = torch.sigmoid(x)
        try:
            x = torch.cos(x)
            raise AssertionError
        except AssertionError as e:
            x = torch.cos(x)
            ctx = type(e.__context__).__name__
    return x, ctx


@probe(_t)
def else_clause_runs(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        x = torch.cos(x)
    except Exception:
        x = torch.sigmoid(x)
    else:
        x = torch.cos(x)
    return x


@probe(_log)
def reraise_from_callee_handler(x, log):
    try:
        x = torch.cos(x)
        _reraises(x, log)
    except Exception as e:
        log.append((type(e).__name__, e.args))
    return x


@probe(_t)
def exception_inside_no_grad_caught_outside(x):
    x = torch.cos(x)
    try:
        with torch.no_grad():
            x = torch.sin(x)
            raise NotImplementedError("Not implemented")
    except NotImplementedError:
        x = torch.sigmoid(x)
    return x, torch.is_grad_enabled()


@probe(_t)
def raised_by_child_function(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        _raises_not_implemented()
        x = torch.sin(x)
    except Exception as e:
        x = torch.sigmoid(x)
        msg = str(e)
    return x, msg


@probe(_t)
def keyword_call_raises_then_loop(x):
    d = {"a": x}
    try:
        _kw_raiser(x, k=True)
    except Exception:
        y = 0
        for _, b in d.items():
            y += b.sum()
    return y


@probe(_t)
def custom_class_raised_bare(t):
    try:
        raise MyError
    except MyError:
        return t.sin()
    except Exception:
        return t.cos()


@probe(_t)
def custom_class_with_args(t):
    try:
        raise MyError(1, 2.0)
    except MyError as e:
        return t.sin() + e.args[0] + e.args[1], e.args


@probe(_t)
def custom_init_without_super(t):
    try:
        raise ErrorWithInit(2, b=3)
    except ValueError:
        z = 1
    except ErrorWithInit as e:
        z = (e.args, e.a, e.b, str(e))
    return t + 1, z


@probe(_t)
def custom_init_with_super(t):
    try:
        raise ErrorWithSuperInit(2, b=3)
    except ErrorWithSuperInit as e:
        return t + e.total, e.args, str(e), repr(e)


@probe(_t)
def getattr_fallback_chain(x):
    obj = GetattrChild()
    return x * obj.a * obj.b * obj.c


@probe(_t)
def hasattr_with_getattr_raising(x):
    mock = OnlyA()
    if hasattr(mock, "b"):
        return torch.cos(x)
    return torch.sin(x), hasattr(mock, "a"), getattr(mock, "zz", 7)


@probe(lambda: ([1, 2, 3, 4], [10, 11, 12]))
def stop_iteration_in_manual_zip(x, y):
    def zip_longest(*iterables, fillvalue=None):
        iterators = [iter(it) for it in iterables]
        result = []
        while True:
            for it in iterators:
                try:
                    value = next(it)
                except StopIteration:
                    result.append(fillvalue)
                    return result
                result.append(value)

    torch.cos(torch.randn(4))
    return tuple(zip_longest(x, y))


@probe(lambda: (torch.randn(4), {"a": 1}))
def key_error_on_argument_dict(x, d):
    try:
        a = d["b"]
    except KeyError as e:
        a = 2
        d["b"] = len(e.args)
    return x * a


@probe(_t)
def attribute_error_on_object(x):
    mock = OnlyA.__new__(OnlyA)
    mock.__dict__["q"] = 1
    try:
        c = 2
        mock.b
    except AttributeError as e:
        c = 3
        msg = str(e)
    return torch.sin(x) * c, msg


@probe(lambda: (torch.rand(2, 3), Mapping({"a": 10, "b": 20})))
def raise_from_none_in_getitem(x, d):
    def get(obj, key, value=None):
        try:
            return obj[key]
        except KeyError as e:
            return value, e.__suppress_context__, e.__cause__, type(e.__context__).__name__

    x = torch.sin(x + 1)
    return x, get(d, "m"), get(d, "a")


@probe(lambda: (torch.randn(4), {"a": 1}))
def dict_pop_missing_else(x, dt):
    try:
        dt.pop("b")
    except KeyError:
        return torch.sin(x)
    else:
        return torch.cos(x)


@probe(lambda: (torch.randn(4), {"a": 1, "b": 2}))
def dict_pop_present_else(x, dt):
    try:
        dt.pop("b")
    except KeyError:
        return torch.sin(x)
    else:
        return torch.cos(x), dt


@probe(_t)
def key_error_in_loop_over_globals(x):
    for name in G_PARAMS:
        try:
            x = x * G_TABLE[name]
        except KeyError:
            x = x * torch.sin(x)
    return x


@probe(_t)
def generator_exit_not_an_exception(t):
    try:
        raise GeneratorExit
    except Exception:
        return t.sin()
    except BaseException:
        return t.cos()


@probe(_t)
def keyboard_interrupt_class_caught(t):
    try:
        raise KeyboardInterrupt("ki")
    except Exception:
        return t.sin()
    except BaseException as e:
        return t.cos(), e.args


# -- chaining ------------------------------------------------------------------------------------------

@probe(_t)
def raise_in_try_and_finally_chains(x):
    try:
        try:
            te = TypeError(1)
            raise te
        finally:
            ve = ValueError(2)
            raise ve
    except Exception as e:
        exc = e
    return x, exc is ve, exc.__context__ is te, te.__context__


@probe(_t)
def raise_in_except_and_finally_chains(x):
    try:
        try:
            te = TypeError(1)
            raise te
        except Exception:
            ve = ValueError(2)
            raise ve
        finally:
            oe = OSError(3)
            raise oe
    except Exception as e:
        exc = e
    return x, exc is oe, exc.__context__ is ve, exc.__context__.__context__ is te


@probe(_t)
def raise_in_else_and_finally_chains(x):
    try:
        try:
            pass
        except Exception:
            pass
        else:
            ve = ValueError(1)
            raise ve
        finally:
            oe = OSError(2)
            raise oe
    except Exception as e:
        exc = e
    return x, exc is oe, exc.__context__ is ve


@probe(_t)
def raise_earlier_exception_no_cycle(x):
    try:
        try:
            raise AssertionError
        except AssertionError as a_:
            a = a_
            try:
                raise BytesWarning
            except BytesWarning as b_:
                b = b_
                try:
                    raise ConnectionError
                except ConnectionError as c_:
                    c = c_
                    before = (a.__context__, b.__context__ is a, c.__context__ is b)
                    raise a
    except AssertionError as e:
        exc = e
    return x, before, exc is a, a.__context__ is c, c.__context__ is b, b.__context__


@probe(_t)
def context_cycle_set_by_hand(x):
    def cycle():
        try:
            raise ValueError(1)
        except ValueError as ex:
            ex.__context__ = ex
            raise TypeError(2)

    try:
        cycle()
    except Exception as e:
        exc = e
    return x, type(exc).__name__, type(exc.__context__).__name__, exc.__context__.__context__ is exc.__context__


@probe(_t)
def context_cycle_at_head(x):
    try:
        try:
            raise AssertionError()
        except AssertionError as _a:
            a = _a
            try:
                raise BytesWarning()
            except BytesWarning as _b:
                b = _b
                try:
                    raise ConnectionError()
                except ConnectionError as _c:
                    c = _c
                    a.__context__ = c
                    raise c
    except ConnectionError as e:
        exc = e
    return x, exc is c, c.__context__ is b, b.__context__ is a, a.__context__ is c


@probe(_t)
def context_cycle_longer_chain(x):
    try:
        try:
            raise AssertionError
        except AssertionError as _a:
            a = _a
            try:
                raise BytesWarning
            except BytesWarning as _b:
                b = _b
                try:
                    raise ConnectionError
                except ConnectionError as _c:
                    c = _c
                    a.__context__ = c
                    try:
                        raise DeprecationWarning
                    except DeprecationWarning as _d:
                        d = _d
                        e = Exception()
                        raise e
    except Exception as got:
        exc = got
    return (x, exc is e, e.__context__ is d, d.__context__ is c, c.__context__ is b,
            b.__context__ is a, a.__context__ is c)


@probe(_t)
def chaining_descriptors(x):
    try:
        raise Exception
    except Exception as exc:
        e = exc
    first = (e.__context__, e.__cause__, e.__suppress_context__)
    e.__context__ = NameError()
    e.__cause__ = None
    second = (type(e.__context__).__name__, e.__cause__, e.__suppress_context__)
    e.__suppress_context__ = False
    return x, first, second, e.__suppress_context__


@probe(_t)
def fresh_exceptions_have_no_context(x):
    e1 = Exception()
    e2 = TypeError()
    return x, e1.__context__, e1.__cause__, e2.__context__, e2.__suppress_context__, e2.__traceback__


@probe(_t)
def sequential_handlers_leave_no_context(x):
    try:
        raise TypeError
    except TypeError as e:
        exc = e
    try:
        raise ValueError
    except ValueError as e:
        exc2 = e
    return x, exc.__context__, exc2.__context__


@probe(_t)
def raise_from_sets_cause(x):
    try:
        try:
            raise KeyError("inner")
        except KeyError as k:
            raise ValueError("outer") from k
    except ValueError as v:
        return x, type(v.__cause__).__name__, v.__cause__.args, v.__suppress_context__, v.__context__ is v.__cause__


@probe(_t)
def raise_from_none_keeps_context(x):
    try:
        try:
            raise KeyError("inner")
        except KeyError:
            raise ValueError("outer") from None
    except ValueError as v:
        return x, v.__cause__, v.__suppress_context__, type(v.__context__).__name__


@probe(_t)
def raise_from_class_instantiates_cause(x):
    try:
        raise ValueError("v") from IndexError
    except ValueError as v:
        return x, type(v.__cause__).__name__, v.__cause__.args


@probe(_t)
def raise_from_non_exception_is_type_error(x):
    try:
        raise ValueError("v") from 5
    except TypeError as e:
        return x, str(e)


@probe(_t)
def exceptions_in_handler_loop_see_context(x):
    seen = []
    try:
        try:
            1 / 0
        except ZeroDivisionError:
            for exc in (KeyError, IndexError):
                try:
                    raise exc
                except exc as e:
                    seen.append(type(e.__context__).__name__)
            raise
    except ZeroDivisionError as z:
        seen.append(type(z).__name__)
    return x, seen


@probe(_t)
def bare_raise_reraises_outer_after_inner_handled(x):
    def fn():
        try:
            1 / 0
        except ZeroDivisionError:
            try:
                raise ValueError
            except ValueError:
                pass
            raise

    try:
        fn()
    except ZeroDivisionError as e:
        kind = type(e).__name__
    return x, kind, sys.exc_info()[0]


@probe(_t)
def exc_info_inside_and_after_handler(x):
    try:
        raise KeyError("k")
    except KeyError:
        inside = sys.exc_info()
        kind = inside[0].__name__, inside[1].args, inside[2] is not None
        current = sys.exception()
    after = sys.exc_info()
    return x, kind, type(current).__name__, after


@probe(_t)
def exc_info_in_nested_handlers(x):
    seen = []
    try:
        raise KeyError("outer")
    except KeyError:
        try:
            raise ValueError("inner")
        except ValueError:
            seen.append(sys.exc_info()[0].__name__)
        seen.append(sys.exc_info()[0].__name__)
    seen.append(sys.exc_info()[0])
    return x, seen


@probe(_t)
def exc_info_after_reraise_caught(x):
    try:
        try:
            raise ValueError
        except ValueError:
            raise
    except ValueError:
        pass
    return x, sys.exc_info()[0]


@probe(_t)
def exc_info_after_finally_raise(x):
    def fn():
        try:
            raise ValueError
        except ValueError:
            try:
                raise TypeError
            finally:
                pass

    try:
        fn()
    except TypeError as e:
        ctx = type(e.__context__).__name__
    return x, ctx, sys.exc_info()[0]


@probe(_t)
def exc_info_after_gen_throw(x):
    def cm():
        try:
            yield 1
        except ValueError:
            try:
                raise TypeError
            finally:
                pass

    try:
        gen = cm()
        next(gen)
        gen.throw(ValueError)
    except TypeError as e:
        ctx = type(e.__context__).__name__
    return x, ctx, sys.exc_info()[0]


@probe(_t)
def exception_object_with_context_returned(t):
    v = ValueError(1, 2, 3)
    v.__context__ = TypeError()
    return t.sin(), type(v).__name__, v.args, type(v.__context__).__name__


@probe(_t)
def exception_object_returned_directly(t):
    v = KeyError("a", 2)
    return t + 1, v.args, str(v), repr(v)


# -- control flow through finally ------------------------------------------------------------------

@probe(_log)
def return_in_finally_swallows(x, log):
    def f():
        try:
            log.append("try")
            raise ValueError("lost")
        finally:
            log.append("finally")
            return 1
    return x + f()


@probe(_log)
def return_in_try_then_finally_effect(x, log):
    def f(v):
        try:
            log.append("try")
            return v * 2
        finally:
            log.append("finally")
    return f(x), log[:]


@probe(_log)
def break_in_finally_swallows(x, log):
    for i in range(3):
        try:
            log.append(i)
            raise ValueError(i)
        finally:
            break
    return x + len(log)


@probe(_log)
def continue_in_finally_swallows(x, log):
    for i in range(3):
        try:
            log.append(i)
            if i == 1:
                raise ValueError(i)
        finally:
            continue
    return x + len(log)


@probe(_t)
def handler_name_unbound_after_except(x):
    try:
        raise ValueError("v")
    except ValueError as e:
        y = x + len(e.args)
    return y, e  # noqa: F821


@probe(_t)
def handler_name_deleted_even_if_prebound(x):
    e = 5
    try:
        raise ValueError("v")
    except ValueError as e:  # noqa: F841
        pass
    try:
        return x, e
    except NameError as n:
        return x, type(n).__name__


@probe(_log)
def callee_effects_before_raise_kept(x, log):
    try:
        _appends_then_raises(log, x)
    except LookupError as e:
        log.append(str(e))
    return x * 2


# -- raising odd things ----------------------------------------------------------------------------

@probe(_t)
def raise_non_exception_is_type_error(x):
    try:
        raise 5
    except TypeError as e:
        return x, str(e)


@probe(_t)
def bare_raise_without_active_exception(x):
    try:
        raise
    except RuntimeError as e:
        return x, str(e)


@probe(_t)
def except_clause_with_non_class(x):
    try:
        try:
            raise ValueError
        except 5:
            return x, "matched"
    except TypeError as e:
        return x, str(e)


@probe(_t)
def except_clause_tuple_computed(x):
    kinds = tuple([KeyError, IndexError][i] for i in range(2))
    try:
        [][int(x.numel())]
    except kinds as e:
        return x, type(e).__name__, str(e)


@probe(_t)
def raise_class_has_empty_args(x):
    try:
        raise ValueError
    except ValueError as e:
        return x, e.args, str(e)


@probe(_t)
def uncaught_custom_exception(x):
    y = x + 1
    raise MyError("uncaught", 3)
    return y


@probe(_t)
def uncaught_after_break(x):
    y = x + 1
    GB()
    raise KeyError("after break")
    return y


@probe(_t)
def assert_message_caught(x):
    try:
        assert x.shape[0] == 3, ("shape", x.shape[0])
    except AssertionError as e:
        return x, e.args


@probe(_t)
def zero_division_from_python(x):
    n = 0
    try:
        return x / (1 // n)
    except ZeroDivisionError as e:
        return x, str(e)


@probe(_t)
def oserror_attributes(x):
    try:
        raise OSError(2, "No such file")
    except OSError as e:
        return x, e.errno, e.strerror, e.args, type(e).__name__


@probe(_t)
def stop_iteration_value(x):
    e = StopIteration(5)
    f = StopIteration()
    return x, e.value, f.value, e.args


@probe(_t)
def key_error_str_forms(x):
    return x, str(KeyError("a")), str(KeyError()), str(KeyError("a", "b")), repr(KeyError("a"))


@probe(_t)
def exception_args_assigned(x):
    e = ValueError(1)
    e.args = (2, 3)
    return x, e.args, str(e)


@probe(_t)
def exception_add_note(x):
    try:
        e = ValueError("v")
        e.add_note("first")
        e.add_note("second")
        raise e
    except ValueError as got:
        return x, got.__notes__


@probe(_t)
def exception_hierarchy_checks(x):
    return (x, issubclass(KeyError, LookupError), isinstance(KeyError(), Exception),
            issubclass(GeneratorExit, Exception), issubclass(StopIteration, Exception),
            issubclass(MyError, (ValueError, Exception)))


@probe(_t)
def except_star_group(x):
    seen = []
    try:
        raise ExceptionGroup("g", [ValueError(1), KeyError(2)])
    except* ValueError as eg:
        seen.append(("v", [e.args for e in eg.exceptions]))
    except* KeyError as eg:
        seen.append(("k", [e.args for e in eg.exceptions]))
    return x, seen


@probe(_t)
def traceback_frames_of_caught(x):
    def inner():
        raise ValueError("deep")

    try:
        inner()
    except ValueError as e:
        frames = traceback.extract_tb(e.__traceback__)
        return x, [f.name for f in frames], [f.line for f in frames]


# -- exceptions from tensor work -----------------------------------------------------------------------

@probe(_log)
def index_error_from_tensor_caught(x, log):
    log.append("before")
    try:
        y = x[10]
    except IndexError as e:
        y = x * 0
        log.append(type(e).__name__)
    return y


@probe(_log)
def view_error_after_effects(x, log):
    log.append(1)
    y = x * 2
    try:
        z = y.view(3)
    except RuntimeError:
        z = y.sum()
        log.append(2)
    return z


@probe(_log)
def tensor_error_uncaught_after_effects(x, log):
    log.append("side effect")
    y = x.sin()
    return y.view(7)


@probe(_log)
def graph_break_inside_try_then_raise(x, log):
    try:
        y = x + 1
        print(end="")
        log.append("after print")
        raise ValueError("v")
    except ValueError:
        y = y * 2
    return y


@probe(_log)
def graph_break_inside_except_body(x, log):
    try:
        raise KeyError("k")
    except KeyError as e:
        y = x + 1
        GB()
        log.append(e.args)
    return y


@probe(_log)
def graph_break_inside_finally(x, log):
    try:
        y = x + 1
    finally:
        GB()
        log.append("finally")
    return y * 2


@probe(_log)
def graph_break_in_try_finally_on_exception(x, log):
    try:
        try:
            GB()
            raise IndexError("i")
        finally:
            log.append("finally")
    except IndexError:
        log.append("caught")
    return x


@probe(_t)
def next_on_empty_iterator(x):
    it = iter([])
    try:
        next(it)
    except StopIteration as e:
        return x, e.args, e.value


@probe(_t)
def comprehension_raises_inside_try(x):
    try:
        vals = [1 / (i - 2) for i in range(4)]
    except ZeroDivisionError:
        vals = None
    return x, vals


@probe(_t)
def type_error_message_from_builtin(x):
    try:
        len(5)
    except TypeError as e:
        return x, str(e)


@probe(_t)
def unhashable_key_type_error(x):
    try:
        d = {[1, 2, 3]: x * 2}
        return d
    except TypeError as e:
        return x, str(e)


@probe(_t)
def exception_in_generator_expression_sum(x):
    try:
        return sum(int(s) for s in ["1", "2", "x"]) + x
    except ValueError as e:
        return x, str(e)
