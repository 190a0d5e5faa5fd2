"""Probes restating behaviours torch's dynamo function tests rely on (part 2): dict, list, tuple, set and
str methods, math, itertools, namedtuples and dataclasses, type checks, tensor methods that return
Python values, and exceptions raised by container methods."""
import collections
import dataclasses
import itertools
import math
import typing

import torch

from . import probe


def _t():
    return (torch.randn(4),)


def _t2d():
    return (torch.randn(3, 4),)


# ---------------------------------------------------------------- dict

@probe(_t)
def dict_setdefault_existing_and_new(x):
    d = {"a": 1}
    r1 = d.setdefault("a", 10)
    r2 = d.setdefault("b", 20)
    r3 = d.setdefault("c")
    return x + r1 + r2, d, r3


@probe(_t)
def dict_pop_default_and_missing(x):
    d = {"a": x, "b": 2}
    v = d.pop("a")
    w = d.pop("zz", 5)
    return v + w, d


@probe(_t)
def dict_pop_missing_raises(x):
    d = {"a": 1}
    return x + d.pop("q")


@probe(_t)
def dict_getitem_missing_keyerror_args(x):
    d = {(1, 2): x}
    try:
        return d[(3, 4)]
    except KeyError as e:
        return x + 1, e.args


@probe(_t)
def dict_popitem_lifo_and_empty(x):
    d = {"a": 1, "b": 2}
    last = d.popitem()
    d.popitem()
    try:
        d.popitem()
    except KeyError as e:
        return x + last[1], last, str(e)


@probe(_t)
def dict_update_forms(x):
    d = {"a": x}
    d.update({"b": 1})
    d.update([("c", 2), ["d", 3]])
    d.update(e=4)
    d.update(zip("fg", (5, 6)), h=7)
    return d


@probe(_t)
def dict_update_bad_sequence_raises(x):
    d = {}
    d.update([("a", 1, 2)])
    return x


@probe(_t)
def dict_fromkeys_shares_value(x):
    d = dict.fromkeys(["a", "b"], [])
    d["a"].append(1)
    e = dict.fromkeys("xy")
    return x + len(d["b"]), d, e


@probe(_t)
def dict_merge_operators(x):
    a = {"p": 1, "q": 2}
    b = {"q": 3, "r": x}
    c = a | b
    a |= {"s": 4}
    return c, a


@probe(_t)
def dict_keys_view_live_and_setops(x):
    d = {3: x}
    keys = d.keys()
    d[4] = x + 1
    vals = d.values()
    return 3 in keys, 4 in keys, len(vals), sorted(keys & {4, 5}), sorted(keys | {9}), keys == {3, 4}


@probe(_t)
def dict_items_view_contains(x):
    d = {"a": 1, "b": 2}
    items = d.items()
    return x + 1, ("a", 1) in items, ("a", 2) in items, sorted(items - {("a", 1)})


@probe(_t)
def dict_iteration_order_after_delete_reinsert(x):
    d = {"a": 1, "b": 2, "c": 3}
    del d["a"]
    d["a"] = 4
    return x + 1, list(d), list(d.values())


@probe(_t)
def dict_mutation_during_iteration_raises(x):
    d = {"a": 1, "b": 2}
    for k in d:
        d[k + "x"] = 1
    return x


@probe(_t)
def dict_equality_ignores_order(x):
    return x + 1, {"a": 1, "b": 2} == {"b": 2, "a": 1}, collections.OrderedDict(a=1, b=2) == collections.OrderedDict(b=2, a=1)  # noqa


@probe(_t)
def dict_get_with_unhashable_raises(x):
    return {"a": 1}.get([1]), x


@probe(_t)
def dict_comprehension_with_condition(x):
    d = {k: k * k for k in range(6) if k % 2}
    return x + sum(d.values()), d


@probe(_t)
def dict_keys_with_equal_numbers(x):
    d = {1: "int"}
    d[1.0] = "float"
    d[True] = "bool"
    return x + len(d), d, type(list(d)[0]).__name__


