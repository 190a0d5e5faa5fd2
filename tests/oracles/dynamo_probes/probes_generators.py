"""Generators: next/send/throw/close, yield from (delegation of send, throw and close, return values),
PEP 479, generators living past the frame (returned or stored, then drained by the comparison), generators
closed when the frame that holds them dies, graph breaks inside and around generators, and consumers
(zip, list, dict, `in`, itertools)."""
import collections
import itertools
import types

import torch

from . import probe
from ...helpers import same

GB = torch._dynamo.graph_break


class Box:
    """An argument the probe stores a generator (or anything iterable) into; comparing two boxes drains
    both and compares the items (so what the generator still yields after the frame is checked)."""
    def __init__(self):
        self.g = None
        self._items = None

    def items(self):
        if self._items is None:
            try:
                self._items = ("ok", list(self.g)) if self.g is not None else ("ok", None)
            except Exception as e:  # noqa: BLE001 - the exception is what is compared
                self._items = ("raise", type(e), str(e))
        return self._items

    def __eq__(self, other):
        return type(other) is Box and same(self.items(), other.items(), exact=False)


def _t():
    return (torch.randn(2),)


def _box():
    return (torch.randn(2), Box())


def _box_log():
    return (torch.randn(2), Box(), [])


def _log():
    return (torch.randn(2), [])


class Counter:
    def __init__(self):
        self.x = 0

    def incr(self):
        self.x += 1

    def __eq__(self, other):
        return type(other) is Counter and other.x == self.x


class DelegatingIterator:
    """Not a generator, but with send/throw/close of its own."""
    def __init__(self, log):
        self.log = log

    def __iter__(self):
        return self

    def __next__(self):
        return 1

    def send(self, value):
        return 1

    def throw(self, typ, val=None, tb=None):
        self.log.append("iter throw")
        return 2

    def close(self):
        self.log.append("iter close")


class Tree:
    def __init__(self, label, left=None, right=None):
        self.label = label
        self.left = left
        self.right = right

    def __iter__(self):
        return inorder(self)


def tree(lst):
    n = len(lst)
    if n == 0:
        return []
    i = n // 2
    return Tree(lst[i], tree(lst[:i]), tree(lst[i + 1:]))


def inorder(t):
    if t:
        for x in inorder(t.left):
            yield x
        yield t.label
        for x in inorder(t.right):
            yield x


def count_up():
    i = 0
    while True:
        yield i
        i += 1


def three():
    yield 1
    yield 2
    yield 3


def sin_cos_tan(t):
    yield t.sin()
    yield t.cos()
    yield t.tan()


def plus_123(t):
    yield t + 1
    yield t + 2
    yield t + 3


def sub_12(t):
    yield t + 1
    yield t + 2


def main_sub(t):
    yield from sub_12(t)
    yield t + 3


# -- basic iteration ------------------------------------------------------------------------------------

@probe(_t)
def next_three_times(t):
    gen = three()
    t = t + next(gen)
    t = t + next(gen)
    t = t + next(gen)
    return t


@probe(_t)
def infinite_generator_next(t):
    gen = count_up()
    return t + next(gen) + next(gen) + next(gen)


@probe(_t)
def zip_with_infinite_tensor_generator(t):
    def whoo(v):
        i = 0
        while True:
            yield v + i
            i += 1
    return list(zip(range(3), whoo(t)))


@probe(_t)
def zip_with_infinite_constant_generator(t):
    def whoo(i):
        while True:
            yield i
    return list(zip(range(3), whoo(1))), t.sin()


@probe(_t)
def for_over_infinite_with_break(t):
    s = 0
    for i in count_up():
        if i > 5:
            break
        s += i
    return t + s


@probe(_t)
def chain_of_lists(t):
    return list(itertools.chain([t + 1, t + 2], [t + 3, t + 4]))


@probe(_t)
def subgenerator_to_list(t):
    return list(main_sub(t))


@probe(_t)
def list_of_zip_with_generator(t):
    return list(zip(range(3), plus_123(t)))


@probe(_t)
def containers_from_pair_generator(t):
    def whoo(v):
        yield 1, v + 1
        yield 2, v + 2
        yield 3, v + 3
    return list(whoo(t)), tuple(whoo(t)), dict(whoo(t)), collections.OrderedDict(whoo(t))


