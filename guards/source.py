"""Sources: where a value came from in a frame, and how to fetch it again.

Compile time only. A Source renders itself two ways: `name()` is the readable expression used in
guard listings and failure reasons (`L['x'].weight`), `expr()` is the fast expression evaluated by
generated guard functions (`L_x.weight`). `reconstruct(codegen)` emits bytecode that loads the value
inside the transformed frame.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import types
from typing import Any

import torch

from ..probe import class_mro, class_namespace, runs_code_when_dropped
from .held import hold, holds_weakly


def local_param(name: str) -> str:
    """The guard-function parameter that holds local `name` (a name that is no identifier, such as
    pytest's `@py_assert1`, is spelled in hex)."""
    return "L_" + name if name.isidentifier() else "LX_" + name.encode().hex()


@dataclasses.dataclass(frozen=True)
class Source:
    def name(self) -> str:
        raise NotImplementedError

    def expr(self, render=None) -> str:
        """The fast expression. `render(source)`, if given, renders sub-sources (the guard builder
        uses it to evaluate a shared prefix such as `L['self']._modules['layers']` only once)."""
        raise NotImplementedError

    def sub_expr(self, render=None) -> str:
        return render(self) if render is not None else self.expr()

    def bases(self) -> tuple:
        """The sources this one is read from."""
        base = getattr(self, "base", None)
        return (base,) if isinstance(base, Source) else ()

    def reconstruct(self, codegen) -> None:
        raise NotImplementedError

    def held_objects(self) -> tuple:
        """Objects the expression names directly (see const_name): the guard function holds them."""
        return ()

    def root(self) -> "Source":
        return self

    def is_local(self) -> bool:
        return isinstance(self.root(), LocalSource)

    def __str__(self) -> str:
        return self.name()

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_hash", None)    # hashes of strings differ between processes
        return state


class DerivedSource(Source):
    """A source read from another one, `self.base` (an attribute, an item...): its root is the base's."""

    def root(self) -> Source:
        return self.base.root()


class GuardOnlySource(DerivedSource):
    """A fact about a value that guards check but the transformed code never loads."""

    def reconstruct(self, codegen):
        raise NotImplementedError("a guard-only source")


@dataclasses.dataclass(frozen=True)
class LocalSource(Source):
    local_name: str

    def name(self):
        return f"L[{self.local_name!r}]"

    def expr(self, render=None):
        return local_param(self.local_name)

    def reconstruct(self, codegen):
        codegen.load_local(self.local_name)


@dataclasses.dataclass(frozen=True)
class GlobalSource(Source):
    global_name: str

    def name(self):
        return f"G[{self.global_name!r}]"

    def expr(self, render=None):
        return f"G[{self.global_name!r}]"

    def reconstruct(self, codegen):
        codegen.load_global(self.global_name)


@dataclasses.dataclass(frozen=True)
class NamespaceSource(Source):
    """The frame function's globals (`G`) or builtins (`B`) dict itself (to guard that a name is
    absent from it)."""
    which: str   # "G" or "B"

    def name(self):
        return self.which

    def expr(self, render=None):
        return self.which

    def reconstruct(self, codegen):
        raise NotImplementedError("a frame's globals/builtins dict is not rebuilt")


@dataclasses.dataclass(frozen=True)
class BuiltinSource(Source):
    builtin_name: str

    def name(self):
        return f"B[{self.builtin_name!r}]"

    def expr(self, render=None):
        return f"B[{self.builtin_name!r}]"

    def reconstruct(self, codegen):
        codegen.load_global(self.builtin_name)


@dataclasses.dataclass(frozen=True)
class ClosureSource(Source):
    """A free variable of the frame's function (its closure cell's contents)."""
    var_name: str
    index: int  # position in the function's __closure__

    def name(self):
        return f"F[{self.var_name!r}]"

    def expr(self, render=None):
        return f"__func.__closure__[{self.index}].cell_contents"

    def reconstruct(self, codegen):
        codegen.load_deref(self.var_name)


@dataclasses.dataclass(frozen=True)
class FunctionSource(Source):
    """The frame's own function object."""

    def name(self):
        return "FN"

    def expr(self, render=None):
        return "__func"

    def reconstruct(self, codegen):
        raise NotImplementedError("the frame's function is not reachable from its code")


@dataclasses.dataclass(frozen=True)
class AttrSource(DerivedSource):
    base: Source
    attr: str

    def name(self):
        return f"{self.base.name()}.{self.attr}"

    def expr(self, render=None):
        if self.attr.isidentifier() and not self.attr.startswith("__"):
            return f"{self.base.sub_expr(render)}.{self.attr}"
        return f"getattr({self.base.sub_expr(render)}, {self.attr!r})"

    def reconstruct(self, codegen):
        self.base.reconstruct(codegen)
        codegen.load_attr(self.attr)


@dataclasses.dataclass(frozen=True)
class InstanceDictSource(DerivedSource):
    """`base.__dict__`, read with `object.__getattribute__`: the instance dict itself, without running
    a Python `__getattribute__` of base's class (a HuggingFace config's costs a microsecond a read).
    An attribute found in the instance dict while tracing is `ItemSource(InstanceDictSource(b), name)`:
    if it leaves the instance dict, reading it raises KeyError and the guard fails (exact, never
    stale)."""
    base: Source

    def name(self):
        return f"{self.base.name()}.__dict__"

    def expr(self, render=None):
        return f"object.__getattribute__({self.base.sub_expr(render)}, '__dict__')"

    def reconstruct(self, codegen):
        codegen.load_callable(object.__getattribute__)
        self.base.reconstruct(codegen)
        codegen.load_const("__dict__")
        codegen.call(2)


def builtin_type_expr(tp: type) -> str:
    """An expression for a builtin container type in guard code (`dict`, `___modules['collections'].OrderedDict`)."""
    if tp.__module__ == "builtins":
        return tp.__name__
    return f"___modules[{tp.__module__!r}].{tp.__qualname__}"


class HeldKey:
    """A key that is no literal (a class, a function, an object: `{torch.Tensor: ...}`), as an
    ItemSource keeps it: held as guards hold objects (guards/held.py), the same key as another when it
    is the same object."""
    __slots__ = ("held", "ident")

    def __init__(self, key):
        self.held, self.ident = hold(key), id(key)

    def __eq__(self, other):
        return isinstance(other, HeldKey) and other.ident == self.ident and other.held() is self.held()

    def __hash__(self):
        return hash(self.ident)


@dataclasses.dataclass(frozen=True)
class ItemSource(DerivedSource):
    base: Source
    key: Any  # a literal (int, str...), or a HeldKey (see __post_init__; `item_key()` is the key itself)
    # the builtin container type whose `__getitem__` reads the item, when base's own class overrides
    # it (a dict subclass such as HuggingFace's ModelOutput): guards and rebuilt code never run it
    via: Any = None

    def __post_init__(self):
        if not is_literal(self.key) and type(self.key) is not HeldKey:
            object.__setattr__(self, "key", HeldKey(self.key))

    def item_key(self):
        return self.key.held() if type(self.key) is HeldKey else self.key

    def name(self):
        key = repr(self.key) if is_literal(self.key) else getattr(self.item_key(), "__qualname__", "<key>")
        return f"{self.base.name()}[{key}]"

    def expr(self, render=None):
        # a class or function key (`{torch.Tensor: ...}`) has no literal: the guard function holds it
        key = repr(self.key) if is_literal(self.key) else const_expr(self.item_key())
        if self.via is not None:
            return f"{builtin_type_expr(self.via)}.__getitem__({self.base.sub_expr(render)}, {key})"
        return f"{self.base.sub_expr(render)}[{key}]"

    def held_objects(self):
        return () if is_literal(self.key) else (self.item_key(),)

    def reconstruct(self, codegen):
        if self.via is not None:
            codegen.load_callable(self.via.__getitem__)
            self.base.reconstruct(codegen)
            codegen.load_const(self.item_key())
            codegen.call(2)
            return
        self.base.reconstruct(codegen)
        codegen.load_const(self.item_key())
        codegen.binary_subscr()


@dataclasses.dataclass(frozen=True)
class DictKeysSource(GuardOnlySource):
    """`tuple(via.keys(base))`: the keys of a dict subclass read by its builtin base's method, never
    by an override of the user's (guards compare it with the keys seen while tracing)."""
    base: Source
    via: Any

    def name(self):
        return f"tuple({self.base.name()}.keys())"

    def expr(self, render=None):
        return f"tuple({builtin_type_expr(self.via)}.keys({self.base.sub_expr(render)}))"


@dataclasses.dataclass(frozen=True)
class SetItemsSource(GuardOnlySource):
    """The items of a set (of a subclass's object too) in the order it iterates them, each with its type,
    read by the builtin's own `__iter__`, never by an override of the user's: guards compare them with
    what the trace saw, so an equal set iterating in another order (another insertion history), or
    holding `True` where the trace saw `1`, is not taken for it (`set_items_seen` makes the expected value)."""
    base: Source
    via: Any

    def name(self):
        return f"[(type(v), v) for v in {self.base.name()}]"

    def expr(self, render=None):
        return f"tuple((type(v), v) for v in {builtin_type_expr(self.via)}.__iter__({self.base.sub_expr(render)}))"


def set_items_seen(items) -> tuple:
    """What a `SetItemsSource` gives for a set iterating `items`."""
    return tuple((type(v), v) for v in items)


@dataclasses.dataclass(frozen=True)
class TypeFlagSource(GuardOnlySource):
    """Whether a class's `__flags__` has the bits of `mask` (guard only)."""
    base: Source
    mask: int

    def name(self):
        return f"{self.base.name()}.__flags__ & {self.mask:#x}"

    def expr(self, render=None):
        return f"bool({self.base.sub_expr(render)}.__flags__ & {self.mask})"


@dataclasses.dataclass(frozen=True)
class ReaderSource(GuardOnlySource):
    """What a function of no arguments returns now, such as `abc.get_cache_token()` (guard only)."""
    base: Source

    def name(self):
        return f"{self.base.name()}()"

    def expr(self, render=None):
        return f"{self.base.sub_expr(render)}()"


@dataclasses.dataclass(frozen=True)
class DeathRunsCodeSource(GuardOnlySource):
    """Whether the object's death runs Python code: its class's `__del__`, a weak reference's
    callback (guard only)."""
    base: Source

    def name(self):
        return f"{self.base.name()}.<death runs code>"

    def expr(self, render=None):
        return f"{const_expr(runs_code_when_dropped)}({self.base.sub_expr(render)})"

    def held_objects(self):
        return (runs_code_when_dropped,)


def slot_is_set(descr, obj) -> bool:
    """Whether the `__slots__` member `descr` of `obj` holds a value (reading a member runs no user code)."""
    try:
        descr.__get__(obj, type(obj))
    except AttributeError:
        return False
    return True


@dataclasses.dataclass(frozen=True)
class SlotSetSource(GuardOnlySource):
    """Whether a `__slots__` member of the object holds a value (guard only): `hasattr` of an unset
    slot is False until the program sets it."""
    base: Source
    descr: object

    def name(self):
        return f"{self.base.name()}.<{self.descr.__name__} set>"

    def expr(self, render=None):
        return f"{const_expr(slot_is_set)}({const_expr(self.descr)}, {self.base.sub_expr(render)})"

    def held_objects(self):
        return (slot_is_set, self.descr)


_EMPTY_CELL = types.CellType()


@dataclasses.dataclass(frozen=True)
class CellEmptySource(GuardOnlySource):
    """Whether a closure cell is empty (guard only). An empty cell compares equal only to another
    empty cell, and comparing cells runs no user code when one of them is empty."""
    base: Source

    def name(self):
        return f"{self.base.name()}.<empty>"

    def expr(self, render=None):
        return f"({self.base.sub_expr(render)} == {const_expr(_EMPTY_CELL)})"

    def held_objects(self):
        return (_EMPTY_CELL,)


@dataclasses.dataclass(frozen=True)
class ListIteratorSource(DerivedSource):
    """What a real list, tuple or range iterator walks, read from its `__reduce__()` (which runs no user
    code): `seq`, the live list (the tuple, the range), `position`, `(index,)` (`()` once a list or
    tuple iterator is exhausted), or `rest`, the list of the items it has left (`iterator_rest`)."""
    base: Source
    part: str   # "seq", "position" or "rest"

    def name(self):
        return f"{self.base.name()}.<iterator {self.part}>"

    def expr(self, render=None):
        if self.part == "rest":
            return f"___iterator_rest({self.base.sub_expr(render)})"
        reduced = f"{self.base.sub_expr(render)}.__reduce__()"
        return f"{reduced}[1][0]" if self.part == "seq" else f"{reduced}[2:]"

    def reconstruct(self, codegen):
        if self.part == "rest":
            codegen.load_callable(iterator_rest)
            self.base.reconstruct(codegen)
            codegen.call(1)
            return
        self.base.reconstruct(codegen)
        codegen.load_method("__reduce__")
        codegen.call_method(0)
        if self.part == "seq":
            for key in (1, 0):
                codegen.load_const(key)
                codegen.binary_subscr()
        else:
            codegen.load_const(slice(2, None))
            codegen.binary_subscr()


@dataclasses.dataclass(frozen=True)
class ModuleStateSource(DerivedSource):
    """A parameter or buffer of an nn.Module, read from its `_parameters`/`_buffers` dict."""
    base: Source
    table: str  # "_parameters" or "_buffers"
    key: str

    def name(self):
        return f"{self.base.name()}.{self.key}"

    def expr(self, render=None):
        return f"{self.base.sub_expr(render)}.{self.table}[{self.key!r}]"

    def reconstruct(self, codegen):
        self.base.reconstruct(codegen)
        codegen.load_attr(self.table)
        codegen.load_const(self.key)
        codegen.binary_subscr()


@dataclasses.dataclass(frozen=True)
class TypeSource(DerivedSource):
    base: Source

    def name(self):
        return f"type({self.base.name()})"

    def expr(self, render=None):
        return f"type({self.base.sub_expr(render)})"

    def reconstruct(self, codegen):
        codegen.load_global_builtin("type")
        self.base.reconstruct(codegen)
        codegen.call(1)


@dataclasses.dataclass(frozen=True)
class ModuleGlobalSource(Source):
    """A global of another module (read by a function inlined from that module)."""
    module_name: str
    global_name: str

    def name(self):
        return f"sys.modules[{self.module_name!r}].{self.global_name}"

    def expr(self, render=None):
        return f"___modules[{self.module_name!r}].__dict__[{self.global_name!r}]"

    def reconstruct(self, codegen):
        codegen.load_const(sys.modules[self.module_name].__dict__)
        codegen.load_const(self.global_name)
        codegen.binary_subscr()


@dataclasses.dataclass(frozen=True)
class TensorPropertySource(DerivedSource):
    """A size, stride or storage offset of a tensor: `L['x'].size(0)`, or the number a 0-d tensor
    holds, `L['n'].item()`. The source of a symbolic size's graph input and of the values that
    shape guards compare."""
    base: Source
    prop: str            # "size", "stride", "storage_offset" or "item"
    index: Any = None    # the dim (None for storage_offset and item)

    def name(self):
        return f"{self.base.name()}.{self.prop}({'' if self.index is None else self.index})"

    def expr(self, render=None):
        return f"{self.base.sub_expr(render)}.{self.prop}({'' if self.index is None else self.index})"

    def reconstruct(self, codegen):
        self.base.reconstruct(codegen)
        codegen.load_method(self.prop)
        if self.index is None:
            codegen.call_method(0)
        else:
            codegen.load_const(self.index)
            codegen.call_method(1)


@dataclasses.dataclass(frozen=True)
class RandomDrawSource(Source):
    """The `index`-th number the transformed code drew from Python's `random` module before the graph
    (frontend/variables/python_random.py): fed to the graph, never guarded (it is drawn after the guards)."""
    index: int

    def name(self):
        return f"<random draw {self.index}>"

    def expr(self, render=None):
        raise NotImplementedError("a random draw is made after the guards: nothing guards it")

    def local_name(self) -> str:
        return f"__bytegraph_draw{self.index}"

    def reconstruct(self, codegen):
        codegen.load_local(self.local_name())


@dataclasses.dataclass(frozen=True)
class NdarrayTensorSource(DerivedSource):
    """The tensor over an ndarray's memory, `torch.from_numpy(L['a'])`: how an ndarray read from the
    frame reaches the graph (a new tensor object on every read, the same memory)."""
    base: Source

    def name(self):
        return f"torch.from_numpy({self.base.name()})"

    def expr(self, render=None):
        return f"torch.from_numpy({self.base.sub_expr(render)})"

    def reconstruct(self, codegen):
        codegen.load_callable(torch.from_numpy)
        self.base.reconstruct(codegen)
        codegen.call(1)


@dataclasses.dataclass(frozen=True)
class ConstSource(Source):
    """A real object the guards hold directly (a class whose attributes were read, a function whose
    defaults were read when the object reached the trace without a source of its own). Facts read
    from it are guarded through it, so they are re-read at run time like any other source. Held as
    guards hold objects (guards/held.py): weakly where it can be, `value` is None once it died."""

    def __init__(self, value):
        object.__setattr__(self, "held", hold(value))
        object.__setattr__(self, "ident", id(value))

    @property
    def value(self):
        return self.held()

    def name(self):
        return getattr(self.value, "__qualname__", None) or f"<{type(self.value).__name__} object>"

    def expr(self, render=None):
        return const_expr(self.value)

    def held_objects(self):
        return (self.value,)

    def reconstruct(self, codegen):
        codegen.load_const(self.value)

    def __hash__(self):
        return hash(self.ident)

    def __eq__(self, other):
        return isinstance(other, ConstSource) and other.ident == self.ident and other.value is self.value

    def __repr__(self):
        return f"ConstSource({self.name()})"

    def __getstate__(self):
        return {"value": self.value}

    def __setstate__(self, state):
        self.__init__(state["value"])


def is_literal(value) -> bool:
    """Whether `repr(value)` is Python source that evaluates back to an equal value."""
    if type(value) is tuple:
        return all(is_literal(v) for v in value)
    if type(value) is float:
        return math.isfinite(value)    # repr(nan) and repr(inf) are not Python literals
    return type(value) in (int, bool, str, bytes, type(None))


def const_name(value) -> str:
    """The name the guard function's namespace gives a ConstSource's object."""
    return f"___const_{id(value)}"


def const_expr(value) -> str:
    """How a guard expression reads an object its source holds (held_objects): through a call of
    the weak reference the guard function keeps, or by name (guards/held.py)."""
    return const_name(value) + "()" if holds_weakly(value) else const_name(value)


class _Missing:
    """What `type_lookup` returns for an attribute that no class in the MRO defines."""
    def __repr__(self):
        return "<missing>"


MISSING = _Missing()


def iterator_rest(it) -> list:
    """The items a list, reversed list or dict iterator has left, read without moving it (from its
    `__reduce__()`, which copies a dict iterator to walk it: a dict that changed size raises)."""
    reduced = it.__reduce__()
    if len(reduced) < 3:         # a dict iterator's items left, or an exhausted list iterator's []
        return list(reduced[1][0])
    seq, index = reduced[1][0], reduced[2]
    if type(it) is type(reversed([])):    # (one whose list shrank below its index stops, as CPython's)
        return seq[index::-1] if 0 <= index < len(seq) else []
    return seq[index:]


def type_lookup(cls, name):
    """The raw entry `name` in the first class of `cls.__mro__` that defines it (what attribute
    lookup on an instance finds in its class), or MISSING."""
    for klass in class_mro(cls):
        d = class_namespace(klass)
        if name in d:
            return d[name]
    return MISSING


@dataclasses.dataclass(frozen=True)
class ClassNamespaceSource(DerivedSource):
    """`base.__dict__` for a class, read with type's own descriptor: never a `__dict__` property its
    metaclass defines (user code, which a guard must not run)."""
    base: Source

    def name(self):
        return f"{self.base.name()}.__dict__"

    def expr(self, render=None):
        return f"___class_namespace({self.base.sub_expr(render)})"

    def reconstruct(self, codegen):
        codegen.load_callable(class_namespace)
        self.base.reconstruct(codegen)
        codegen.call(1)


@dataclasses.dataclass(frozen=True)
class ClassAttrSource(DerivedSource):
    """`name` looked up in the MRO of the class `base` without running descriptors: the function
    object itself for a method, the staticmethod/classmethod/property object, or MISSING."""
    base: Source
    attr: str

    def name(self):
        return f"{self.base.name()}.__mro__[...].__dict__[{self.attr!r}]"

    def expr(self, render=None):
        return f"___type_lookup({self.base.sub_expr(render)}, {self.attr!r})"

    def reconstruct(self, codegen):
        codegen.load_callable(type_lookup)
        self.base.reconstruct(codegen)
        codegen.load_const(self.attr)
        codegen.call(2)


def _keep_hash(cls) -> None:
    """Make `cls`'s hash computed once per source: guard sets, shared reads and lookups by source
    hash sources over and over, and a chain such as `L['seq'][3][0]` rehashes every link each time
    (tens of thousands of guards over a long list made that a large part of a compile)."""
    compute = cls.__dict__["__hash__"]

    def __hash__(self):
        try:
            return self.__dict__["_hash"]
        except KeyError:
            value = compute(self)
            object.__setattr__(self, "_hash", value)
            return value
    cls.__hash__ = __hash__


def _sources(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _sources(sub)


for _cls in {Source, *_sources(Source)}:
    if _cls.__dict__.get("__hash__") is not None:
        _keep_hash(_cls)