@probe(_t)
def dict_copy_is_shallow(x):
    inner = [1]
    d = {"l": inner}
    c = d.copy()
    c["l"].append(2)
    c["n"] = 3
    return x + len(d), d, c


@probe(_t)
def ordered_dict_move_to_end_and_popitem(x):
    od = collections.OrderedDict(a=1, b=2, c=3)
    od.move_to_end("a")
    od.move_to_end("c", last=False)
    first = od.popitem(last=False)
    return x + first[1], list(od.items()), first


@probe(_t)
def defaultdict_factory_called_on_missing(x):
    dd = collections.defaultdict(list)
    dd["a"].append(x)
    dd["b"]
    cnt = collections.defaultdict(int)
    for ch in "abca":
        cnt[ch] += 1
    return dd["a"][0] + len(dd), dict(cnt), "zz" in dd


@probe(_t)
def defaultdict_get_does_not_call_factory(x):
    dd = collections.defaultdict(lambda: 7)
    v = dd.get("missing")
    return x + len(dd), v, dd["other"], len(dd)


@probe(_t)
def counter_most_common_and_arith(x):
    c = collections.Counter("abracadabra")
    d = c - collections.Counter("aab")
    return x + c["a"], c.most_common(2), sorted(d.items()), c["zzz"]


@probe(_t)
def dict_subclass_missing_hook(x):
    class D(dict):
        def __missing__(self, key):
            return key * 2
    d = D(a=1)
    return x + d["a"] + d[5], "q" in d, d.get(5)


@probe(_t)
def dict_from_keyword_and_mapping(x):
    d = dict({"a": 1}, b=x)
    e = dict([("a", 1)], a=2)
    return d, e


# ---------------------------------------------------------------- list

@probe(_t)
def list_sort_key_reverse_in_place(x):
    a = [3, -1, 2, -5]
    r = a.sort(key=abs, reverse=True)
    return x + a[0], a, r


@probe(_t)
def list_sort_mixed_raises(x):
    a = [1, "a"]
    a.sort()
    return x


@probe(_t)
def list_index_with_bounds_and_missing(x):
    a = [1, 2, 1, 2]
    i = a.index(1, 1)
    try:
        a.index(2, 0, 1)
    except ValueError as e:
        return x + i, str(e)


@probe(_t)
def list_remove_first_and_missing(x):
    a = [1, 2, 1]
    a.remove(1)
    try:
        a.remove(5)
    except ValueError as e:
        return x + len(a), a, str(e)


@probe(_t)
def list_insert_out_of_range(x):
    a = [1, 2]
    a.insert(-10, 0)
    a.insert(100, 9)
    a.insert(-1, 5)
    return x + len(a), a


@probe(_t)
def list_pop_bad_index_raises(x):
    a = [1]
    a.pop(3)
    return x


@probe(_t)
def list_slice_assignment_resizes(x):
    m = [1, 2, 3, 4]
    m[1:] = [6] * (len(m) - 1)
    m[::2] = [0, 0]
    m[1:1] = [7, 8]
    del m[::3]
    return x + len(m), m


@probe(_t)
def list_extended_slice_size_mismatch_raises(x):
    m = [1, 2, 3, 4]
    m[::2] = [0]
    return x


@probe(_t)
def list_extend_with_itself_and_iadd(x):
    a = [1, 2]
    alias = a
    a.extend(a)
    a += (3,)
    a *= 2
    return x + len(alias), alias


@probe(_t)
def list_repetition_shares_inner(x):
    grid = [[0]] * 3
    grid[0].append(1)
    return x + len(grid[2]), grid


@probe(_t)
def list_count_and_contains_tensor(x):
    a = [x, 1, 1, "1"]
    return x in a, a[1:].count(1), "1" in a, 2 in a[1:]


@probe(_t)
def list_copy_clear_reverse(x):
    a = [x, x + 1]
    b = a.copy()
    a.reverse()
    c = a[:]
    a.clear()
    return b, c, a


@probe(lambda: ([1, 2], torch.randn(4)))
def list_arg_appended_and_popped(lst, x):
    lst.append(3)
    first = lst.pop(0)
    lst[0] = lst[0] * 10
    return x + first + len(lst)


