"""Probes restating behaviours torch's dynamo function tests rely on (part 1): builtins called with
keywords, operator and functools helpers, closures and nonlocal, defaults, *args/**kwargs, globals,
comparison protocols (NotImplemented, reflection) and exceptions raised by builtins."""
import functools
import operator

import torch

from . import probe


def _t():
    return (torch.randn(4),)


def _tt():
    return (torch.randn(4), torch.randn(4))


def _t2d():
    return (torch.randn(3, 4),)


# ---------------------------------------------------------------- builtins with keywords

@probe(_t)
def sorted_key_reverse_kw(x):
    rows = [("b", 3), ("a", 7), ("c", 1), ("d", 3)]
    by_num = sorted(rows, key=lambda r: r[1], reverse=True)
    return x + by_num[0][1], by_num


@probe(_t)
def sorted_stable_with_equal_keys(x):
    words = ["bb", "a", "cc", "d", "ee"]
    return x * 2, sorted(words, key=len)


@probe(_t)
def min_max_key_default(x):
    empty = []
    a = min(empty, default=-5)
    b = max([3, -9, 4], key=abs)
    c = min("hello", key=ord)
    return x + a + b, c


@probe(_t)
def max_of_empty_raises(x):
    return max([], key=abs) + x


@probe(_t)
def min_several_args_key(x):
    return x + min(4, -7, 2, key=lambda v: v * v)


@probe(_t)
def sum_start_keyword(x):
    return sum([1, 2, 3], start=10) + x


@probe(_t)
def sum_of_lists_with_start(x):
    flat = sum([[1], [2, 3]], [])
    return x + len(flat), flat


@probe(_t)
def sum_of_strings_raises(x):
    return sum(["a", "b"], "") + str(x.shape[0])


@probe(_t)
def enumerate_start_keyword(x):
    out = x
    pairs = []
    for i, v in enumerate([5, 6, 7], start=3):
        out = out + i * v
        pairs.append((i, v))
    return out, pairs


@probe(_t)
def zip_strict_mismatch_raises(x):
    total = x
    for a, b in zip([1, 2, 3], [4, 5], strict=True):
        total = total + a * b
    return total


@probe(_t)
def zip_strict_equal_lengths(x):
    total = x
    for a, b in zip([1, 2], (3, 4), strict=True):
        total = total + a * b
    return total


@probe(_t)
def int_with_base_keyword(x):
    return x + int("ff", base=16) + int("0b101", 0) + int(" 12 ")


@probe(_t)
def int_of_bad_string_raises(x):
    return x + int("1.5")


@probe(_t)
def round_ndigits_and_half_even(x):
    return x + round(2.5) + round(3.5) + round(1234, -2) + round(2.675, 2), round(7.0), round(7.25, 1)


@probe(_t)
def round_returns_int_type(x):
    r = round(3.7)
    return x * r, type(r).__name__, type(round(3.7, 0)).__name__


@probe(_t)
def divmod_negative_operands(x):
    q, r = divmod(-7, 2)
    fq, fr = divmod(7.5, -2)
    return x + q + r, (q, r, fq, fr)


@probe(_t)
def pow_three_args(x):
    return x + pow(3, 4, 5) + pow(2, -1, 7), pow(base=2, exp=10)


@probe(_t)
def pow_negative_float_complex(x):
    r = (-8) ** (1 / 3)
    return x + 1, type(r).__name__


@probe(_t)
def abs_and_neg_of_bool(x):
    return x + abs(-True) - (-False), abs(-3.5)


@probe(_t)
def print_to_nowhere_with_keywords(x):
    import io
    buf = io.StringIO()
    print(1, 2, "three", sep="-", end="!", file=buf)
    return x + 1, buf.getvalue()


@probe(_t)
def getattr_with_default(x):
    missing = getattr(x, "no_such_attr", 42)
    return x + missing


@probe(_t)
def getattr_missing_raises(x):
    return getattr(x, "no_such_attr")


@probe(_t)
def hasattr_on_class_and_instance(x):
    class K:
        a = 1
    k = K()
    k.b = 2
    return x + hasattr(K, "a") + hasattr(K, "b") * 10 + hasattr(k, "b") * 100


@probe(_t)
def setattr_delattr_builtins(x):
    class K:
        pass
    k = K()
    setattr(k, "v", 3)
    had = hasattr(k, "v")
    delattr(k, "v")
    return x + k.__dict__.get("v", -1), had, hasattr(k, "v")


