"""Probes restating behaviours torch's dynamo set and unspecialized-scalar tests rely on: sets and frozensets
of Python values (operators, methods, iteration order of ints, mutation of arguments, sets of tensors by
identity), and Python ints / floats / numpy scalars passed as arguments whose values change between calls
(no stale specialization), scalars from `.item()`, and random module state."""
import math
import random

import numpy as np
import torch

from . import probe


def _x():
    return (torch.randn(3),)


# ---- sets --------------------------------------------------------------------------------------------

@probe(_x)
def set_operators(x):
    a, b = {1, 2, 3}, {2, 3, 4}
    return x * len(a | b), sorted(a & b), sorted(a - b), sorted(a ^ b), a <= {1, 2, 3, 4}, a < a


@probe(_x)
def set_methods(x):
    s = {1, 2}
    s.add(3)
    s.discard(10)
    s.update([4, 5], (6,))
    s.remove(1)
    p = s.pop()
    return x + len(s), sorted(s), p in (2, 3, 4, 5, 6), s.isdisjoint({100}), s.issuperset({4})


@probe(_x)
def set_remove_missing_raises(x):
    s = {1}
    try:
        s.remove(2)
    except KeyError as e:
        return x, e.args
    return None


@probe(_x)
def frozenset_ops_and_hash(x):
    f = frozenset([1, 2])
    d = {f: x * 2}
    return d[frozenset([2, 1])], f | {3}, type(f | {3}).__name__, f.union([5]) == frozenset({1, 2, 5})


@probe(_x)
def set_iteration_small_ints(x):
    out = x
    for v in {3, 1, 2}:
        out = out * 10 + v
    return out, list({5, 3, 9})


@probe(_x)
def set_comprehension_and_membership(x):
    s = {i % 3 for i in range(10)}
    return x * (2 in s), sorted(s), 5 not in s


@probe(lambda: (torch.randn(3), {1, 2}))
def set_argument_mutated(x, s):
    s.add(len(s) + 1)
    return x * len(s), sorted(s)


@probe(lambda: (torch.randn(3), {"a", "b"}))
def set_of_strings_argument(x, s):
    return x * ("a" in s), sorted(s), len(s)


@probe(lambda: (torch.randn(3), torch.randn(3)))
def set_of_tensors_identity(x, y):
    s = {x, y, x}
    return len(s), x in s, (x + y) in s


@probe(_x)
def set_update_ops_inplace(x):
    s = {1, 2, 3}
    s &= {2, 3, 4}
    s |= {9}
    s -= {3}
    s ^= {1}
    return x + len(s), sorted(s)


@probe(_x)
def set_from_tensor_shape(x):
    return set(x.shape), {x.dim(), 5}, x.shape[0] in {3, 4}


@probe(_x)
def set_difference_update_intersection_update(x):
    s = {1, 2, 3, 4}
    s.difference_update({1})
    s.intersection_update({2, 3, 7})
    s.symmetric_difference_update({3, 8})
    return x * len(s), sorted(s)


@probe(_x)
def set_copy_clear_independent(x):
    s = {1, 2}
    c = s.copy()
    s.clear()
    return x + len(c), len(s), sorted(c)


@probe(_x)
def set_equality_with_frozenset(x):
    return {1, 2} == frozenset({1, 2}), {1} != {2}, x + 1


@probe(_x)
def dict_keys_set_ops(x):
    d = {"a": 1, "b": 2}
    return sorted(d.keys() & {"a", "c"}), sorted(d.keys() | {"z"}), x * len(d.keys() - {"a"})


G_SET = {1, 2}


def _reset_gset():
    G_SET.clear()
    G_SET.update({1, 2})
    return _x()


def _grow_gset(x):
    G_SET.add(max(G_SET) + 1)


@probe(_reset_gset, calls=3, between=_grow_gset)
def global_set_grows_between(x):
    return x * len(G_SET), 3 in G_SET


# ---- unspecialized python scalars ---------------------------------------------------------------------

def _bump_int(x, n):
    pass


_STATE = {"n": 2, "f": 0.5}


def _reset_state():
    _STATE.update(n=2, f=0.5)
    return _x()


def _inc_state(x):
    _STATE["n"] += 1
    _STATE["f"] *= 1.5


@probe(_reset_state, calls=4, between=_inc_state)
def int_from_dict_changes_between(x):
    return x * _STATE["n"], _STATE["n"] + 1


@probe(_reset_state, calls=4, between=_inc_state)
def float_from_dict_changes_between(x):
    return x + _STATE["f"], math.floor(_STATE["f"] * 10)


class ArgSeq:
    """Arguments changing on each call: make_args returns a mutable box the between step advances."""


def _int_box():
    return (torch.randn(3), [1])


def _next_int(x, box):
    box[0] += 2


@probe(_int_box, calls=4, between=_next_int)
def int_in_list_arg_changes(x, box):
    n = box[0]
    return x * n, x.new_zeros(n).shape, n // 2, n % 3


@probe(_int_box, calls=4, between=_next_int)
def int_used_as_shape(x, box):
    n = box[0]
    return torch.ones(n) * x.sum(), torch.arange(n).sum(), x.repeat(n).shape


@probe(_int_box, calls=4, between=_next_int)
def int_used_in_python_branch(x, box):
    n = box[0]
    if n > 4:
        return x * 100
    return x + n