@probe(lambda: ({"a": 1}, torch.randn(4)))
def dict_arg_mutated(d, x):
    d["b"] = d.get("b", 0) + 1
    d.pop("a", None)
    return x + d["b"]


@probe(_t)
def list_comprehension_nested_and_filter(x):
    pairs = [(i, j) for i in range(3) for j in range(i) if (i + j) % 2]
    return x + len(pairs), pairs


@probe(_t)
def list_negative_index_out_of_range_raises(x):
    return [1, 2][-3] + x


@probe(_t)
def list_slicing_variants(x):
    a = list(range(10))
    return x + 1, (a[::-1][:3], a[-3:], a[8:2:-2], a[100:], a[:-100], a[::3])


@probe(_t)
def list_equality_and_ordering(x):
    return x + 1, ([1, 2] == [1, 2], [1, 2] < [1, 3], [1] < [1, 0], [] == [], [[1]] > [[0, 9]])


@probe(_t)
def list_sum_of_tensors(x):
    my = [1, x]
    y = x / 4.0
    my = my + [x / 2.0, 4]
    my.append(y)
    return sum(my)


# ---------------------------------------------------------------- tuple and unpacking

@probe(_t)
def tuple_methods(x):
    t = (1, 2, 1, 3)
    return x + t.count(1) + t.index(3), t[1:3], t * 2, (0,) + t


@probe(_t)
def tuple_index_missing_raises(x):
    return (1, 2).index(5) + x


@probe(_t)
def tuple_iadd_rebinds(x):
    out = (x, x + 1)
    alias = out
    out += (x * 2,)
    return len(alias), len(out), out[2]


@probe(_t)
def unpack_star_middle(x):
    items = (x, x + 1, x + 2, x + 3)
    a, *mid, d = items
    return a - d / mid[0], len(mid), type(mid).__name__


@probe(_t)
def unpack_wrong_count_raises(x):
    a, b = [x, x, x]  # noqa
    return a


@probe(_t)
def unpack_too_few_raises(x):
    a, b, *c = [x]  # noqa
    return a


@probe(_t)
def nested_unpacking(x):
    (a, (b, c)), d = (1, (2, 3)), x
    return d + a + b + c


@probe(_t)
def tuple_hash_with_unhashable_raises(x):
    return hash((1, [2])), x


# ---------------------------------------------------------------- set

@probe(_t)
def set_operations(x):
    a = {1, 2, 3}
    b = {2, 3, 4}
    return x + len(a & b), sorted(a | b), sorted(a - b), sorted(a ^ b), a <= {1, 2, 3, 9}, a.isdisjoint({7})


@probe(_t)
def set_methods_mutating(x):
    s = {1, 2}
    s.add(3)
    s.discard(9)
    s.update([4], (5,))
    s.difference_update({1})
    s.intersection_update(range(3, 10))
    return x + len(s), sorted(s)


@probe(_t)
def set_remove_missing_raises(x):
    s = {1}
    s.remove(2)
    return x


@probe(_t)
def set_pop_empty_raises(x):
    s = set()
    return s.pop(), x


@probe(_t)
def set_union_duplicates(x):
    l1 = ["apple", "banana", "apple"]
    l2 = ["orange", "banana"]
    return x + len({*l1, *l2})


@probe(_t)
def frozenset_hashable_as_key(x):
    d = {frozenset({1, 2}): "a"}
    return x + 1, d[frozenset([2, 1])], frozenset({1}) | {2}


@probe(_t)
def frozenset_has_no_add_raises(x):
    s = frozenset((1, 2))
    s.add(3)
    return x


@probe(_t)
def set_of_tensor_identity(x):
    y = x.add_(1)
    s = {x}
    s.add(y)
    return len(s), x in s, 1 in s


@probe(_t)
def set_comprehension(x):
    s = {v % 3 for v in range(10)}
    return x + len(s), sorted(s)


# ---------------------------------------------------------------- str

