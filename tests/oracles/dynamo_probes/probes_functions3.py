"""Probes restating behaviours torch's dynamo function tests rely on (part 3), at their tricky edges:
which of equal objects a builtin keeps, effects done before an exception, the order in which keys and
predicates run, values of `and`/`or`, torch.Size arithmetic types, tensor comparisons with non-tensors."""
import collections
import functools
import math

import torch

from . import probe


def _t():
    return (torch.randn(4),)


def _t2d():
    return (torch.randn(3, 4),)


# ---------------------------------------------------------------- which of equal objects is kept

@probe(_t)
def dict_keeps_first_equal_key(x):
    d = {1: "a"}
    d[1.0] = "b"
    d[True] = "c"
    e = {**{1: "a"}, **{1.0: "b"}}
    f = dict.fromkeys([1.0, 1, True])
    g = {k: 0 for k in (True, 1, 1.0)}
    return x + 1, [(repr(k), v) for k, v in d.items()], repr(list(e)), repr(list(f)), repr(list(g))


@probe(_t)
def set_keeps_first_equal_item(x):
    s = {1.0, 1, True}
    t = set([True, 1.0])
    t.add(1)
    u = {1} | {1.0}
    return x + 1, repr(s), repr(t), repr(u), repr(frozenset([1.0, 1]))


@probe(_t)
def min_max_ties_keep_first(x):
    return x + 1, repr(max([1, 1.0, True])), repr(min(1.0, 1)), repr(max(1, 2.0, 2)), repr(min([2, 1.0, 1], key=abs))


@probe(_t)
def sorted_ties_stable_across_types(x):
    return x + 1, repr(sorted([1.0, 1, True, 0, False])), repr(sorted([2, 1.0, 1], reverse=True))


@probe(_t)
def list_index_and_count_by_equality(x):
    a = [1.0, 2, True]
    return x + a.index(1) + a.count(1), [1, 2].index(2.0), (1 in [1.0]), a.count(True)


@probe(_t)
def sum_result_types(x):
    return x + 1, repr(sum([True, True])), repr(sum([1, 2.0])), repr(sum([], 0.0)), repr(sum((1, 2), 0.5))


@probe(_t)
def and_or_return_operands(x):
    a = [] or [1]
    b = 0 and "never"
    c = "" or 0 or None
    d = [2] and (3,)
    e = x.shape[0] and x.shape
    return x + 1, a, b, c, d, e


@probe(_t)
def not_on_objects(x):
    return x + 1, (not [], not [0], not 0.0, not "a", not None, not x.shape)


@probe(_t)
def dict_get_returns_same_object(x):
    inner = [1]
    d = {"a": inner}
    got = d.get("a")
    got.append(2)
    return x + len(inner), got is inner, d.setdefault("a", []) is inner


@probe(_t)
def tuple_concat_with_empty_is_same(x):
    t = (1, x)
    return t + () is t, () + t is t, t[:] is t, len(t * 1)


# ---------------------------------------------------------------- effects before an exception

@probe(lambda: ([1, 2], torch.randn(4)))
def list_arg_mutated_then_raise(lst, x):
    lst.append(x.shape[0])
    lst[0] = -1
    raise ValueError("after mutation", len(lst))


@probe(lambda: ({"a": 1}, torch.randn(4)))
def dict_arg_mutated_then_keyerror(d, x):
    d["b"] = 2
    d.pop("a")
    return d["missing"] + x


_log = []


def _reset_log():
    _log.clear()
    return (torch.randn(4),)


@probe(lambda: (_reset_log()[0], _log))
def global_list_mutated_then_raise(x, seen):
    _log.append("start")
    _log.extend([1, 2])
    if x.shape[0] == 4:
        raise RuntimeError("stop")
    return x


@probe(_reset_log)
def global_list_returned_after_caught_exception(x):
    try:
        _log.append(1)
        {}["k"]
    except KeyError as e:
        _log.append(repr(e))
    finally:
        _log.append("finally")
    return x + len(_log), list(_log)


@probe(lambda: ([3, 1, 2], torch.randn(4)))
def sort_with_raising_key_leaves_list(lst, x):
    def key(v):
        if v == 2:
            raise KeyError(v)
        return v
    try:
        lst.sort(key=key)
    except KeyError as e:
        return x + 1, e.args, list(lst)
    return x


@probe(lambda: ([3, 1, 2, "a"], torch.randn(4)))
def sort_failing_comparison_leaves_permutation(lst, x):
    try:
        lst.sort()
    except TypeError:
        pass
    return x + 1


@probe(_t)
def exception_args_and_str(x):
    out = []
    for exc in (KeyError("k"), KeyError(), ValueError(1, 2), IndexError("i"), StopIteration(5)):
        out.append((type(exc).__name__, exc.args, str(exc), repr(exc)))
    return x + 1, out