@probe(_t)
def list_extend_with_genexpr_reading_list(x):
    y = [1]
    y.extend(y[-1] + z for z in range(3))
    return x + 1, y


@probe(_t)
def deque_extendleft_with_genexpr(x):
    y = collections.deque([1])
    y.extendleft(y[0] + z for z in range(3))
    return x + 1, list(y)


@probe(_t)
def contains_consumes_generator(x):
    g = three()
    a = 1 in g
    b = 2 in g
    rest = list(g)
    return x, a, b, rest, 7 in three()


@probe(_t)
def contains_side_effects_order(x):
    n = [0]

    def whoo():
        n[0] = 1
        yield 1
        n[0] = 2
        yield 2

    g = whoo()
    seen = [1 in g, n[0]]
    seen += [2 in g, n[0]]
    try:
        next(g)
    except StopIteration:
        seen.append("stop")
    return x, seen


@probe(lambda: (torch.randn(2), 1))
def genexpr_over_non_iterable(x, s):
    try:
        g = (v for v in s)
        return x, list(g)
    except TypeError as e:
        return x, str(e)


@probe(_t)
def product_with_generator(t):
    def whoo():
        for perm in itertools.product(itertools.permutations((0, 1, 2)), repeat=1):
            yield sum(perm[0])

    s = 0
    for b, p in itertools.product(whoo(), itertools.permutations((4, 5))):
        s += b
    return t + s


@probe(_t)
def sum_and_max_of_generators(t):
    return t + sum(i * i for i in range(5)), max((i % 3 for i in range(7)), default=-1), any(i > 3 for i in range(3))


@probe(_t)
def enumerate_generator_tensors(t):
    out = []
    for i, v in enumerate(sin_cos_tan(t)):
        out.append(v * i)
    return out


@probe(_t)
def recursive_tree_generator(x):
    t = tree("ABCDEFGHIJ")
    return x, "".join(t)


@probe(_t)
def generator_is_generator_type(x):
    def f():
        v = yield  # noqa: F841
    def g():
        list(i for i in [(yield 26)])
    return x, isinstance(f(), types.GeneratorType), isinstance(g(), types.GeneratorType)


@probe(_t)
def bare_yield_gives_none(x):
    def f():
        yield
    return x, list(f())


# -- graph breaks ---------------------------------------------------------------------------------------

@probe(_t)
def break_inside_generator_body(t):
    def whoo():
        yield 1
        GB()
        yield 2

    gen = whoo()
    s = next(gen)
    s += next(gen)
    return t + s


def _call_whoo(x):
    def whoo(v):
        yield v.sin()
        GB()
        yield v.cos()
    gen = whoo(x)
    a = next(gen)
    b = next(gen)
    return a, b


@probe(_t)
def break_in_generator_of_callee(t):
    sin, cos = _call_whoo(t)
    return sin + cos


@probe(_t)
def break_between_nexts(t):
    gen = sub_12(t)
    x = next(gen)
    GB()
    y = next(gen)
    return x + y


@probe(_t)
def break_then_drain_started_generator(t):
    gen = sin_cos_tan(t)
    next(gen)
    print(end="")
    return t.sin(), list(gen)


@probe(_t)
def break_in_generator_and_frame(t):
    def whoo():
        yield 1
        GB()
        yield 2

    gen = whoo()
    s = next(gen)
    GB()
    s += next(gen)
    return t + s


@probe(_log)
def break_in_generator_loop_with_zip(t, log):
    def whoo(v):
        for j in range(5):
            log.append(j)
            yield v + j
            GB()
    return list(zip(range(3), whoo(t)))


@probe(_box)
def generator_made_before_break_stored(t, box):
    gen = plus_123(t)
    GB()
    next(gen)
    box.g = gen
    return t.sin()


# -- generators outliving the frame ---------------------------------------------------------------------

@probe(_box)
def store_unstarted_generator(t, box):
    box.g = plus_123(t)
    return t + 1


@probe(_box)
def store_started_generator(t, box):
    gen = plus_123(t)
    next(gen)
    box.g = gen
    return t + 1


@probe(_box)
def store_exhausted_generator(t, box):
    def one(v):
        yield v + 1
    gen = one(t)
    next(gen)
    box.g = gen
    return t