@probe(_t)
def str_split_maxsplit_and_rsplit(x):
    s = "a,b,,c"
    return x + 1, (s.split(","), s.split(",", maxsplit=1), s.rsplit(",", 1), " a  b ".split(), "".split(","))


@probe(_t)
def str_partition_and_strip(x):
    return x + 1, ("k=v=w".partition("="), "k=v=w".rpartition("="), "xxhixx".strip("x"), " a ".lstrip())


@probe(_t)
def str_format_method_and_percent(x):
    return x + 1, ("{0}-{1:>4}-{name!r}".format(1, "ab", name="n"), "%d%%|%5.1f|%s" % (3, 2.25, [1]),
                   "{:,}".format(10 ** 6), f"{3.14159:.3}", f"{'q'!r:>5}")


@probe(_t)
def str_format_missing_key_raises(x):
    return "{a}".format(b=1), x  # noqa


@probe(_t)
def str_percent_too_few_raises(x):
    return "%s %s" % (1,), x  # noqa


@probe(_t)
def fstring_of_shape(x):
    tmp = f"{x.shape[0]} items"
    if tmp.startswith("4"):
        return x + 1, tmp
    return x - 1, tmp


@probe(_t)
def fstring_of_tensor_class_name(x):
    return x + 1, f"{x.__class__.__name__}:{type(x).__module__}"


@probe(_t)
def str_case_and_predicates(x):
    s = "Hello World 42"
    return x + 1, (s.upper(), s.lower(), s.title(), s.swapcase(), s.casefold(), "42".isdigit(),
                   "ab1".isalnum(), " ".isspace(), "Abc".istitle(), "".isalpha())


@probe(_t)
def str_find_index_count(x):
    s = "banana"
    return x + s.find("an") + s.rfind("an"), s.find("zz"), s.count("a"), s.count("an", 2)


@probe(_t)
def str_index_missing_raises(x):
    return "abc".index("z") + x


@probe(_t)
def str_replace_count_and_join(x):
    return x + 1, "a-a-a".replace("-", "+", 1), "|".join(("x", "y")), "".join(map(str, range(4)))


@probe(_t)
def str_padding(x):
    return x + 1, ("7".zfill(3), "-7".zfill(4), "ab".center(6, "*"), "ab".ljust(4, "."), "ab".rjust(4))


@probe(_t)
def str_startswith_tuple_and_slicing(x):
    s = "prefix_body"
    return x + s.startswith(("no", "pre")) + s.endswith("dy", 0, 20), s[::-1], s[2:-2:3]


@probe(_t)
def str_encode_and_bytes(x):
    b = "héllo".encode("utf-8")
    return x + len(b), b, b.decode(), bytes([65, 66]), b"ab" + b"c"


@probe(_t)
def str_multiplication_and_in(x):
    return x + 1, "ab" * 3, "" * 5, "b" in "abc", "" in "abc"


@probe(_t)
def str_concat_int_raises(x):
    return "a" + 1, x


@probe(_t)
def str_comparisons(x):
    return x + 1, ("a" < "b", "B" < "a", "abc" < "abd", "a" < "aa", "Z" == "z")


@probe(_t)
def str_splitlines_and_expandtabs(x):
    return x + 1, ("a\nb\r\nc".splitlines(), "a\nb\n".splitlines(keepends=True), "a\tb".expandtabs(4))


@probe(_t)
def str_removeprefix_suffix(x):
    return x + 1, ("test_abc".removeprefix("test_"), "abc.py".removesuffix(".py"), "abc".removeprefix("z"))


@probe(_t)
def str_translate_maketrans(x):
    table = str.maketrans("ab", "xy", "c")
    return x + 1, "abcabc".translate(table)


# ---------------------------------------------------------------- math

@probe(_t)
def math_floor_ceil_return_int(x):
    f, c, t = math.floor(-2.5), math.ceil(2.1), math.trunc(-2.7)
    return x + f + c + t, type(f).__name__, (f, c, t)


@probe(_t)
def math_radians_degrees(x):
    return x + math.radians(12) + math.degrees(1.0)


