"""Probes restating behaviours torch's dynamo unspecialized-scalar tests rely on: a Python int or float
argument whose value changes between calls (so it becomes symbolic after the first recompile) used in
Python arithmetic with CPython's exact semantics (floor division and modulo of negatives, banker's
rounding, int/float conversions, shifts and bitwise ops, big ints, division by zero), in comparisons,
and as a scalar in tensor ops (dtype promotion, integer wrap-around)."""
import math

import torch

from . import probe

INTS = [7, -7, 12, -3, 5]
FLOATS = [2.5, -3.75, 0.1, 7.3, -0.5]


def int_probe(fn):
    """A probe given (x, box) where box[0] is a different int on each of 5 calls."""
    return probe(_ints_fn, calls=5, between=_next_ints)(fn)


def _ints_fn():
    return (torch.arange(4.0), [INTS[0]])


def _next_ints(x, box):
    box[0] = INTS[(INTS.index(box[0]) + 1) % len(INTS)]


def _floats_fn():
    return (torch.arange(4.0), [FLOATS[0]])


def _next_floats(x, box):
    box[0] = FLOATS[(FLOATS.index(box[0]) + 1) % len(FLOATS)]


def float_probe(fn):
    """A probe given (x, box) where box[0] is a different float on each of 5 calls."""
    return probe(_floats_fn, calls=5, between=_next_floats)(fn)


# ---- ints ---------------------------------------------------------------------------------------------

@int_probe
def int_floordiv_mod_negative(x, box):
    n = box[0]
    return n // 3, n % 3, n // -4, n % -4, -n // 2, divmod(n, 5), divmod(n, -5)


@int_probe
def int_true_div_and_round(x, box):
    n = box[0]
    return n / 2, round(n / 2), round(n / 4, 1), int(n / 3), math.floor(n / 3), math.ceil(n / 3), math.trunc(n / 3)


@int_probe
def int_bitwise_and_shifts(x, box):
    n = box[0]
    return n >> 1, n << 3, n & 6, n | 9, n ^ 5, ~n, n << 70


@int_probe
def int_pow_and_abs(x, box):
    n = box[0]
    return n ** 2, n ** 3, abs(n), -n, +n, pow(n, 2, 5), 2 ** abs(n)


@int_probe
def int_negative_pow_is_float(x, box):
    n = box[0]
    return n ** -1, type(n ** -1).__name__, n ** 0


@int_probe
def int_comparisons_and_minmax(x, box):
    n = box[0]
    return n > 0, n == 7, n != -7, max(n, 0), min(n, 0), n in (7, 12), n == 7.0, 0 < n < 10


@int_probe
def int_conversions(x, box):
    n = box[0]
    return float(n), str(n), bool(n), hash(n) == hash(n), n.bit_length(), int(str(n)), f"{n:+05d}"


@int_probe
def int_times_float_tensor(x, box):
    n = box[0]
    return x * n, x + n, x // n, x % n, torch.remainder(x, n), torch.fmod(x, n)


@int_probe
def int_with_int_tensor(x, box):
    n = box[0]
    t = torch.arange(4)
    return t * n, t // n, t % n, (t + n).dtype, t.div(n, rounding_mode="floor"), t / n


@int_probe
def int_with_int8_tensor_wraps(x, box):
    n = box[0]
    t = torch.tensor([100, -100, 5], dtype=torch.int8)
    return t + n * 10, (t * n).dtype, t * n


@int_probe
def int_with_uint8_tensor(x, box):
    n = box[0]
    t = torch.tensor([0, 5, 250], dtype=torch.uint8)
    return t + abs(n), t - abs(n)


@int_probe
def int_to_tensor_factory(x, box):
    n = box[0]
    return torch.tensor(n), torch.tensor([n, 1]), torch.full((2,), n), torch.scalar_tensor(n), torch.tensor(n).dtype


@int_probe
def int_as_size_and_index(x, box):
    n = abs(box[0])
    t = torch.arange(20.0)
    return t[n], t[:n].sum(), t[-n], t.narrow(0, 1, n).shape, torch.zeros(n).shape


@int_probe
def int_in_python_list_ops(x, box):
    n = box[0]
    lst = list(range(10))
    return lst[n % 10], lst[n % 10:], [n] * 2, (n, n + 1)[n % 2], range(abs(n))[-1]


@int_probe
def int_division_by_zero_raises(x, box):
    n = box[0]
    try:
        return n // (n - n)
    except ZeroDivisionError as e:
        return str(e), x * n


@int_probe
def int_modulo_zero_tensor(x, box):
    n = box[0]
    return x.clamp(min=n, max=n + 5), x.pow(n % 3), torch.clamp(x, n)