@probe(_box)
def store_started_subgenerator(t, box):
    gen = main_sub(t)
    next(gen)
    box.g = gen
    return t


@probe(_box)
def store_generator_with_local_state(t, box):
    def whoo(v):
        x = 0
        yield v.sin() + x
        x += 1
        yield v.cos() + x
        x += 1
        yield v.tan() + x

    gen = whoo(t)
    next(gen)
    box.g = gen
    return t.sin()


@probe(lambda: (torch.randn(2), Box(), {1: 0}))
def store_generator_mutating_dict_later(t, box, d):
    def whoo(v, dd):
        dd[2] = v
        yield v.sin()
        yield v.cos()
        dd[3] = v + 1
        yield v.tan()

    gen = whoo(t, d)
    next(gen)
    box.g = whoo(t, d)
    return t.sin(), len(d)


@probe(lambda: (torch.randn(2), Box(), Counter()))
def store_generator_mutating_object(t, box, c):
    def whoo(v, cc):
        cc.incr()
        yield v.sin()
        yield v.cos()
        cc.incr()
        yield v.tan()

    gen = whoo(t, c)
    next(gen)
    box.g = gen
    return t.sin(), c.x


@probe(_box_log)
def store_generator_with_side_effects(t, box, log):
    def whoo(v):
        for j in range(5):
            log.append(j)
            yield v + j

    box.g = whoo(t)
    return t.sin()


@probe(_box_log)
def store_zip_over_generator(t, box, log):
    def whoo(v):
        log.append("started")
        yield v + 1
        yield v + 2
    box.g = zip(range(3), whoo(t))
    return t.sin()


@probe(_box_log)
def store_generator_after_break_and_next(t, box, log):
    def whoo(v):
        for j in range(5):
            log.append(j)
            yield v + j

    gen = whoo(t)
    GB()
    next(gen)
    box.g = gen
    return t.sin()


# -- send ----------------------------------------------------------------------------------------------

@probe(_t)
def send_after_priming(t):
    def double():
        x = yield
        yield x * 2
    gen = double()
    next(gen)
    return gen.send(t)


@probe(_t)
def send_past_end_raises_stop(t):
    def double():
        x = yield
        yield x * 2
    gen = double()
    next(gen)
    a = gen.send(t)
    b = gen.send(t)
    return a + b


@probe(_t)
def send_non_none_to_new_generator(t):
    try:
        three().send("foo")
    except TypeError as e:
        return t, str(e)


@probe(_t)
def send_records_values(t):
    sent = []

    def f():
        sent.append((yield 1))
        yield 2

    g = f()
    return t, next(g), g.send(42), sent


@probe(_t)
def send_accumulating_coroutine(t):
    seq = []

    def coroutine():
        count = 0
        while count < 200:
            count += yield
            seq.append(count)

    c = coroutine()
    next(c)
    c.send(10)
    c.send(10)
    c.send(10)
    return t + len(seq), seq


@probe(_t)
def send_to_subscript_targets(t):
    def f(d):
        d[(yield "a")] = d[(yield "b")] = 27

    data = [1, 2]
    g = f(data)
    out = [g.send(None), list(data), g.send(0), list(data)]
    try:
        g.send(1)
    except StopIteration:
        out.append("stop")
    return t, out, data


@probe(_t)
def yield_from_return_value(t):
    def subgen(v):
        yield v.sin()
        return v.cos()

    def outer(v):
        r = yield from subgen(v)
        yield r

    return list(outer(t))


@probe(_t)
def yield_from_returns_none(t):
    def subgen(v):
        yield v.sin()

    def outer(v):
        r = yield from subgen(v)
        yield r

    return list(outer(t))


@probe(_t)
def send_through_yield_from(t):
    def subgen():
        x = yield 10
        y = yield x + 1
        return y * 100

    def outer():
        r = yield from subgen()
        yield r

    gen = outer()
    return [gen.send(None), gen.send(7), gen.send(3), t.sin()]


@probe(_t)
def nested_yield_from_return_values(t):
    def leaf(v):
        yield v.sin()
        return v.cos()

    def mid(v):
        r = yield from leaf(v)
        return r + 1

    def top(v):
        r = yield from mid(v)
        yield r

    return list(top(t))