@probe(_int_box, calls=4, between=_next_int)
def int_indexing_tensor(x, box):
    t = torch.arange(10.0)
    n = box[0]
    return t[n], t[:n], t[n:n + 2]


def _float_box():
    return (torch.randn(3), [0.25])


def _next_float(x, box):
    box[0] = box[0] * 3 + 0.125


@probe(_float_box, calls=4, between=_next_float)
def float_arithmetic_and_math(x, box):
    f = box[0]
    return x * f, f * 2, math.sqrt(f), round(f, 2), int(f), f > 1.0


@probe(_float_box, calls=3, between=_next_float)
def float_to_tensor_ops(x, box):
    f = box[0]
    return torch.tensor(f), torch.full((2,), f), x.clamp(max=f), torch.tensor([f, 1.0]).dtype


@probe(_float_box, calls=3, between=_next_float)
def float_into_pow_and_div(x, box):
    f = box[0]
    return x.abs() ** f, f / (1 + f), x / f, 2 ** f


@probe(lambda: (torch.randn(3), [True]), calls=3, between=lambda x, b: b.__setitem__(0, not b[0]))
def bool_in_list_flips(x, box):
    return x * box[0], (x + 1) if box[0] else (x - 1)


@probe(lambda: (torch.randn(3), [np.float32(1.5)]), calls=3,
       between=lambda x, b: b.__setitem__(0, np.float32(b[0] * 2)))
def numpy_float32_scalar_changes(x, box):
    v = box[0]
    return x * v, type(v * 2).__name__, float(v)


@probe(lambda: (torch.randn(3), [np.int64(3)]), calls=3,
       between=lambda x, b: b.__setitem__(0, np.int64(b[0] + 1)))
def numpy_int64_scalar_changes(x, box):
    v = box[0]
    return x * v, int(v) + 1, torch.ones(int(v)).shape


@probe(lambda: (torch.randn(3), 2), calls=2)
def int_arg_same_value(x, n):
    return x * n, n * n


@probe(lambda: (torch.randn(3), -0.0), calls=2)
def negative_zero_float_arg(x, f):
    return x * f, math.copysign(1.0, f), str(f)


_NAN = {"v": float("nan")}


@probe(lambda: (torch.randn(3),), calls=2)
def nan_float_read_from_dict(x):
    f = _NAN["v"]       # (a NaN argument would never compare equal to eager's)
    return torch.isnan(x + f), f != f, math.isnan(f), str(f)


@probe(lambda: (torch.randn(3), float("inf")), calls=2)
def inf_float_arg(x, f):
    return x * 0 + f, f > 1e308, -f


@probe(lambda: (torch.randn(3), 2 ** 40), calls=2)
def large_int_arg(x, n):
    return x * (n % 7), n * 3, n.bit_length()


@probe(lambda: (torch.randn(3), True), calls=2)
def bool_arg_arithmetic(x, b):
    return x * b, b + 1, type(b + 1).__name__


@probe(lambda: (torch.tensor(2.5), torch.randn(3)))
def item_scalar_into_python(t, x):
    v = t.item()
    return x * v, v * 2, type(v).__name__, int(v)


@probe(lambda: (torch.tensor(3), torch.randn(5)))
def int_item_used_as_slice(t, x):
    n = t.item()
    return x[:n], n + 1


@probe(lambda: (torch.tensor([1.0, 2.0, 3.0]),))
def python_sum_over_items(x):
    return sum(v.item() for v in x), float(x[0]), int(x[1])


@probe(lambda: (torch.randn(3),))
def float_of_zero_dim_tensor(x):
    s = x.sum()
    return float(s) * 2, bool(s > 100), s.item() == float(s)


@probe(_int_box, calls=4, between=_next_int)
def int_as_reshape_arg(x, box):
    n = box[0]
    t = torch.arange(float(n * 2))
    return t.reshape(n, 2), t.view(2, n).sum(0)


@probe(_int_box, calls=4, between=_next_int)
def int_in_range_loop_unrolled(x, box):
    acc = x
    for i in range(box[0]):
        acc = acc + i
    return acc


@probe(_int_box, calls=4, between=_next_int)
def int_in_string_and_list_ops(x, box):
    n = box[0]
    return f"n={n}", [0] * n, list(range(n))[-1], x * len(str(n))


# ---- random module ------------------------------------------------------------------------------------

@probe(lambda: (random.seed(1), torch.randn(3))[1:], calls=3)
def python_random_random(x):
    return x * random.random(), random.randint(1, 10)


@probe(lambda: (random.seed(2), torch.randn(3))[1:], calls=2)
def python_random_seeded_inside(x):
    random.seed(7)
    a = random.random()
    random.seed(7)
    return x + a, a == random.random()


@probe(lambda: (torch.randn(3),), calls=2)
def local_random_instance(x):
    r = random.Random(3)
    return x * r.random(), r.choice([1, 2, 3]), r.uniform(0, 1)


@probe(lambda: (random.seed(4), torch.randn(5))[1:], calls=2)
def random_shuffle_list(x):
    idx = list(range(5))
    random.shuffle(idx)
    return x[idx], idx


@probe(lambda: (np.random.seed(3), torch.randn(3))[1:], calls=2)
def numpy_random_in_compiled(x):
    return x * float(np.random.rand()), np.random.randint(0, 5)