@probe(_t)
def callable_on_various(x):
    class C:
        def __call__(self):
            return 1

    class N:
        pass
    flags = (callable(C()), callable(N()), callable(C), callable(len), callable(3), callable(x), callable([1]))
    return x + 1, flags


@probe(_t)
def iter_with_sentinel(x):
    items = [1, 2, 3, 0, 5]
    it = iter(items)
    got = list(iter(lambda: next(it), 0))
    return x + sum(got), got


@probe(_t)
def next_with_default(x):
    it = iter([1])
    a = next(it)
    b = next(it, "done")
    return x + a, b


@probe(_t)
def next_exhausted_raises(x):
    it = iter([])
    return x + next(it)


@probe(_t)
def map_with_two_iterables(x):
    return x + sum(map(operator.mul, [1, 2, 3], [4, 5])), list(map(pow, [2, 3], [3, 2]))


@probe(_t)
def filter_none_predicate(x):
    vals = list(filter(None, [0, 1, "", "a", None, [], [0]]))
    return x + len(vals), vals


@probe(_t)
def all_any_on_generators(x):
    a = all(v > 0 for v in [1, 2, 3])
    b = any(v > 2 for v in [1, 2])
    return x + a * 2 + b, all([]), any([])


@probe(_t)
def reversed_range_and_list(x):
    return x + sum(reversed(range(1, 4, 2))), list(reversed([1, 2, 3])), list(reversed(range(5, 0, -2)))


@probe(_t)
def chr_ord_hex_bin_oct(x):
    return x + ord("a"), (chr(98), hex(255), bin(-5), oct(8), ascii("é"))


@probe(_t)
def format_builtin_spec(x):
    return x + 1, (format(3.14159, ".2f"), format(42, "08b"), format(1234567, ","), format("ab", "^6"))


@probe(_t)
def repr_and_str_of_containers(x):
    return x + 1, (repr([1, "a", None]), str((1,)), repr({"k": 1.5}), repr(1e20), str(-0.0))


@probe(_t)
def isinstance_tuple_of_types(x):
    return x + isinstance(3, (str, (float, int))), isinstance(True, int), isinstance(x, (list, torch.Tensor))


@probe(_t)
def issubclass_checks(x):
    return x + issubclass(bool, int), issubclass(int, (str, bool)), issubclass(torch.nn.Linear, torch.nn.Module)


@probe(_t)
def isinstance_bad_second_arg_raises(x):
    return isinstance(x, 3)


@probe(_t)
def type_three_args_creates_class(x):
    K = type("K", (), {"v": 4, "get": lambda self: self.v * 2})
    return x + K().get(), K.__name__


@probe(_t)
def len_of_various(x):
    return x + len(range(0, 10, 3)) + len({1: 2}) + len("héllo") + len(b"ab") + len(x)


@probe(_t)
def len_of_int_raises(x):
    return x + len(5)


@probe(_t)
def hash_of_equal_numbers(x):
    return x + 1, hash(1) == hash(1.0) == hash(True), hash((1, 2)) == hash((1, 2))


@probe(_t)
def hash_of_list_raises(x):
    return x + hash([1])


@probe(_t)
def id_identity_of_small_objects(x):
    a = [1]
    b = a
    return x + 1, id(a) == id(b), a is b, [1] is a  # noqa: F632


@probe(_t)
def vars_of_object(x):
    class K:
        def __init__(self):
            self.p = 1
            self.q = 2
    return x + 1, sorted(vars(K()).items())


@probe(_t)
def dir_contains(x):
    class K:
        zz = 1
    return x + ("zz" in dir(K)), "append" in dir([])


@probe(_t)
def slice_builtin_indices(x):
    s = slice(1, None, 2)
    return x[s], s.indices(7), (s.start, s.stop, s.step)


@probe(_t)
def bool_of_various(x):
    return x + 1, (bool(0.0), bool("0"), bool([]), bool(range(0)), bool(None), bool(-1))


@probe(_t)
def float_special_strings(x):
    inf = float("inf")
    nan = float("nan")
    return x + 1, (inf > 1e308, nan == nan, nan != nan, float("-inf") < -inf + 1, float(" 1e3 "))


@probe(_t)
def float_bad_string_raises(x):
    return x + float("abc")