@probe(_t)
def yield_from_list_returns_none(t):
    def outer(v):
        r = yield from [v.sin(), v.cos()]
        yield r
    return list(outer(t))


@probe(_t)
def send_into_subgenerator(t):
    got = []

    def subgen():
        x = yield 1
        got.append(x)
        yield 2

    def outer():
        yield from subgen()

    g = outer()
    return t, next(g), g.send(42), got


# -- PEP 479 ------------------------------------------------------------------------------------------

@probe(_t)
def stop_iteration_raised_in_body(t):
    def whoo():
        yield t + 1
        raise StopIteration("boom")

    g = whoo()
    next(g)
    try:
        next(g)
    except RuntimeError as e:
        return t + 1.0, str(e), type(e.__cause__).__name__
    except StopIteration:
        return t + 2.0
    return t


@probe(_t)
def stop_iteration_from_inner_next(t):
    def inner():
        yield t + 1

    def whoo():
        it = inner()
        while True:
            yield next(it)

    g = whoo()
    next(g)
    try:
        next(g)
    except RuntimeError:
        return t + 1.0
    except StopIteration:
        return t + 2.0
    return t


@probe(_t)
def stop_iteration_before_first_yield(t):
    def gen():
        raise StopIteration
        yield

    try:
        next(gen())
    except RuntimeError as e:
        return t, str(e)


@probe(_t)
def bare_except_catches_raised_stop(t):
    def f1():
        try:
            return
        except:  # noqa: E722
            yield 1

    def f2():
        try:
            raise StopIteration
        except:  # noqa: E722
            yield 42

    return t, list(f1()), list(f2())


@probe(_t)
def exception_propagates_then_finished(t):
    def f():
        return 1 // 0

    def g():
        yield f()
        yield 42

    k = g()
    out = []
    for _ in range(2):
        try:
            out.append(next(k))
        except (ZeroDivisionError, StopIteration) as e:
            out.append(type(e).__name__)
    return t, out


@probe(_t)
def try_except_finally_yield_sequence(t):
    def f():
        try:
            yield 1
            try:
                yield 2
                1 // 0
                yield 3
            except ZeroDivisionError:
                yield 4
                yield 5
                raise
            except:  # noqa: E722
                yield 6
            yield 7
        except:  # noqa: E722
            yield 8
        yield 9
        try:
            x = 12  # noqa: F841
        finally:
            yield 10
        yield 11

    return t, list(f())


@probe(_t)
def generator_already_executing(t):
    def g():
        i = next(me)
        yield i

    me = g()
    try:
        next(me)
    except ValueError as e:
        return t, str(e)


# -- close --------------------------------------------------------------------------------------------

@probe(_t)
def close_after_first(t):
    gen = sin_cos_tan(t)
    i = next(gen)
    r = gen.close()
    return i, r


@probe(_t)
def close_delegating_closes_subgenerator(t):
    z = [0]

    def subgen(v):
        z[0] = 1
        yield v.sin()
        z[0] = 3
        yield v.cos()

    def whoo(v):
        yield from subgen(v)
        yield v.tan()

    gen = whoo(t)
    i = next(gen)
    gen.close()
    return i, z


@probe(_log)
def close_runs_finally_with_current_state(t, log):
    z = [0]

    def whoo(v):
        try:
            log.append(1)
            yield v.sin()
            log.append(2)
            yield v.cos()
        finally:
            log.append(z[0])

    gen = whoo(t)
    i = next(gen)
    z[0] = -123
    gen.close()
    log.append(len(log))
    return i


@probe(_t)
def close_generator_returns_in_handler(t):
    z = [0]

    def whoo(v):
        try:
            z[0] += 1
            yield v.sin()
            yield v.cos()
        except GeneratorExit:
            z[0] += 10
            return v.tan()
        finally:
            z[0] += 100

    gen = whoo(t)
    i = next(gen)
    y = gen.close()
    return i, y, z


@probe(_t)
def close_generator_yields_in_handler(t):
    z = [0]

    def whoo(v):
        try:
            yield v.sin()
            yield v.cos()
        except GeneratorExit:
            yield v.tan()
        finally:
            z[0] = 1

    gen = whoo(t)
    i = next(gen)
    try:
        gen.close()
    except RuntimeError as e:
        return i, str(e), z
    return i


