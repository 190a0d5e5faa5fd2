"""Draws from Python's `random` module (`random.random()`, `random.randint(a, b)`...): made by the
transformed code itself, in trace order, before the graph runs, and fed to it as inputs.

Compile time only. The module's functions are methods of one hidden `random.Random` instance, whose
state only their own calls move. So a draw is exact when the real function is called at run time with
the same arguments, in the same order relative to the frame's other draws: nothing between two
draws of a frame can read or change that state without a graph break (`random.seed`, `getstate`...
are not traced, and no graph op uses Python's generator). The trace never knows the number drawn: it is
an unbacked symbolic int (with the function's range) or float, so any decision on it is a graph
break, never a guard. Draws inside code traced to prove it pure (an autograd.Function's forward, a
`torch.cond` branch, a checkpointed function) are refused: eager makes them elsewhere, or more than once.
"""
from __future__ import annotations

import _random
import dataclasses
import inspect
import random
import types
import warnings

from ...guards.source import ConstSource
from .. import reads
from ..graph_break import Unsupported
from .base import VariableTracker

# method name -> the Python type of what it returns; each moves nothing but the Mersenne Twister
# (`gauss` keeps a second value, `choice`/`shuffle`/`sample` pick or move objects: not modelled)
_DRAWS = {"random": float, "uniform": float, "randint": int, "randrange": int, "getrandbits": int}


def is_random_draw(value) -> bool:
    """A function of the `random` module drawing one number (a method of its hidden instance)."""
    if type(value) not in (types.MethodType, types.BuiltinMethodType):    # (no attribute read runs user code)
        return False
    owner, name = value.__self__, value.__name__
    if owner is None or owner is not getattr(random, "_inst", None) or name not in _DRAWS:
        return False
    if isinstance(value, types.MethodType):    # randint, randrange, uniform: random.Random's own
        return value.__func__ is random.Random.__dict__.get(name)
    return True                                 # random, getrandbits: the C generator's


# the methods each draw calls on the instance (`randint` calls `self.randrange`...): the module's own,
# looked up on the class (guarded) and absent from the instance's dict (guarded)
_CALLS = {"random": ("random",), "uniform": ("uniform", "random"),
          "randint": ("randint", "randrange", "_randbelow", "getrandbits"),
          "randrange": ("randrange", "_randbelow", "getrandbits"), "getrandbits": ("getrandbits",)}


def _calls_the_modules_own(tx, name) -> bool:
    """Whether the methods the draw `name` runs are still random.Random's own (a replaced one could return
    anything); the lookups are guarded."""
    instance = random._inst
    for method in _CALLS[name]:
        if reads.instance_attr(tx, instance, ConstSource(instance), method) is not reads.MISSING:
            return False
        attr, _ = reads.class_lookup(tx, random.Random, method)
        stock = attr is _random.Random.__dict__.get(method) or (
            type(attr) is types.FunctionType and attr.__module__ == "random" and
            attr.__code__.co_filename == random.__file__)
        if not stock:
            return False
    return True


def _int_range(name, args, kwargs):
    """(lowest, highest) value an integer draw with these (valid) arguments can give."""
    if name == "getrandbits":      # (positional only)
        return 0, (1 << args[0]) - 1
    bound = inspect.signature(getattr(random.Random, name)).bind(None, *args, **kwargs)
    bound.apply_defaults()
    given = bound.arguments
    if name == "randint":
        return given["a"], given["b"]
    start, stop, step = given["start"], given["stop"], given["step"]
    values = range(start) if stop is None else range(start, stop, step)
    # (its ends by index, not by min/max: those walk the range, and `randrange(1 << 50000)` is valid)
    return (values[0], values[-1]) if values.step > 0 else (values[-1], values[0])


@dataclasses.dataclass(frozen=True, eq=False)
class RandomDrawVariable(VariableTracker):
    """`random.randrange` and friends (the bound method, guarded by identity)."""
    fn: object = None

    def python_type(self):
        return type(self.fn)

    def describe(self):
        return f"random.{self.fn.__name__}"

    def as_python_constant(self):
        return self.fn

    def reconstruct(self, codegen):
        if self.source is not None:
            self.source.reconstruct(codegen)
        else:
            codegen.load_const(self.fn)

    def call_function(self, tx, args, kwargs):
        name = self.fn.__name__
        kind = _DRAWS[name]
        values = [a.as_python_constant() if a.is_python_constant() else None for a in args]
        keywords = {k: v.as_python_constant() if v.is_python_constant() else None for k, v in kwargs.items()}
        allowed = (int,) if kind is int else (int, float)
        if not all(type(v) in allowed for v in values + list(keywords.values())):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (with arguments that are not "
                              "constant numbers)")
        if tx.output.backward_proof is not None:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (in a backward)")
        if not _calls_the_modules_own(tx, name):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (random.Random's methods are replaced)")
        try:
            # the real function on a generator of its own: raises (or warns) where eager's call would
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                sample = getattr(random.Random(0), name)(*values, **keywords)
        except Exception as e:  # noqa: BLE001 - the program's error, raised by its own call
            raise Unsupported("unsupported_call", fn=self.describe(),
                              detail=f" (raises {type(e).__name__} with these arguments)") from None
        if type(sample) is not kind:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (returns another type)")
        bounds = _int_range(name, values, keywords) if kind is int else None
        if bounds is not None and not -2 ** 63 <= bounds[0] <= bounds[1] < 2 ** 63:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (its numbers may not fit a "
                              "symbolic int)")
        return tx.output.add_random_draw(self.fn, tuple(values), keywords, kind, bounds)