@int_probe
def int_sum_with_floats(x, box):
    n = box[0]
    return n + 0.5, n * 1.5, n - 0.25, (n + 0.5).is_integer(), n * 1e300 * 1e10


@int_probe
def int_sqrt_log_math(x, box):
    n = abs(box[0])
    return math.sqrt(n), math.log(n), math.exp(n / 10), math.factorial(n % 6), math.gcd(n, 12), math.isqrt(n)


@int_probe
def int_in_tensor_reshape_expand(x, box):
    n = abs(box[0])
    return x.unsqueeze(0).expand(n, 4).sum(0), x.repeat(n).shape, torch.cat([x] * n).shape


@int_probe
def int_as_dim_arg(x, box):
    n = box[0]
    t = torch.arange(24.0).reshape(2, 3, 4)
    return t.sum(n % 3), t.transpose(n % 3, -1).shape


@int_probe
def int_string_format_and_join(x, box):
    n = box[0]
    return "%d|%x|%o" % (n, abs(n), abs(n)), ",".join(str(i) for i in range(abs(n) % 4)), repr(n)


@int_probe
def int_tensor_item_mixed(x, box):
    n = box[0]
    s = int(x.sum().item())
    return s + n, s // n, s % n


@int_probe
def int_bool_conditional_chain(x, box):
    n = box[0]
    if n > 10:
        return x * 3
    elif n < -5:
        return x - 3
    elif n % 2:
        return x + 1
    return x


# ---- floats -------------------------------------------------------------------------------------------

@float_probe
def float_floordiv_mod(x, box):
    f = box[0]
    return f // 1, f % 1, f // -0.7, f % -0.7, divmod(f, 2.0), -f // 3


@float_probe
def float_round_and_int(x, box):
    f = box[0]
    return round(f), round(f, 1), int(f), math.floor(f), math.ceil(f), math.trunc(f), round(f * 2) / 2


@float_probe
def float_precision_python_double(x, box):
    f = box[0]
    return math.floor((f + 0.2) * 1e12), f * 3 == f + f + f, (f * 0.1).hex(), repr(f / 3)


@float_probe
def float_pow_negative_base(x, box):
    f = box[0]
    try:
        r = f ** 0.5
    except ValueError as e:
        r = str(e)
    return r, type(f ** 0.5).__name__, f ** 2, abs(f) ** -1.5


@float_probe
def float_times_tensors_keep_dtype(x, box):
    f = box[0]
    h = torch.ones(2, dtype=torch.float16)
    i = torch.arange(3)
    return x * f, h * f, (h * f).dtype, i * f, (i * f).dtype, (i + f).dtype


@float_probe
def float_tensor_factory_dtype(x, box):
    f = box[0]
    return torch.tensor(f), torch.tensor(f).dtype, torch.full((2,), f).dtype, torch.tensor([f, 1]).dtype


@float_probe
def float_comparisons(x, box):
    f = box[0]
    return f > 0, f == 2.5, f < 0.1, f <= 0.1, max(f, 0.0), min(f, 1), f == int(f)


@float_probe
def float_math_funcs(x, box):
    f = box[0]
    return math.sin(f), math.atan2(f, 1.0), math.fabs(f), math.copysign(2, f), math.exp(f), math.hypot(f, 3)


@float_probe
def float_string_format(x, box):
    f = box[0]
    return f"{f:.3f}", str(f), "%g" % f, f.is_integer(), f.as_integer_ratio()


@float_probe
def float_division_by_zero(x, box):
    f = box[0]
    try:
        return f / (f - f)
    except ZeroDivisionError as e:
        return str(e), (x + 1) / (f - f)


@float_probe
def float_clamp_and_where(x, box):
    f = box[0]
    return x.clamp(min=f), torch.where(x > f, x, f), x.masked_fill(x > f, f), torch.maximum(x, torch.tensor(f))


@float_probe
def float_to_int_for_size(x, box):
    f = abs(box[0])
    n = int(f) + 1
    return torch.ones(n).shape, x[:n], math.floor(f) + 1


@float_probe
def float_in_lerp_and_addcmul(x, box):
    f = box[0]
    return torch.lerp(x, x * 2, f), torch.addcmul(x, x, x, value=f), x.add(x, alpha=f), x.mul(f).sub_(f)


@float_probe
def float_and_int_tensor_inplace_raises(x, box):
    f = box[0]
    t = torch.arange(3)
    try:
        t.add_(f)
    except RuntimeError as e:
        return "raised", str(e)[:40]
    return t


@float_probe
def float_nan_inf_ops(x, box):
    f = box[0]
    return math.isfinite(f * 1e308 * 10), math.isinf(f * 1e308 * 10), (f * 1e308 * 10) > 0