@probe(_log)
def close_reraises_generator_exit(t, log):
    z = [0]

    def whoo(v):
        try:
            log.append(1)
            yield v.sin()
            yield v.cos()
        except GeneratorExit:
            log.append(z[0])
            z[0] = -1
            raise
        finally:
            log.append(z[0])

    gen = whoo(t)
    i = next(gen)
    z[0] = -123
    gen.close()
    log.append(456)
    return i


@probe(_t)
def close_raises_other_exception(t):
    def whoo(v):
        try:
            yield v.sin()
            yield v.cos()
        except GeneratorExit as e:
            raise AttributeError("attr") from e
        finally:
            pass

    gen = whoo(t)
    i = next(gen)
    try:
        gen.close()
    except AttributeError as e:
        return i, e.args, type(e.__cause__).__name__
    return i


@probe(_log)
def close_before_reaching_try(t, log):
    z = [0]

    def subgen(v):
        yield v.sin()
        yield v.cos()

    def whoo(v):
        log.append(10)
        yield from subgen(v)
        log.append(20)
        try:
            log.append(1)
            z[0] = 4
            yield v.tan()
        finally:
            log.append(z[0])

    gen = whoo(t)
    i = next(gen)
    z[0] = -123
    gen.close()
    log.append(456)
    return i, t.sin(), z


@probe(_t)
def close_twice_finally_once(t):
    z = [0]

    def whoo(v):
        try:
            z[0] += 1
            yield v.sin()
            yield v.cos()
        finally:
            z[0] += 1

    gen = whoo(t)
    i = next(gen)
    gen.close()
    return i, gen.close(), z


@probe(_t)
def next_after_close(t):
    gen = sin_cos_tan(t)
    gen.close()
    a = next(gen)
    return [t.sin(), a]


@probe(_t)
def close_after_generator_raised(t):
    def whoo(v):
        raise ValueError("foo")
        yield v.cos()

    gen = whoo(t)
    try:
        next(gen)
    except ValueError:
        pass
    return [t.sin(), gen.close()]


@probe(_t)
def close_unstarted_runs_nothing(t):
    log = []

    def f():
        try:
            log.append("start")
            yield
        finally:
            log.append("finally")

    f().close()
    g = f()
    next(g)
    g.close()
    return t, log


@probe(_t)
def close_not_caught_by_except_exception(t):
    log = []

    def f():
        try:
            yield
        except Exception:
            log.append("except")
        finally:
            log.append("finally")

    g = f()
    next(g)
    g.close()
    return t, log


@probe(_t)
def close_error_propagates(t):
    def f():
        try:
            yield
        except GeneratorExit:
            raise TypeError("fie!") from None

    g = f()
    next(g)
    try:
        g.close()
    except TypeError as e:
        return t, str(e), e.__suppress_context__


@probe(_t)
def close_catches_generator_exit_once(t):
    log = []

    def f():
        try:
            yield
        except GeneratorExit:
            log.append("exiting")

    g = f()
    next(g)
    g.close()
    g.close()
    return t, log


# -- generators dying with the frame -----------------------------------------------------------------------

@probe(_log)
def open_generator_closed_at_return(t, log):
    def whoo(v):
        try:
            yield v.sin()
            yield v.cos()
        finally:
            log.append("finally")

    gen = whoo(t)
    a = next(gen)
    log.append("returning")
    return a


@probe(_log)
def open_generator_closed_returning_input(t, log):
    def whoo(v):
        try:
            yield v
            yield v
        finally:
            log.append("finally")

    gen = whoo(t)
    next(gen)
    return t


@probe(_log)
def open_generator_dropped_by_rebinding(t, log):
    def whoo(v, tag):
        try:
            yield v + tag
        finally:
            log.append(tag)

    gen = whoo(t, 1)
    a = next(gen)
    gen = whoo(t, 2)
    log.append("rebound")
    b = next(gen)
    del gen
    log.append("deleted")
    return a + b


@probe(_log)
def open_generator_finally_touches_new_object(t, log):
    class C:
        pass

    def gen():
        obj = C()
        obj.data = log
        try:
            yield t.sin()
        finally:
            obj.data.append(1)

    g = gen()
    next(g)
    return t.sin()