@probe(_t)
def complex_arithmetic(x):
    c = complex(1, 2) * (3 - 1j)
    return x + c.real, (c, abs(3 + 4j), c.conjugate())


@probe(_t)
def max_of_mixed_types_raises(x):
    return x + max(1, "a")


@probe(_t)
def string_join_non_str_raises(x):
    return ",".join(["a", 1]), x


@probe(_t)
def frozenset_and_set_builtins(x):
    a = frozenset([1, 2, 2, 3])
    b = set("abca")
    return x + len(a) + len(b), sorted(b), a == {1, 2, 3}


# ---------------------------------------------------------------- operator module

@probe(_t)
def operator_itemgetter_multi(x):
    get = operator.itemgetter(2, 0)
    return x + sum(get([5, 6, 7])), get("abc")


@probe(_t)
def operator_itemgetter_on_tensor(x):
    return operator.itemgetter(1)(x), operator.itemgetter(slice(0, 2))(x)


@probe(_t)
def operator_attrgetter_dotted(x):
    g = operator.attrgetter("shape", "dtype.is_floating_point")
    shp, fl = g(x)
    return x + shp[0], fl


@probe(_t)
def operator_methodcaller_kwargs(x):
    call = operator.methodcaller("split", ",", maxsplit=1)
    return x + 1, call("a,b,c")


@probe(_t)
def operator_methodcaller_on_tensor(x):
    return operator.methodcaller("sum", dim=0, keepdim=True)(x)


@probe(_t)
def operator_index_of_bool_and_int(x):
    return x * operator.index(True) + operator.index(7)


@probe(_t)
def operator_index_of_float_raises(x):
    return x * operator.index(2.0)


@probe(_t)
def operator_truth_not_(x):
    return x + operator.truth([0]) + operator.not_(0) * 2, operator.truth(0.0)


@probe(_t)
def operator_length_hint(x):
    return x + operator.length_hint(iter([1, 2, 3])) + operator.length_hint(object(), 9)


@probe(_t)
def operator_iadd_mutates_list(x):
    a = [1]
    b = a
    a = operator.iadd(a, [2])
    t = (1,)
    t2 = operator.iadd(t, (2,))
    return x + len(b), b, t, t2


@probe(_t)
def operator_on_tensors_and_constants(x):
    return (operator.lt(-10, x), operator.ge(x, 0.0), operator.is_(-10, x), operator.is_not(x, x),
            operator.neg(x), operator.pos(x), operator.abs(x))


@probe(_t)
def operator_contains_and_countof(x):
    return x + operator.contains([1, 2], 2) + operator.countOf([1, 2, 1], 1), operator.indexOf("abc", "c")


@probe(_t)
def operator_concat_and_getitem(x):
    return x + 1, operator.concat([1], [2]), operator.getitem({"a": 3}, "a")


@probe(_t)
def operator_setitem_delitem(x):
    d = {"a": 1}
    operator.setitem(d, "b", 2)
    operator.delitem(d, "a")
    return x + d["b"], d


@probe(_t)
def operator_concat_non_sequence_raises(x):
    return operator.concat(1, 2) + x


@probe(lambda: (torch.ones(2), 1))
def operator_pos_mixed(x, y):
    return operator.pos(x) * +y, +True


@probe(_t)
def map_operator_abs_over_range(x):
    vals = list(map(operator.abs, range(-3, 3)))
    return x + sum(vals), vals, list(map(operator.neg, range(2)))


# ---------------------------------------------------------------- functools

def _scale(a, b, c=1, *, d=0):
    return a * b + c + d


@probe(_t)
def partial_keyword_override(x):
    p = functools.partial(_scale, c=5, d=1)
    return p(x, 2), p(x, 2, c=0), p.keywords, p.args


@probe(_t)
def partial_of_partial_flattens(x):
    p = functools.partial(functools.partial(_scale, x), 3)
    return p(), p.func is _scale, p.args[1]


@probe(_t)
def partial_too_many_args_raises(x):
    p = functools.partial(_scale, x, 2, 3)
    return p(4)


@probe(_t)
def partial_of_torch_op_kw(x):
    clamp01 = functools.partial(torch.clamp, min=0.0, max=1.0)
    return clamp01(x * 3)


@probe(_t)
def partial_of_lambda_positional(x):
    f = functools.partial(lambda a, b, c: a * b - c, 2)
    return f(x, c=1)


_scale_b3 = functools.partial(_scale, b=3)


