"""Guard kinds: one assumption about one value, as (source, check) data.

Compile time only. Each guard renders a fast Python expression for the generated check function
and can explain, given the actual value, why it fails (for recompile reasons).
"""
from __future__ import annotations

import dataclasses
import types
import weakref
from typing import Any

import torch

from .source import Source

# cheap checks first
_ORDER = {"GLOBAL_STATE": 0, "ID_MATCH": 1, "TYPE_MATCH": 2, "CONSTANT_MATCH": 3, "LEN_MATCH": 4,
          "DICT_KEYS": 5, "NO_MODULE_HOOKS": 5, "KEY_ABSENT": 5, "GRAD_IS_NONE": 6, "TENSOR_MATCH": 7,
          "SAME_OBJECT": 8, "SHAPE": 9}


@dataclasses.dataclass(frozen=True, eq=False)
class TensorMeta:
    """What TENSOR_MATCH checks about a tensor. `shape` and `stride` hold ints for static dims and
    None for dims traced with a symbolic size/stride: those are checked by SHAPE guards instead
    (see guards/shape.py). `static` says there is no None, so a whole-tuple compare suffices."""
    cls: type
    dtype: torch.dtype
    device: torch.device
    shape: tuple
    stride: tuple
    requires_grad: bool
    dispatch_keys: Any
    static: bool = True

    @staticmethod
    def of(t: torch.Tensor, dynamic_sizes=(), dynamic_strides=()) -> "TensorMeta":
        shape = tuple(None if i in dynamic_sizes else s for i, s in enumerate(t.shape))
        stride = tuple(None if i in dynamic_strides else s for i, s in enumerate(t.stride()))
        return TensorMeta(type(t), t.dtype, t.device, shape, stride, t.requires_grad,
                          torch._C._dispatch_keys(t), not dynamic_sizes and not dynamic_strides)

    def size_change(self, value):
        """The static dims whose size differs, if sizes (and the strides that follow from them) are
        all that changed; None when anything else differs."""
        if not isinstance(value, torch.Tensor) or type(value) is not self.cls or value.dtype != self.dtype or \
                value.device != self.device or value.dim() != len(self.shape) or \
                value.requires_grad != self.requires_grad or torch._C._dispatch_keys(value) != self.dispatch_keys:
            return None
        dims = frozenset(i for i, (e, a) in enumerate(zip(self.shape, value.shape)) if e is not None and e != a)
        return dims or None

    def mismatch(self, value, name: str):
        """A sentence saying how `value` differs, or None."""
        if not isinstance(value, torch.Tensor):
            return f"{name} is no longer a tensor: got {type(value).__name__}"
        if type(value) is not self.cls:
            return f"{name} type changed: expected {self.cls.__name__}, got {type(value).__name__}"
        if value.dtype != self.dtype:
            return f"{name}.dtype changed: expected {self.dtype}, got {value.dtype}"
        if value.device != self.device:
            return f"{name}.device changed: expected {self.device}, got {value.device}"
        if value.dim() != len(self.shape):
            return f"{name}.dim() changed: expected {len(self.shape)}, got {value.dim()}"
        for i, (a, b) in enumerate(zip(self.shape, value.shape)):
            if a is not None and a != b:
                return f"{name}.size({i}) changed: expected {a}, got {b}"
        for i, (a, b) in enumerate(zip(self.stride, value.stride())):
            if a is not None and a != b:
                return f"{name}.stride() changed: expected {_dims(self.stride)}, got {tuple(value.stride())}"
        if value.requires_grad != self.requires_grad:
            return f"{name}.requires_grad changed: expected {self.requires_grad}, got {value.requires_grad}"
        if torch._C._dispatch_keys(value) != self.dispatch_keys:
            return f"{name} dispatch keys changed"
        return None


def _label(obj) -> str:
    """A readable name for a guarded object, read without running attribute hooks: a module's
    `__getattr__` (torch.classes) or an object's `__getattribute__` may do anything, even raise."""
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        return f"{obj.__qualname__} (id {id(obj)})"
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__dict__.get('__name__')!s} (id {id(obj)})"
    return f"{type(obj).__name__} (id {id(obj)})"


def _dims(values) -> str:
    """A size/stride tuple with its dynamic entries shown as `*`."""
    return "[" + ", ".join("*" if v is None else str(v) for v in values) + "]"