@probe(_log)
def open_generator_with_break_alive(t, log):
    def whoo(v):
        try:
            yield v.sin()
            yield v.cos()
        finally:
            log.append("finally")

    gen = whoo(t)
    a = next(gen)
    GB()
    b = next(gen)
    return a + b


# -- throw --------------------------------------------------------------------------------------------

@probe(_t)
def throw_caught_yields_next(t):
    def whoo(v):
        try:
            yield v.sin()
        except RuntimeError:
            yield v.cos()

    gen = whoo(t)
    a = next(gen)
    b = gen.throw(RuntimeError)
    return a + b


@probe(_t)
def throw_with_nested_finally(x):
    z = [0]

    def whoo():
        z[0] = 0
        try:
            try:
                yield 1
            except ValueError:
                yield 2
            finally:
                z[0] += 2
        except ValueError:
            z[0] += 33
            yield 4
        finally:
            z[0] += 1
        z[0] += 10

    gen = whoo()
    next(gen)
    r = gen.throw(ValueError)
    return x.sin(), r, z


@probe(_t)
def throw_without_finally_counts(t):
    z = [0]

    def whoo(v):
        try:
            z[0] += 1
            yield v.sin()
            z[0] += 10
        except RuntimeError:
            z[0] += 100
            yield v.cos()
            z[0] += 1_000
        z[0] += 10_000

    gen = whoo(t)
    a = next(gen)
    b = gen.throw(RuntimeError)
    return a + b, z


@probe(_t)
def throw_caught_no_more_yields(t):
    z = [0]

    def whoo(v):
        try:
            z[0] += 1
            yield v.sin()
        except ValueError:
            z[0] += 10
        finally:
            z[0] += 100

    gen = whoo(t)
    a = next(gen)
    try:
        gen.throw(ValueError)
    except StopIteration as e:
        return a, e.args, z
    return None


@probe(_t)
def throw_not_caught_propagates(t):
    def whoo(v):
        try:
            yield v.sin()
        except ValueError:
            yield v.cos()
        finally:
            pass

    gen = whoo(t)
    a = next(gen)
    b = gen.throw(RuntimeError)
    return a + b


@probe(_t)
def throw_converted_from(t):
    def whoo(v):
        try:
            yield v.sin()
        except ValueError as e:
            raise RuntimeError("conv") from e

    gen = whoo(t)
    next(gen)
    try:
        gen.throw(ValueError("orig"))
    except RuntimeError as e:
        return t, e.args, e.__cause__.args


@probe(_log)
def throw_then_finally_yields_at_close(t, log):
    def whoo(v):
        try:
            yield v.sin()
        except RuntimeError:
            log.append("except")
            yield v.cos()
        finally:
            log.append("finally")
            yield v.tan()

    gen = whoo(t)
    a = next(gen)
    b = gen.throw(RuntimeError)
    return a + b


@probe(_t)
def throw_picks_matching_handler(t):
    z = [0]

    def whoo(v):
        try:
            z[0] += 1
            yield v.sin()
        except ValueError:
            z[0] += 10
            yield v.cos()
        except RuntimeError:
            z[0] += 100
            yield v.tan()
        finally:
            z[0] += 1000
        z[0] += 10_000

    gen = whoo(t)
    a = next(gen)
    b = gen.throw(RuntimeError)
    return a + b, z


@probe(_t)
def throw_context_after_send(t):
    def f():
        yield

    gen = f()
    gen.send(None)
    try:
        gen.throw(ValueError)
    except ValueError as e:
        z = (1, e.__context__)
    return t.sin(), z


@probe(_t)
def finally_return_overrides_except_return(t):
    def whoo():
        try:
            yield 1
        except ValueError:
            return 2
        finally:
            return 3

    gen = whoo()
    next(gen)
    try:
        gen.throw(ValueError)
    except StopIteration as e:
        return t.sin(), e.args, e.value


@probe(_t)
def finally_bare_return_gives_no_args(t):
    def whoo():
        try:
            yield 1
        except ValueError:
            return 2
        finally:
            return

    gen = whoo()
    next(gen)
    try:
        gen.throw(ValueError)
    except StopIteration as e:
        return t.sin(), e.args, e.value