@probe(lambda: (_scale_b3, torch.randn(4)))
def partial_passed_in(p, x):
    return p(x) + p(x, d=2)


@probe(_t)
def reduce_with_initial_and_single(x):
    a = functools.reduce(operator.add, [x, x, 1.0], 2.0)
    b = functools.reduce(lambda u, v: (u, v), [7])
    c = functools.reduce(lambda u, v: u * v, [], 5)
    return a, b, c


@probe(_t)
def reduce_empty_raises(x):
    return functools.reduce(operator.add, []) + x


@probe(_t)
def reduce_keyword_initial(x):
    return functools.reduce(operator.mul, [1, 2, 3], 4) * x


@functools.lru_cache(maxsize=None)
def _cached_square(n):
    return n * n


@probe(_t)
def lru_cache_call(x):
    return x + _cached_square(3) + _cached_square(3)


@probe(_t)
def wraps_preserves_name(x):
    def deco(f):
        @functools.wraps(f)
        def inner(*a, **k):
            return f(*a, **k) + 1
        return inner

    @deco
    def base(v):
        """doc"""
        return v * 2
    return base(x), base.__name__, base.__doc__, base.__wrapped__(x)


@probe(_t)
def cmp_to_key_sort(x):
    def cmp(a, b):
        return (a % 3) - (b % 3) or b - a
    vals = sorted([5, 1, 9, 3, 4, 7], key=functools.cmp_to_key(cmp))
    return x + vals[0], vals


@probe(_t)
def cached_property_computed_once(x):
    class K:
        calls = 0

        @functools.cached_property
        def v(self):
            K.calls += 1
            return 10
    k = K()
    return x + k.v + k.v, K.calls, "v" in k.__dict__


@probe(_t)
def total_ordering_derived(x):
    @functools.total_ordering
    class V:
        def __init__(self, n):
            self.n = n

        def __eq__(self, o):
            return self.n == o.n

        def __lt__(self, o):
            return self.n < o.n
    return x + 1, (V(1) <= V(2), V(3) > V(2), V(2) >= V(2))


@probe(_t)
def partial_method_on_class(x):
    class K:
        def scale(self, t, k):
            return t * k
        triple = functools.partialmethod(scale, k=3)
    return K().triple(x)


# ---------------------------------------------------------------- comparisons, NotImplemented, reflection

class _Money:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        if not isinstance(other, _Money):
            return NotImplemented
        return self.v == other.v

    def __lt__(self, other):
        if not isinstance(other, _Money):
            return NotImplemented
        return self.v < other.v

    def __add__(self, other):
        if isinstance(other, int):
            return _Money(self.v + other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, int):
            return _Money(self.v + other * 10)
        return NotImplemented


@probe(_t)
def eq_notimplemented_falls_back_to_identity(x):
    m = _Money(1)
    return x + 1, (m == 1, m != 1, m == _Money(1), m == m, 1 == m)


@probe(_t)
def lt_notimplemented_raises_typeerror(x):
    return _Money(1) < 3, x


@probe(_t)
def reflected_gt_uses_lt(x):
    return x + 1, _Money(5) > _Money(2), _Money(1) > _Money(3)


@probe(_t)
def radd_used_for_int_left(x):
    m = 3 + _Money(1)
    n = _Money(1) + 3
    return x + m.v + n.v


@probe(_t)
def add_notimplemented_both_raises(x):
    return _Money(1) + "s", x


@probe(_t)
def sum_calls_radd(x):
    a = sum([2, 3], _Money(1))
    b = sum([_Money(1)])
    return x + a.v + b.v


@probe(_t)
def subclass_reflected_op_first(x):
    class Base:
        def __mul__(self, o):
            return "base"

        def __rmul__(self, o):
            return "base-r"

    class Sub(Base):
        def __rmul__(self, o):
            return "sub-r"
    return x + 1, Base() * Sub(), Sub() * Base()


@probe(_t)
def tuple_comparisons_lexicographic(x):
    out = x
    for a, b, c in [((1, 2, 3), (1, 2, 3), 1.0), ((1, 4), (1, 2, 3), 2.0), ((1, 2), (1, 2, 3), 3.0)]:
        if a < b:
            out = out + c
        if a >= b:
            out = out - c * 2
        if a != b:
            out = out * 1.5
    return out


@probe(_t)
def list_compare_with_tuple_raises(x):
    return [1] < (1,), x