@probe(_t)
def exception_chaining_context_and_cause(x):
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise ValueError("outer") from inner
    except ValueError as e:
        cause = repr(e.__cause__)
        ctx = repr(e.__context__)
        suppressed = e.__suppress_context__
    return x + 1, cause, ctx, suppressed


@probe(_t)
def exception_from_none_suppresses(x):
    try:
        try:
            1 / 0
        except ZeroDivisionError:
            raise KeyError("k") from None
    except KeyError as e:
        return x + 1, e.__cause__, e.__suppress_context__, type(e.__context__).__name__


@probe(_t)
def except_variable_deleted_after_block(x):
    try:
        raise ValueError("v")
    except ValueError as err:
        msg = str(err)
    try:
        err  # noqa: B018
        alive = True
    except NameError:
        alive = False
    return x + 1, msg, alive


@probe(_t)
def finally_overrides_return(x):
    def f():
        try:
            return 1
        finally:
            return 2  # noqa: B012
    return x + f()


@probe(_t)
def custom_exception_attributes(x):
    class MyErr(Exception):
        def __init__(self, code, msg):
            super().__init__(msg)
            self.code = code
    try:
        raise MyErr(7, "bad")
    except MyErr as e:
        return x + e.code, str(e), e.args


@probe(_t)
def except_tuple_of_types(x):
    out = []
    for thunk in (lambda: [][1], lambda: {}[1], lambda: int("z")):
        try:
            thunk()
        except (IndexError, KeyError) as e:
            out.append(type(e).__name__)
        except ValueError:
            out.append("value")
    return x + 1, out


@probe(_t)
def suppress_context_manager(x):
    import contextlib
    with contextlib.suppress(KeyError):
        {}["a"]
        x = x * 100
    return x + 1


# ---------------------------------------------------------------- order of user calls

@probe(_reset_log)
def sorted_key_called_once_each_in_order(x):
    def key(v):
        _log.append(v)
        return -v
    out = sorted([3, 1, 2], key=key)
    return x + 1, out, list(_log)


@probe(_reset_log)
def max_key_call_order(x):
    def key(v):
        _log.append(v)
        return v % 3
    return x + max([4, 5, 7, 2], key=key), list(_log)


@probe(_reset_log)
def map_zip_interleave_effects(x):
    def f(v):
        _log.append(("f", v))
        return v
    def g(v):
        _log.append(("g", v))
        return v
    pairs = list(zip(map(f, [1, 2, 3]), map(g, [1, 2])))
    return x + 1, pairs, list(_log)


@probe(_reset_log)
def filter_partially_consumed(x):
    def pred(v):
        _log.append(v)
        return v % 2
    it = filter(pred, range(10))
    first = next(it)
    second = next(it)
    return x + first + second, list(_log)


@probe(_reset_log)
def reduce_with_side_effects(x):
    def step(acc, v):
        _log.append((acc, v))
        return acc + v
    return functools.reduce(step, [1, 2, 3], x), list(_log)


@probe(_reset_log)
def generator_partially_consumed_then_finished(x):
    def gen():
        for i in range(4):
            _log.append(i)
            yield i
    g = gen()
    a = next(g)
    rest = list(g)
    return x + a, rest, list(_log)


@probe(_reset_log)
def any_stops_at_first_true(x):
    def check(v):
        _log.append(v)
        return v > 1
    return x + any(check(v) for v in [0, 2, 5]), list(_log)


@probe(_reset_log)
def defaultdict_missing_inserts_only_on_getitem(x):
    dd = collections.defaultdict(lambda: _log.append("made") or 0)
    dd.get("a")
    "b" in dd  # noqa: B015
    dd["c"]
    return x + len(dd), list(dd), list(_log)


@probe(_t)
def counter_arithmetic_drops_nonpositive(x):
    c = collections.Counter(a=3, b=1)
    c.subtract({"b": 2, "z": 1})
    return x + 1, sorted(c.items()), sorted((+c).items()), sorted((-c).items()), c.total()


# ---------------------------------------------------------------- torch.Size and tensor metadata

@probe(_t2d)
def torch_size_arithmetic_types(x):
    s = x.shape
    return x + 1, [type(v).__name__ for v in (s + (5,), (5,) + s, s * 2, 2 * s, s[::-1], s[0:1], s[0])]


@probe(_t2d)
def torch_size_reprs(x):
    return x + 1, (repr(x.shape), str(x.shape), f"{x.shape}", repr(x.device), str(x.device), str(x.dtype),
                   repr(x.dtype))


@probe(_t2d)
def torch_size_builtins(x):
    s = x.shape
    return x + 1, (max(s), min(s), sorted(s, reverse=True), sum(s), math.prod(s), list(reversed(s)), s.index(4),
                   tuple(s) == s, list(s) == s, s == torch.Size([3, 4]), hash(s) == hash((3, 4)))


@probe(_t)
def torch_size_unpack_wrong_count_raises(x):
    a, b = x.shape
    return a + b