@probe(_t)
def math_functions_mix(x):
    return x + math.sqrt(16) + math.log(8, 2) + math.exp(0) + math.hypot(3, 4), (math.isclose(0.1 + 0.2, 0.3),
                                                                                 math.copysign(2, -0.0), math.fabs(-3))


@probe(_t)
def math_integer_functions(x):
    return x + math.gcd(12, 18, 30) + math.lcm(4, 6), (math.comb(5, 2), math.perm(5, 2), math.factorial(5),
                                                        math.isqrt(17), math.prod([2, 3], start=2))


@probe(_t)
def math_sqrt_negative_raises(x):
    return x + math.sqrt(-1)


@probe(_t)
def math_log_zero_raises(x):
    return x + math.log(0)


@probe(_t)
def math_inf_nan_predicates(x):
    return x + 1, (math.isinf(math.inf), math.isnan(math.nan), math.isfinite(1e308 * 10), math.isnan(math.inf - math.inf))  # noqa


@probe(_t)
def math_fsum_vs_sum(x):
    vals = [0.1] * 10
    return x + math.fsum(vals), math.fsum(vals) == 1.0, sum(vals) == 1.0


@probe(_t)
def math_floor_of_tensor_shape(x):
    return x * math.floor(x.shape[0] / 3) + math.ceil(x.shape[0] / 3)


@probe(_t)
def math_factorial_float_raises(x):
    return x + math.factorial(2.5)


@probe(_t)
def math_pi_e_constants(x):
    return x * math.pi + math.e + math.tau


@probe(_t)
def math_modf_frexp_ldexp(x):
    return x + 1, (math.modf(3.25), math.frexp(8.0), math.ldexp(0.5, 3), math.fmod(-7, 3), -7 % 3)


# ---------------------------------------------------------------- numbers' methods

@probe(lambda: (torch.tensor([1.0]), 1.0))
def float_is_integer_true(t, m):
    return 2 * t if m.is_integer() else t


@probe(lambda: (torch.tensor([1.0]), 2.5))
def float_is_integer_false(t, m):
    return 2 * t if m.is_integer() else t


@probe(_t)
def number_methods_results(x):
    return x + (7).bit_length(), ((3).as_integer_ratio(), (2.5).as_integer_ratio(), (1.5).hex(), (3).conjugate(),
                                  (-7).bit_count(), (255).to_bytes(2, "big"), int.from_bytes(b"\x01\x00", "little"))


@probe(_t)
def int_float_arithmetic_types(x):
    a, b, c, d = 7 // 2, 7 / 2, -7 // 2, 7.0 // 2
    return x + a + b + c + d, (a, b, c, d, type(d).__name__, 2 ** -1, (-2) ** 2, 10 % -3)


@probe(_t)
def int_division_by_zero_raises(x):
    return x + 1 // 0


@probe(_t)
def float_modulo_by_zero_raises(x):
    return x + 1.5 % 0.0


@probe(_t)
def bool_arithmetic(x):
    return x + True + True, (True + True, True * 3.0, -True, ~True, True & False, True | 2, type(True & True).__name__)


@probe(_t)
def int_bitwise_shifts(x):
    return x + (1 << 5) + (-16 >> 2), (5 & 3, 5 | 3, 5 ^ 3, ~5)


@probe(_t)
def negative_shift_raises(x):
    return x + (1 << -1)