@probe(_t)
def chained_comparisons(x):
    v = 3
    return x + (1 < v < 5) + (1 < v > 5) * 2 + (v == 3 != 4) * 4


@probe(_t)
def eq_between_int_float_bool(x):
    return x + 1, (1 == 1.0, True == 1, 0.1 + 0.2 == 0.3, 2 ** 53 + 1 == float(2 ** 53 + 1))


@probe(_t)
def none_comparison_raises(x):
    return None < 1, x


@probe(_t)
def user_eq_used_by_in(x):
    class AlwaysEq:
        def __eq__(self, o):
            return True
    return x + 1, AlwaysEq() in [1, 2], 5 in [AlwaysEq()], [1, 2].index(AlwaysEq())


@probe(_t)
def user_bool_and_len(x):
    class Empty:
        def __len__(self):
            return 0

    class Truthy:
        def __bool__(self):
            return True

        def __len__(self):
            return 0
    return x + 1, bool(Empty()), bool(Truthy()), not Empty()


@probe(_t)
def bool_returning_non_bool_raises(x):
    class Bad:
        def __bool__(self):
            return 1
    if Bad():
        return x + 1
    return x


# ---------------------------------------------------------------- closures, nonlocal, nested functions

@probe(_tt)
def nonlocal_updated_by_inner(x, y):
    x = x + y + 1.0

    def inner(z):
        nonlocal x, y
        y = x + z + 20.0
        x = y + z + 10.0
    inner(2.0)
    inner(3.0)
    return x, y


@probe(_t)
def closure_counter_factory(x):
    def make():
        n = 0

        def inc(k=1):
            nonlocal n
            n += k
            return n
        return inc
    a, b = make(), make()
    a()
    a(5)
    b()
    return x + a() + b(), a.__closure__[0].cell_contents


@probe(_t)
def late_binding_in_loop(x):
    fns = [lambda: i for i in range(3)]
    bound = [lambda i=i: i for i in range(3)]
    return x + 1, [f() for f in fns], [f() for f in bound]


@probe(_t)
def two_closures_share_cell(x):
    def make():
        v = [0]
        box = 1

        def get():
            return box + v[0]

        def put(n):
            nonlocal box
            box = n
        return get, put
    get, put = make()
    put(7)
    return x + get()


@probe(_t)
def closure_returned_and_called_later(x):
    def outer(t):
        def inner(u):
            return t * u
        return inner
    f = outer(x)
    return f(2) + f(3)


@probe(_t)
def nested_three_levels(x):
    def a(u):
        def b(v):
            def c(w):
                return u + v + w
            return c(3)
        return b(2)
    return a(x)


@probe(_t)
def unbound_local_raises(x):
    def f():
        if False:
            z = 1
        return z
    return f() + x


@probe(_t)
def free_var_referenced_before_assignment_raises(x):
    def outer():
        def inner():
            return v
        r = inner()
        v = 1
        return r
    return outer() + x


@probe(_t)
def recursion_fib(x):
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    return x + fib(8)


@probe(_t)
def lambda_default_captures_value(x):
    k = 2
    f = lambda v, k=k: v * k  # noqa: E731
    k = 5
    return f(x) + k


@probe(_t)
def function_attributes(x):
    def f(a, b=2, *c, d, e=5, **g):
        return a
    return x + 1, (f.__name__, f.__defaults__, f.__kwdefaults__, f.__code__.co_argcount,
                   f.__code__.co_kwonlyargcount)


@probe(_t)
def function_attribute_set_and_read(x):
    def f():
        return f.flag
    f.flag = 3
    return x + f()


@probe(_t)
def decorator_with_arguments(x):
    def times(n):
        def deco(f):
            def wrapper(*a):
                out = f(*a)
                for _ in range(n - 1):
                    out = out + f(*a)
                return out
            return wrapper
        return deco

    @times(3)
    def g(t):
        return t * 2
    return g(x)


@probe(_t)
def context_decorated_nested_function(x):
    @torch.no_grad()
    def aug(t):
        return (t + 1) * 2
    return aug(x), torch.is_grad_enabled()


# ---------------------------------------------------------------- default args, *args, **kwargs

def _accumulate(v, acc=[]):  # noqa: B006 - the shared default is what is probed
    acc.append(v)
    return len(acc)


def _reset_acc():
    _accumulate.__defaults__[0].clear()
    return (torch.randn(4),)