@probe(_t)
def throw_caught_in_loop_records_message(t):
    caught = []

    def f():
        while True:
            try:
                yield
            except ValueError as v:
                caught.append(str(v))

    g = f()
    next(g)
    g.throw(ValueError)
    g.throw(ValueError("xyz"))
    return t, caught


@probe(_t)
def throw_non_exception_type_error(t):
    def f():
        while True:
            try:
                yield
            except ValueError:
                pass

    g = f()
    next(g)
    out = []
    for bad in ("abc", 0, list):
        try:
            g.throw(bad)
        except TypeError as e:
            out.append(str(e))
    return t, out


@probe(_t)
def throw_terminates_then_send_stops(t):
    def f():
        while True:
            try:
                yield
            except ValueError:
                pass

    g = f()
    next(g)
    out = []
    try:
        g.throw(TypeError)
    except TypeError:
        out.append("type")
    try:
        g.send(2)
    except StopIteration:
        out.append("stop")
    return t, out


@probe(_t)
def throw_into_unstarted_generator(t):
    try:
        three().throw(ValueError(7))
    except ValueError as e:
        return t, e.args


@probe(_t)
def throw_stop_iteration_into_delegation(t):
    def nested():
        try:
            yield 1
            yield 2
        except StopIteration:
            return 123

    def outer():
        r = yield from nested()
        yield r
        yield 3

    gen = outer()
    next(gen)
    i = 0
    try:
        i = gen.throw(StopIteration("stop"))
    except RuntimeError:
        pass
    return i, t.sin()


@probe(_t)
def throw_empty_stop_iteration_into_delegation(t):
    def nested():
        yield 1
        yield 2

    def outer():
        yield from nested()
        yield 3

    gen = outer()
    next(gen)
    gen.throw(StopIteration())
    return t.sin()


@probe(_log)
def throw_into_subgen_caught(t, log):
    def subgen():
        try:
            yield 1
        except ValueError:
            log.append("subgen caught")
            yield 2

    def outer():
        yield from subgen()

    g = outer()
    return t, next(g), g.throw(ValueError)


@probe(_log)
def throw_into_subgen_uncaught_runs_finally(t, log):
    def subgen():
        try:
            yield 1
        finally:
            log.append("subgen finally")

    def outer():
        try:
            yield from subgen()
        finally:
            log.append("outer finally")

    g = outer()
    next(g)
    try:
        g.throw(ValueError)
    except ValueError:
        log.append("raised")
    return t


@probe(_log)
def throw_generator_exit_into_subgen(t, log):
    def subgen():
        try:
            yield 1
        finally:
            log.append("subgen finally")

    def outer():
        yield from subgen()

    g = outer()
    next(g)
    try:
        g.throw(GeneratorExit)
    except GeneratorExit:
        log.append("exit raised")
    return t


@probe(_log)
def throw_through_two_delegations(t, log):
    def leaf():
        try:
            yield 1
        except ValueError:
            log.append("leaf caught")
            yield 2

    def mid():
        yield from leaf()

    def outer():
        yield from mid()

    g = outer()
    next(g)
    return t, g.throw(ValueError)


@probe(_log)
def close_runs_subgen_finally(t, log):
    def subgen():
        try:
            yield 1
            yield 2
        finally:
            log.append("subgen finally")

    def outer():
        yield from subgen()

    g = outer()
    next(g)
    g.close()
    return t


@probe(_log)
def close_subgen_ignores_exit(t, log):
    def subgen():
        try:
            yield 1
        except GeneratorExit:
            log.append("ignored")
            yield 2

    def outer():
        yield from subgen()

    g = outer()
    next(g)
    try:
        g.close()
    except RuntimeError as e:
        return t, str(e)


@probe(_log)
def throw_into_iterator_with_throw(t, log):
    def outer():
        yield from DelegatingIterator(log)

    g = outer()
    return t, next(g), g.throw(ValueError)


@probe(_log)
def close_into_iterator_with_close(t, log):
    def outer():
        yield from DelegatingIterator(log)

    g = outer()
    next(g)
    g.close()
    return t


@probe(_t)
def throw_into_plain_iterator_delegation(t):
    def outer():
        yield from iter([1, 2, 3])

    g = outer()
    next(g)
    try:
        g.throw(ValueError("v"))
    except ValueError as e:
        return t, e.args, list(g)