@probe(_t)
def big_int_arithmetic(x):
    big = 2 ** 70
    return x + 1, (big * 3, big // 7, big % 97, -big >> 3)


# ---------------------------------------------------------------- itertools

@probe(_t)
def itertools_product_repeat(x):
    v = x
    for a, b in itertools.product([1, 2], repeat=2):
        v = v + a * b
    return v, list(itertools.product("ab", [0]))


@probe(_t)
def itertools_chain_from_iterable(x):
    v = x
    for item in itertools.chain.from_iterable([[x, 1], [2]]):
        v = v + item
    return v


@probe(_t)
def itertools_combinations_permutations(x):
    return x + 1, (list(itertools.combinations(range(4), 2)), list(itertools.permutations("abc", 2)),
                   list(itertools.combinations_with_replacement([1, 2], 2)))


@probe(_t)
def itertools_zip_longest_fillvalue(x):
    return x + 1, list(itertools.zip_longest([1, 2, 3], "ab", fillvalue="-"))


@probe(_t)
def itertools_islice_chain(x):
    a = [x + 1, x + 2]
    b = [x + 3, x + 4]
    p, q = list(itertools.islice(itertools.chain(a, b), 1, 3))
    return p - q, next(itertools.islice(a, 1, None))


@probe(_t)
def itertools_accumulate_initial(x):
    return x + 1, (list(itertools.accumulate([1, 2, 3])), list(itertools.accumulate([1, 2, 3], max, initial=2)),
                   list(itertools.accumulate([2, 3], lambda a, b: a * b)))


@probe(_t)
def itertools_groupby(x):
    groups = [(k, len(list(g))) for k, g in itertools.groupby("aaabccdd")]
    return x + len(groups), groups


@probe(_t)
def itertools_count_cycle_repeat(x):
    c = itertools.count(5, 2)
    cy = itertools.cycle("ab")
    return x + next(c) + next(c), [next(cy) for _ in range(3)], list(itertools.repeat(1, 3))


@probe(_t)
def itertools_takewhile_dropwhile_starmap(x):
    return x + 1, (list(itertools.takewhile(lambda v: v < 3, [1, 2, 5, 1])),
                   list(itertools.dropwhile(lambda v: v < 3, [1, 2, 5, 1])),
                   list(itertools.starmap(pow, [(2, 3), (3, 2)])), list(itertools.pairwise([1, 2, 3])))


@probe(_t)
def itertools_tee_and_compress(x):
    a, b = itertools.tee([1, 2, 3])
    return x + 1, list(a), list(b), list(itertools.compress("abcd", [1, 0, 1, 0]))


# ---------------------------------------------------------------- namedtuple, NamedTuple, dataclass

_Point = collections.namedtuple("_Point", ["x", "y", "z"], defaults=(0, None))


class _Pair(typing.NamedTuple):
    first: torch.Tensor
    second: torch.Tensor

    def total(self):
        return self.first + self.second

    @staticmethod
    def one():
        return 1

    @classmethod
    def name(cls):
        return cls.__name__


@probe(_t)
def namedtuple_defaults_and_fields(x):
    p = _Point(x, y=2)
    q = p._replace(z=3)
    return p, q, p._fields, q._asdict()["z"], p.z


@probe(_t)
def namedtuple_returned_type(x):
    return _Point(x + 1, 2, 3)


@probe(_t)
def namedtuple_bad_kwarg_raises(x):
    return _Point(x, w=1)


@probe(_t)
def namedtuple_made_in_frame(x):
    T = collections.namedtuple("T", "a b c")
    t = T(x, x + 1, 2)
    u = T._make([t.a, t[1], t.c + 1])
    return u.a + u.b, tuple(u)[2], T._fields, isinstance(u, tuple)


@probe(_t)
def typed_namedtuple_methods(x):
    p = _Pair(x, x * 2)
    return p.total(), p.one(), p.name(), p


@probe(_t)
def namedtuple_duck_check(x):
    p = _Pair(x, x)

    def looks_named(o):
        return isinstance(o, tuple) and hasattr(o, "_asdict") and hasattr(o, "_fields")
    return x + looks_named(p) * 2 + looks_named((1, 2)), hasattr(x.shape, "_fields")


@dataclasses.dataclass
class _Out:
    scalar: int = 2
    named: dict = dataclasses.field(default_factory=dict)
    items: list = dataclasses.field(default_factory=list)

    def scale(self):
        return self.scalar * 2


@probe(_t)
def dataclass_factory_defaults(x):
    a = _Out(1)
    b = _Out(5, named={"x": x})
    c = _Out()
    c.scalar = 6
    c.named["x"] = x
    return torch.cos(x) * a.scale() + b.named["x"] + c.scalar, c.named["x"], a.items, a == _Out(1)


@probe(_t)
def dataclass_fields_and_asdict(x):
    o = _Out(3, {"k": 1}, [2])
    return x + 1, [f.name for f in dataclasses.fields(o)], dataclasses.asdict(o), dataclasses.replace(o, scalar=9).scalar  # noqa


@probe(_t)
def dataclass_frozen_assign_raises(x):
    @dataclasses.dataclass(frozen=True)
    class F:
        v: int
    f = F(1)
    f.v = 2
    return x


@probe(_t)
def dataclass_inheritance_order(x):
    @dataclasses.dataclass
    class Base:
        a: int
        b: int

    @dataclasses.dataclass
    class Child(Base):
        c: list = dataclasses.field(default_factory=list)
    ch = Child(1, 2)
    return x * ch.a + ch.b, repr(ch).split("(")[1]


# ---------------------------------------------------------------- type checks

@probe(_t)
def type_is_checks(x):
    return x + 1, (type(x) is torch.Tensor, type(1) is int, type(True) is int, type([]) == list,  # noqa
                   type(x).__name__, type(x.shape).__name__)


@probe(lambda: (torch.nn.Parameter(torch.randn(3)),))
def parameter_isinstance(p):
    return p * 2, isinstance(p, torch.Tensor), type(p) is torch.Tensor, isinstance(p, torch.nn.Parameter)


@probe(_t)
def isinstance_abc(x):
    import collections.abc as abc
    return x + 1, (isinstance([], abc.Sequence), isinstance({}, abc.Mapping), isinstance((), abc.MutableSequence),
                   isinstance("s", abc.Iterable), isinstance(len, abc.Callable), isinstance(x, abc.Sized))


@probe(_t)
def isinstance_of_ordered_dict(x):
    d = {"x": x}
    od = collections.OrderedDict(d)
    return x + isinstance(od, dict) + isinstance(d, collections.OrderedDict) * 2, type(od).__name__


@probe(_t)
def class_identity_and_eq(x):
    class C:
        pass
    return x + 1, (C() == None, C() != None, C() == C(), C is C, C() is C())  # noqa: E711


@probe(_t)
def hasattr_on_class_attribute(x):
    class C:
        a = 1
    if hasattr(C, "a"):
        x = x + 1
    if hasattr(C, "b"):
        x = x + 2
    return x


@probe(_t)
def class_dict_contains(x):
    class A:
        k = 4

        def __init__(self):
            self.inst = 6
    a = A()
    return x + ("k" in type(a).__dict__) + ("inst" in type(a).__dict__) * 2 + ("inst" in a.__dict__) * 4


@probe(_t)
def mro_and_super_calls(x):
    class A:
        def f(self):
            return 1

    class B(A):
        def f(self):
            return super().f() + 10

    class C(A):
        def f(self):
            return super().f() + 100

    class D(B, C):
        def f(self):
            return super().f() + 1000
    return x + D().f(), [k.__name__ for k in D.__mro__]


# ---------------------------------------------------------------- tensor methods returning Python values

@probe(_t2d)
def tensor_size_stride_dim(x):
    return x + x.dim(), (x.size(), x.size(-1), x.stride(), x.stride(0), x.ndim, x.ndimension(), x.numel(), x.nelement())


@probe(_t2d)
def tensor_size_bad_dim_raises(x):
    return x.size(5)


@probe(_t2d)
def tensor_element_size_and_dtype_props(x):
    return x + x.element_size(), (x.dtype.is_floating_point, x.dtype.is_complex, x.dtype.itemsize, str(x.dtype),
                                  x.is_floating_point(), x.is_complex(), torch.is_floating_point(input=x))


@probe(_t2d)
def tensor_device_and_layout(x):
    return x + 1, (x.device.type, x.is_cuda, x.is_sparse, x.is_quantized, x.layout == torch.strided,
                   x.requires_grad, x.is_leaf, x.is_meta)


@probe(_t2d)
def tensor_contiguity_checks(x):
    y = x.t()
    return x + 1, (x.is_contiguous(), y.is_contiguous(), y.contiguous().is_contiguous(),
                   x.is_contiguous(memory_format=torch.contiguous_format))


@probe(_t2d)
def tensor_shape_arithmetic(x):
    new = x.size()[:-1] + (2, 2)
    v = x.view(*new)
    return v.permute(0, 2, 1), type(new).__name__, x.shape.numel(), x.shape == (3, 4), x.shape == [3, 4]


@probe(_t2d)
def tensor_shape_as_dict_key(x):
    cache = {}
    if x.shape not in cache:
        cache[x.shape] = x
    return x + cache[x.shape], list(cache)


@probe(_t2d)
def tensor_type_string(x):
    m = x.to(torch.float16)
    return x.type(m.type()), m.type(), x.type()


@probe(_t2d)
def tensor_len_and_dunder_len(x):
    return x + len(x) + x.__len__()


@probe(lambda: (torch.tensor(3.5),))
def tensor_len_zero_dim_raises(x):
    return len(x)


@probe(lambda: (torch.tensor([2.5]),))
def tensor_item_and_float(x):
    return float(x) + x.item() + int(x), type(x.item()).__name__


@probe(lambda: (torch.tensor([1.0, 2.0]),))
def tensor_float_of_multi_elem_raises(x):
    return float(x + 1)


@probe(lambda: (torch.tensor([[1, 2], [3, 4]]),))
def tensor_tolist(x):
    return x.tolist(), (x * 2).tolist()[1]


@probe(_t2d)
def tensor_bool_ambiguous_raises(x):
    if x:
        return x
    return -x


@probe(_t)
def tensor_in_list_compares_elementwise(x):
    return x in [x + 0, 1]


@probe(_t)
def tensor_identity_after_inplace(x):
    y = x.add_(1)
    z = x.clone()
    return y is x, z is x, x is not y


@probe(_t)
def torch_finfo_iinfo(x):
    if torch.iinfo(torch.int32).bits == 32:
        return torch.finfo(x.dtype).min * x, torch.finfo(torch.float16).eps, torch.iinfo(torch.int8).max


@probe(_t)
def torch_dtype_comparisons(x):
    return x + 1, (x.dtype == torch.float32, x.dtype == torch.get_default_dtype(),
                   torch.promote_types(torch.int32, torch.float32) == x.dtype, x.dtype is torch.float)


@probe(_t)
def torch_size_ops(x):
    s = torch.Size([2, 3])
    return x + s[1], (s + (4,), s[1:], len(s), s.numel(), s.count(3), s.index(3), isinstance(s, tuple))


@probe(_t)
def torch_is_tensor_and_is_grad_enabled(x):
    return x + 1, (torch.is_tensor(x), torch.is_tensor([x]), torch.is_grad_enabled(), torch.is_storage(x))


@probe(lambda: (torch.randn(2, 2), torch.randn(6, 4, 5)))
def tensor_size_indexed_by_shape(x, y):
    i = x.shape[-1]
    return x + y.shape[i]


@probe(_t2d)
def tensor_numpy_attributes(x):
    a = x.numpy()
    return a.shape, a.ndim, a.size, a.strides, a.itemsize, torch.from_numpy(a.T)


@probe(_t)
def tensor_new_with_size(x):
    y = torch.rand(5, 8)
    z = x.new(y.size())
    return z.shape, z.dtype


@probe(_t)
def list_index_by_zero_dim_tensor(x):
    vals = [x, x + 1, x + 2]
    return vals[torch.as_tensor(2)]


@probe(_t)
def tensor_dim_out_of_range_raises(x):
    return x.sum(dim=3)


@probe(_t)
def tensor_view_bad_shape_raises(x):
    return x.view(3, 5)


@probe(lambda: (torch.ones(3), torch.ones(4)))
def tensor_broadcast_mismatch_raises(x, y):
    return x + y


@probe(_t)
def set_intersection_keeps_walked_equal_item(x):
    s = {1, 2, 3}
    s &= {1.0}
    return x + 1, repr(s), repr({1.0}.intersection({1, 2})), repr({5}.union([1, 1.0]))