@dataclasses.dataclass(frozen=True, eq=False)
class Guard:
    source: Source
    kind: str
    expected: Any = None

    def key(self):
        exp = self.expected
        if self.kind == "ID_MATCH":
            exp = id(exp())  # weak reference
        elif self.kind in ("TYPE_MATCH",):
            exp = id(exp)
        elif self.kind == "CONSTANT_MATCH":
            exp = (type(exp), repr(exp))
        elif self.kind == "TENSOR_MATCH":
            exp = None  # one tensor check per source
        elif self.kind == "SHAPE":
            exp = exp.fast
        return (self.source, self.kind, exp)

    def __hash__(self):
        return hash(self.key())

    def __eq__(self, other):
        return isinstance(other, Guard) and self.key() == other.key()

    @property
    def order(self):
        return _ORDER[self.kind]

    # -- constructors ----------------------------------------------------------
    @staticmethod
    def type_match(source, cls):
        return Guard(source, "TYPE_MATCH", cls)

    @staticmethod
    def id_match(source, obj):
        try:
            ref = weakref.ref(obj)
        except TypeError:
            strong = obj
            ref = lambda: strong  # noqa: E731 - objects that cannot be weakly referenced are kept
        return Guard(source, "ID_MATCH", ref)

    @staticmethod
    def constant(source, value):
        if type(value) is set:
            value = set(value)   # a snapshot: the guard compares with the contents as read, not the live set
        return Guard(source, "CONSTANT_MATCH", value)

    @staticmethod
    def length(source, n):
        return Guard(source, "LEN_MATCH", n)

    @staticmethod
    def dict_keys(source, keys):
        return Guard(source, "DICT_KEYS", tuple(keys))

    @staticmethod
    def tensor(source, value, meta=None):
        return Guard(source, "TENSOR_MATCH", meta or TensorMeta.of(value))

    @staticmethod
    def shape(check):
        """A relation between input sizes/strides (a `guards.shape.ShapeCheck`)."""
        return Guard(None, "SHAPE", check)

    @staticmethod
    def same_object(source, other_source):
        """Two sources hold one object (the graph was traced with them aliased)."""
        return Guard(source, "SAME_OBJECT", other_source)

    @staticmethod
    def key_absent(source, key):
        """`key` is not in the mapping `source` (e.g. an instance does not shadow a class attribute)."""
        return Guard(source, "KEY_ABSENT", key)

    @staticmethod
    def no_module_hooks(source):
        """The module has no forward/backward (pre-)hooks (tracing called none)."""
        return Guard(source, "NO_MODULE_HOOKS", None)

    @staticmethod
    def grad_is_none(source):
        return Guard(source, "GRAD_IS_NONE", None)

    @staticmethod
    def global_state(name, value):
        return Guard(None, "GLOBAL_STATE", (name, value))

    # -- rendering ------------------------------------------------------------
    def describe(self) -> str:
        name = self.source.name() if self.source is not None else ""
        exp = self.expected
        if self.kind == "ID_MATCH":
            return f"{name} is {_label(exp())}"
        if self.kind == "TYPE_MATCH":
            return f"type({name}) is {exp.__qualname__}"
        if self.kind == "CONSTANT_MATCH":
            return f"{name} == {exp!r}"
        if self.kind == "LEN_MATCH":
            return f"len({name}) == {exp}"
        if self.kind == "DICT_KEYS":
            return f"list({name}.keys()) == {list(exp)!r}"
        if self.kind == "GRAD_IS_NONE":
            return f"{name}.grad is None"
        if self.kind == "NO_MODULE_HOOKS":
            return f"{name} has no forward/backward hooks"
        if self.kind == "KEY_ABSENT":
            return f"{exp!r} not in {name}"
        if self.kind == "SAME_OBJECT":
            return f"{name} is {exp.name()}"
        if self.kind == "GLOBAL_STATE":
            return f"{exp[0]} == {exp[1]!r}"
        if self.kind == "TENSOR_MATCH":
            return (f"{name}: {exp.cls.__name__} {exp.dtype} {exp.device} size={_dims(exp.shape)} "
                    f"stride={_dims(exp.stride)} requires_grad={exp.requires_grad}")
        if self.kind == "SHAPE":
            return exp.readable
        return f"{self.kind} {name}"

    def explain(self, value) -> str | None:
        """Why `value` (the source's current value; None for global state) fails this guard."""
        name = self.source.name() if self.source is not None else ""
        exp = self.expected
        if self.kind == "TENSOR_MATCH":
            return exp.mismatch(value, name)
        if self.kind == "ID_MATCH":
            return None if value is exp() else f"{name} is a different object than when compiled"
        if self.kind == "TYPE_MATCH":
            return None if type(value) is exp else \
                f"type({name}) changed: expected {exp.__qualname__}, got {type(value).__qualname__}"
        if self.kind == "CONSTANT_MATCH":
            ok = type(value) is type(exp) and (value.hex() == exp.hex() if type(exp) is float else value == exp)
            return None if ok else f"{name} changed: expected {exp!r}, got {value!r}"
        if self.kind == "LEN_MATCH":
            return None if len(value) == exp else f"len({name}) changed: expected {exp}, got {len(value)}"
        if self.kind == "DICT_KEYS":
            return None if tuple(value.keys()) == exp else \
                f"{name} keys changed: expected {list(exp)!r}, got {list(value.keys())!r}"
        if self.kind == "GRAD_IS_NONE":
            return None if value.grad is None else f"{name}.grad is no longer None"
        if self.kind == "KEY_ABSENT":
            return None if exp not in value else f"{name} now has {exp!r}"
        if self.kind == "NO_MODULE_HOOKS":
            return None if not any(getattr(value, t) for t in MODULE_HOOK_TABLES) else f"{name} now has hooks"
        if self.kind in ("SAME_OBJECT", "SHAPE"):
            return None  # explained by the caller, which can read several sources
        if self.kind == "GLOBAL_STATE":
            current = GLOBAL_STATE_READERS[exp[0]]()
            return None if current == exp[1] else f"{exp[0]} changed: expected {exp[1]!r}, got {current!r}"
        return None


MODULE_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")

# device types with an autocast state (an op on any of them may be autocast while the graph runs)
AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "ipu", "mtia", "privateuseone")

GLOBAL_STATE_READERS = {
    "grad_enabled": torch.is_grad_enabled,
    "default_dtype": torch.get_default_dtype,
    "deterministic_algorithms": torch.are_deterministic_algorithms_enabled,
    "autocast": lambda: tuple((d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d))
                              for d in AUTOCAST_DEVICES),
    "autocast_cache": torch.is_autocast_cache_enabled,
}


def global_state_guards() -> list[Guard]:
    """The global state every graph depends on, as of now."""
    return [Guard.global_state(name, reader()) for name, reader in GLOBAL_STATE_READERS.items()]