@probe(_t2d)
def tensor_metadata_methods(x):
    y = x.t()
    z = x[1:, ::2]
    return x + 1, (y.stride(), z.storage_offset(), z.stride(), z.is_contiguous(), x.nbytes, x.itemsize,
                   x.get_device(), x.device.index, x.is_inference(), x.is_neg(), x.is_conj(), x.H.shape)


@probe(_t2d)
def tensor_data_ptr_relations(x):
    v = x.view(-1)
    s = x[1:]
    return x + 1, v.data_ptr() == x.data_ptr(), s.data_ptr() - x.data_ptr(), x.untyped_storage().nbytes()


@probe(_t)
def tensor_compare_with_non_tensors(x):
    return x + 1, (x == None, x != None, x == "a", x != "a", x.__eq__("a") is NotImplemented)  # noqa: E711


@probe(_t)
def tensor_add_string_raises(x):
    return x + "a"


@probe(_t)
def tensor_identity_in_containers(x):
    y = x.clone()
    d = {x: 1, y: 2}
    return x + 1, [x] == [x], (x,) == (x,), x in {x}, d[x], d[y], y in {x: 0}


@probe(_t)
def tensor_list_equality_ambiguous_raises(x):
    return [x] == [x.clone()]


@probe(_t)
def dtype_as_dict_key_and_membership(x):
    table = {torch.float32: "f32", torch.float16: "f16"}
    return x + 1, table[x.dtype], x.dtype in (torch.float16, torch.bfloat16), hash(x.dtype) == hash(torch.float32)


@probe(_t)
def dtype_properties_and_conversions(x):
    d = x.dtype
    return x + 1, (d.is_signed, d.to_complex(), torch.result_type(x, 1.0), torch.can_cast(d, torch.int32),
                   torch.promote_types(d, torch.int64), torch.get_default_dtype())


@probe(lambda: (torch.randn(3, requires_grad=True),))
def requires_grad_metadata(x):
    y = x * 2
    return y.sum(), (x.requires_grad, y.requires_grad, x.is_leaf, y.is_leaf, x.grad is None, y.grad_fn is None)


@probe(lambda: (torch.randn(3),))
def requires_grad_set_on_input(x):
    x.requires_grad_()
    return x * 2, x.requires_grad


@probe(_t2d)
def shape_int_methods(x):
    n = x.shape[0]
    return x + 1, (n.bit_length(), type(n).__name__, n // -2, -n % 4, n / 2, n ** 2, divmod(n, -2), float(n))


@probe(_t2d)
def numel_dim_arithmetic(x):
    return x * (x.numel() / 5) + x.dim() ** -1 + x.size(-1) % 3


# ---------------------------------------------------------------- numbers and strings

@probe(_t)
def float_repr_shortest(x):
    return x + 1, (repr(0.1 + 0.2), str(1e16), "%g" % 1e-5, format(1.5, "e"), format(2 ** 0.5, ".17g"),
                   repr(1 / 3), str(100.0), f"{1e-7}")


@probe(_t)
def big_int_true_division_exact(x):
    a = 2 ** 60 + 1
    return x + 1, (a / 3, (10 ** 20 + 1) / 1, a // 3, -a // 3, a % -7)


@probe(_t)
def float_overflow_raises(x):
    return x + float(10 ** 400)


@probe(_t)
def round_inf_raises(x):
    return x + round(float("inf"))


@probe(_t)
def int_of_nan_raises(x):
    return x + int(float("nan"))


@probe(_t)
def int_explicit_base_non_string_raises(x):
    return x + int(12, 10)


@probe(_t)
def bool_indexing_and_slicing(x):
    a = [10, 20, 30]
    return x + a[True], a[False:True], "abc"[True:]


@probe(_t)
def string_methods_return_new_objects(x):
    s = "abc"
    return x + 1, (s.strip() == s, s.upper().lower(), s.center(2), s[::1] == s, s.split("b"))


@probe(_t)
def nonlocal_through_two_levels_and_exception(x):
    total = 0

    def outer():
        def inner(v):
            nonlocal total
            total += v
            if total > 3:
                raise OverflowError(total)
        for v in (1, 2, 3):
            inner(v)
    try:
        outer()
    except OverflowError as e:
        return x + total, e.args
    return x


@probe(_t)
def closure_cell_rebound_after_closure_made(x):
    k = 1

    def get():
        return k
    k = 5
    first = get()
    k = 7
    return x + first + get()


@probe(_t)
def nested_function_defaults_evaluated_at_def(x):
    fns = []
    for i in range(3):
        def f(v=i * 10):
            return v
        fns.append(f)
    return x + 1, [f() for f in fns], [f.__defaults__ for f in fns]


@probe(_t)
def kwargs_order_preserved(x):
    def f(**kw):
        return list(kw)
    return x + 1, f(z=1, a=2, m=3), f(**{"b": 1}, a=2)


@probe(_t)
def star_args_from_dict_and_set(x):
    def f(*a):
        return a
    return x + 1, f(*{"p": 1, "q": 2}), sorted(f(*{3, 1, 2}))