@probe(_reset_acc)
def mutable_default_accumulates(x):
    n = _accumulate(1)
    return x + n, list(_accumulate.__defaults__[0])


def _kwonly(a, *, b, c=3):
    return a + b * c


@probe(_t)
def kwonly_missing_raises(x):
    return _kwonly(x)


@probe(_t)
def kwonly_positional_raises(x):
    return _kwonly(x, 1)


@probe(_t)
def kwonly_call(x):
    return _kwonly(x, b=2), _kwonly(x, c=1, b=4)


def _posonly(a, b, /, c=1):
    return a * b + c


@probe(_t)
def posonly_as_keyword_raises(x):
    return _posonly(x, b=2)


@probe(_t)
def posonly_name_also_in_kwargs(x):
    def f(a, /, **kw):
        return a, sorted(kw)
    a, keys = f(x, a=1)
    return a + 1, keys


@probe(_t)
def duplicate_keyword_raises(x):
    return _scale(x, 2, b=3)


@probe(_t)
def unexpected_keyword_raises(x):
    return _scale(x, 2, zz=3)


@probe(_t)
def star_args_and_kwargs_forwarding(x):
    def inner(*args, **kwargs):
        return len(args), sorted(kwargs.items()), args[0] + kwargs.get("k", 0)

    def outer(*a, **k):
        return inner(*a, 5, **k, extra=1)
    n, kw, v = outer(x, k=2)
    return v, n, kw


@probe(_t)
def star_args_is_tuple_kwargs_is_dict(x):
    def f(*a, **k):
        return type(a).__name__, type(k).__name__, a, k
    return x + 1, f(1, 2, z=3)


@probe(_t)
def double_star_from_mapping(x):
    opts = {"c": 4, "d": 1}
    return _scale(x, 2, **opts), _scale(**{"a": x, "b": 1})


@probe(_t)
def double_star_non_string_key_raises(x):
    return _scale(x, 2, **{1: 2})


@probe(_t)
def double_star_duplicate_raises(x):
    return _scale(x, 2, **{"c": 1}, **{"c": 2})


@probe(_t)
def star_unpack_generator_into_call(x):
    return torch.stack([*(x * i for i in range(3))]), max(*[3, 9, 2])


@probe(_t)
def kwargs_dict_is_fresh_copy(x):
    d = {"c": 1}

    def f(a, b, **kw):
        kw["c"] = 99
        return kw
    kw = f(x, 1, **d)
    return x + d["c"], kw["c"]


@probe(_t)
def default_evaluated_once(x):
    def f(v=[]):  # noqa: B006
        v.append(1)
        return len(v)
    return x + f() + f() + f([5])


@probe(_t)
def default_tensor_argument_mutated(x):
    def f(t, z=torch.zeros(2)):  # noqa: B008
        z.add_(1)
        return t.sum() + z
    f(x)
    return f(x)


@probe(_t)
def too_few_positional_raises(x):
    return _posonly(x)


# ---------------------------------------------------------------- globals

_counter = 0
_cfg = {"scale": 2}
_flag = True


def _reset_globals():
    global _counter, _cfg, _flag
    _counter = 0
    _cfg = {"scale": 2}
    _flag = True
    return (torch.randn(4),)


@probe(_reset_globals)
def global_counter_incremented(x):
    global _counter
    _counter += 1
    return x * _counter, _counter


@probe(_reset_globals)
def global_dict_mutated(x):
    _cfg["scale"] += 1
    _cfg.setdefault("calls", 0)
    _cfg["calls"] += 1
    return x * _cfg["scale"], dict(_cfg)


@probe(_reset_globals)
def global_rebound_then_read(x):
    global _cfg
    _cfg = {"scale": _cfg["scale"] * 3}
    return x * _cfg["scale"], _cfg


@probe(_reset_globals)
def global_flag_flipped_each_call(x):
    global _flag
    _flag = not _flag
    if _flag:
        return x + 1, _flag
    return x - 1, _flag


@probe(_reset_globals)
def global_deleted_then_missing_raises(x):
    global _tmp_global
    _tmp_global = 3
    v = _tmp_global
    del _tmp_global
    return x + v + _tmp_global  # noqa: F821


@probe(_t)
def undefined_global_raises(x):
    return x + _never_defined_global  # noqa: F821


@probe(_reset_globals)
def global_counter_via_helper(x):
    def bump():
        global _counter
        _counter += 2
        return _counter
    return x + bump() + bump(), _counter
