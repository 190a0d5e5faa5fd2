"""Guards: one assumption about one value, as (source, kind, expected) data, and the guard kinds.

Compile time only. A guard kind is one object holding every fact about the kind: its order in the
check function (cheap checks first), what makes two guards the same, the fast Python expression
it renders to, whether a C++ fast path checks all guards of the kind at once, its description and
the explanation of a failure (for recompile reasons), and what automatic dynamic can do about one.
The guard builder, explain and convert_frame ask the kind; none of them switches on it, so a new
kind is one class here (decorated with `@_kind("constructor_name")`, which also adds
`Guard.constructor_name`).
"""
from __future__ import annotations

import dataclasses
import functools
import sys
import types
from typing import Any

import torch
from torch.utils._python_dispatch import any_torch_dispatch_mode_on_stack

from .._tensor_guards import GlobalStateGuard, TensorGuards, memory_sharing
from ..logs import short_repr
from .held import Kept, hold, hold_items, holds_weakly
from .source import Source, is_literal


@dataclasses.dataclass(frozen=True, eq=False)
class Guard:
    source: Source | None      # None: the guard reads no value of the frame (global state, shapes)
    kind: "GuardKind"
    expected: Any = None

    def key(self):
        # computed once: guard sets hash and compare it many times (a constant's repr each time)
        try:
            return self.__dict__["_key"]
        except KeyError:
            key = (self.source, self.kind.name, self.kind.key(self.expected))
            object.__setattr__(self, "_key", key)
            return key

    def __hash__(self):
        try:
            return self.__dict__["_hash"]
        except KeyError:
            value = hash(self.key())
            object.__setattr__(self, "_hash", value)
            return value

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_key", "_hash")}

    def __eq__(self, other):
        return isinstance(other, Guard) and self.key() == other.key()

    @property
    def order(self) -> int:
        return self.kind.order

    def name(self) -> str:
        return self.source.name() if self.source is not None else ""

    def describe(self) -> str:
        return self.kind.describe(self)

    def explain(self, value, env) -> str | None:
        """Why `value` (the source's current value; None without a source) fails this guard; `env`
        evaluates fast expressions of other sources (guards/builder.py `CheckFunction.failed_guards`)."""
        return self.kind.explain(self, value, env)


@dataclasses.dataclass(frozen=True)
class DynamicChange:
    """What automatic dynamic can make symbolic so that a failed guard passes after a recompile:
    some dims of a tensor input, or a Python number (`scalar`)."""
    dims: frozenset = frozenset()
    scalar: bool = False


class GuardKind:
    """The facts of one kind of guard. Subclasses are singletons made by `@_kind`."""
    name: str
    order: int                   # position in the check function: cheap checks first
    fast_path = False            # all guards of the kind are checked by one C++ call (`render_all`)

    def key(self, expected):
        """What, besides the source, makes two guards of this kind the same check."""
        return expected

    def render(self, guard: Guard, check) -> str:
        """The guard as a Python expression of the check function; `check.read(source)` renders a
        source, `check.const(value, hint)` names an object of bytegraph's the expression refers to, and
        `check.held(value, hint)` one of the program's (held weakly: guards/held.py)."""
        raise NotImplementedError(self.name)

    def render_all(self, guards: list, check) -> str:
        """For a fast-path kind: one expression checking all of `guards`."""
        raise NotImplementedError(self.name)

    def describe(self, guard: Guard) -> str:
        raise NotImplementedError(self.name)

    def explain(self, guard: Guard, value, env) -> str | None:
        raise NotImplementedError(self.name)

    def explain_together(self, guards: list, read) -> list:
        """(guard, value, reason) for what fails only between guards of this kind (the fast path's
        assumptions); `read(guard)` is the guard's current value."""
        return []

    def dynamic_change(self, guard: Guard, value) -> DynamicChange | None:
        """What automatic dynamic can change so this failed guard passes; None: nothing (the miss
        needs a plain recompile)."""
        return None

    def __repr__(self) -> str:
        return self.name

    def __copy__(self):
        return self          # a singleton: a copied guard keeps its kind

    def __deepcopy__(self, memo):
        return self


KINDS: list[GuardKind] = []   # every kind `_kind` made, in order


def _kind(constructor: str):
    """Make the decorated GuardKind subclass a singleton, listed in KINDS, and add its `make` as
    `Guard.<constructor>`."""
    def register(cls):
        kind = cls()
        KINDS.append(kind)
        setattr(Guard, constructor, staticmethod(kind.make))
        return kind
    return register


@_kind("global_state")
class GLOBAL_STATE(GuardKind):
    """Process state every graph depends on (grad mode, default dtype...), read by `GLOBAL_STATE_READERS`."""
    name, order, fast_path = "GLOBAL_STATE", 0, True

    def make(self, name, value):
        return Guard(None, self, (name, value))

    def render_all(self, guards, check):
        # one C++ call checks grad mode, default dtype, deterministic algorithms and autocast
        state = dict(g.expected for g in guards)
        fast = GlobalStateGuard(state["grad_enabled"], state["default_dtype"], state["deterministic_algorithms"],
                                state["autocast"], state["autocast_cache"])
        return (f"{check.const(fast, 'global_state')}() and "
                f"not {check.const(user_dispatch_mode_active, 'user_dispatch_mode')}() and "
                f"not {check.const(user_function_mode_active, 'user_function_mode')}() and "
                f"not {check.const(functorch_transform_active, 'functorch_transform')}() and "
                f"{check.const(torch.is_inference_mode_enabled, 'inference_mode')}() is {state['inference_mode']} and "
                f"{check.const(torch_function_state, 'torch_function')}() == {state['torch_function']!r}")

    def describe(self, guard):
        return f"{guard.expected[0]} == {guard.expected[1]!r}"

    def explain(self, guard, value, env):
        name, expected = guard.expected
        current = GLOBAL_STATE_READERS[name]()
        return None if current == expected else f"{name} changed: expected {expected!r}, got {current!r}"


@_kind("id_match")
class ID_MATCH(GuardKind):
    """The very object seen while tracing (held weakly when it can be: guards/held.py)."""
    name, order = "ID_MATCH", 1

    def make(self, source, obj):
        return Guard(source, self, hold(obj))

    def key(self, expected):
        return id(expected())

    def render(self, guard, check):
        obj = guard.expected()
        if obj is None and not isinstance(guard.expected, Kept):
            return "False"      # it died while compiling: no object can be it
        # (a dead object's weak reference gives None, which the value may be)
        dead_is_none = " is not None" if holds_weakly(obj) else ""
        return f"{check.read(guard.source)} is {check.held(obj, 'obj_' + guard.name())}{dead_is_none}"

    def describe(self, guard):
        return f"{guard.name()} is {_label(guard.expected())}"

    def explain(self, guard, value, env):
        return None if value is guard.expected() else f"{guard.name()} is a different object than when compiled"


@_kind("type_match")
class TYPE_MATCH(GuardKind):
    """The value's exact class (held weakly: a class made by the program dies when it drops it)."""
    name, order = "TYPE_MATCH", 2

    def make(self, source, cls):
        return Guard(source, self, hold(cls))

    def key(self, expected):
        return id(expected())

    def render(self, guard, check):
        cls = guard.expected()
        if cls is None:
            return "False"
        return f"type({check.read(guard.source)}) is {check.held(cls, cls.__name__)}"

    def describe(self, guard):
        return f"type({guard.name()}) is {_qualname(guard.expected())}"

    def explain(self, guard, value, env):
        cls = guard.expected()
        return None if type(value) is cls and cls is not None else \
            f"type({guard.name()}) changed: expected {_qualname(cls)}, got {type(value).__qualname__}"

    def dynamic_change(self, guard, value):
        # a (symbolic) number that is a tensor now: the tensor form gets symbolic sizes (TENSOR_MATCH)
        if guard.expected() in (int, float) and type(value) is torch.Tensor:
            return DynamicChange(dims=frozenset(range(value.dim())))
        return None


def _qualname(cls) -> str:
    return "<a class that no longer exists>" if cls is None else cls.__qualname__


def is_numpy_number(value) -> bool:
    """A numpy bool, int, float or complex scalar (compared by its bytes: numpy's == conflates -0.0 and 0.0)."""
    np = sys.modules.get("numpy")
    return np is not None and issubclass(type(value), np.generic) and value.dtype.kind in "biufc"


@_kind("constant")
class CONSTANT_MATCH(GuardKind):
    """Equal to a constant of the same type (floats bit for bit)."""
    name, order = "CONSTANT_MATCH", 3

    def make(self, source, value):
        if type(value) is set:
            value = set(value)   # a snapshot: the guard compares with the contents as read, not the live set
        elif type(value) in (str, bytes):
            value = _equal_copy(value)   # the cache holds no reference to the program's own object
        return Guard(source, self, value)

    def key(self, expected):
        # (an int by value: a long one has no repr; a string by value: a long one's repr is a copy)
        return (type(expected), expected if type(expected) in (int, str, bytes) else repr(expected))

    def render(self, guard, check):
        x, exp = check.read(guard.source), guard.expected
        if exp is None or isinstance(exp, bool):
            return f"{x} is {exp!r}"
        if type(exp) is float:  # bit-exact: -0.0 is not 0.0, and nan matches nan
            return f"type({x}) is float and {x}.hex() == {exp.hex()!r}"
        if is_numpy_number(exp):   # bit-exact too
            return f"type({x}) is {check.const(type(exp))} and {x}.tobytes() == {exp.tobytes()!r}"
        return f"type({x}) is {check.const(type(exp))} and {x} == {check.const(exp)}"

    def describe(self, guard):
        return f"{guard.name()} == {short_repr(guard.expected)}"

    def explain(self, guard, value, env):
        exp = guard.expected
        ok = type(value) is type(exp) and (value.hex() == exp.hex() if type(exp) is float else
                                           value.tobytes() == exp.tobytes() if is_numpy_number(exp) else value == exp)
        return None if ok else f"{guard.name()} changed: expected {short_repr(exp)}, got {short_repr(value)}"


def _equal_copy(value):
    """A new str/bytes equal to `value` (the empty and one-character ones are shared singletons anyway)."""
    if type(value) is bytes:
        return bytes(bytearray(value))
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")


@_kind("length")
class LEN_MATCH(GuardKind):
    name, order = "LEN_MATCH", 4

    def make(self, source, n):
        return Guard(source, self, n)

    def render(self, guard, check):
        return f"len({check.read(guard.source)}) == {guard.expected}"

    def describe(self, guard):
        return f"len({guard.name()}) == {guard.expected}"

    def explain(self, guard, value, env):
        return None if len(value) == guard.expected else \
            f"len({guard.name()}) changed: expected {guard.expected}, got {len(value)}"


@_kind("length_at_least")
class LEN_AT_LEAST(GuardKind):
    """The sequence has at least n items (a loop that took n of them; how many more it holds is not
    assumed)."""
    name, order = "LEN_AT_LEAST", 4

    def make(self, source, n):
        return Guard(source, self, n)

    def render(self, guard, check):
        return f"len({check.read(guard.source)}) >= {guard.expected}"

    def describe(self, guard):
        return f"len({guard.name()}) >= {guard.expected}"

    def explain(self, guard, value, env):
        return None if len(value) >= guard.expected else \
            f"len({guard.name()}) changed: expected at least {guard.expected}, got {len(value)}"


@_kind("dict_keys")
class DICT_KEYS(GuardKind):
    """The mapping's keys, in order (objects among them held weakly: guards/held.py)."""
    name, order = "DICT_KEYS", 5

    def make(self, source, keys):
        return Guard(source, self, hold_items(tuple(keys)))

    def key(self, expected):
        return tuple(k if is_literal(k) else ("object", id(k)) for k in expected())

    def render(self, guard, check):
        x, keys = check.read(guard.source), guard.expected()
        return f"not {x}" if not keys else f"tuple({x}.keys()) == {check.held_items(keys, 'keys')}"

    def describe(self, guard):
        keys = guard.expected()
        return f"list({guard.name()}.keys()) == {'<keys that no longer exist>' if keys is None else list(keys)!r}"

    def explain(self, guard, value, env):
        keys = guard.expected()
        return None if tuple(value.keys()) == keys else \
            f"{guard.name()} keys changed: expected {list(keys)!r}, got {list(value.keys())!r}"


@_kind("dict_has_key")
class DICT_HAS_KEY(GuardKind):
    """Whether a literal key is in a dict (of any dict class), for a dict whose other keys the trace
    never depended on. Checked by dict's own `__contains__` (no override of the program's runs; a
    value that is no dict fails), and before the guards of the dict's items: reading `d[k]` of a
    defaultdict lacking `k` would add it."""
    name, order = "DICT_HAS_KEY", 1

    def make(self, source, key, present: bool):
        assert is_literal(key), key
        return Guard(source, self, (key, bool(present)))

    def key(self, expected):
        return (type(expected[0]), repr(expected[0]), expected[1])

    def render(self, guard, check):
        key, present = guard.expected
        test = f"{check.const(dict.__contains__, 'dict_contains')}({check.read(guard.source)}, {key!r})"
        return test if present else f"not {test}"

    def describe(self, guard):
        key, present = guard.expected
        return f"{key!r} {'in' if present else 'not in'} {guard.name()}"

    def explain(self, guard, value, env):
        key, present = guard.expected
        if dict.__contains__(value, key) == present:
            return None
        return f"{guard.name()} {'no longer has' if present else 'now has'} {key!r}"


@_kind("no_module_hooks")
class NO_MODULE_HOOKS(GuardKind):
    """The module has no forward/backward (pre-)hooks (tracing called none)."""
    name, order = "NO_MODULE_HOOKS", 5

    def make(self, source):
        return Guard(source, self, None)

    def render(self, guard, check):
        x = check.read(guard.source)
        return f"not ({' or '.join(f'{x}.{t}' for t in MODULE_HOOK_TABLES)})"

    def describe(self, guard):
        return f"{guard.name()} has no forward/backward hooks"

    def explain(self, guard, value, env):
        return None if not any(getattr(value, t) for t in MODULE_HOOK_TABLES) else f"{guard.name()} now has hooks"


@_kind("key_absent")
class KEY_ABSENT(GuardKind):
    """`key` is not in the mapping (e.g. an instance does not shadow a class attribute)."""
    name, order = "KEY_ABSENT", 5

    def make(self, source, key):
        return Guard(source, self, key)

    def render(self, guard, check):
        return f"{guard.expected!r} not in {check.read(guard.source)}"

    def describe(self, guard):
        return f"{guard.expected!r} not in {guard.name()}"

    def explain(self, guard, value, env):
        return None if guard.expected not in value else f"{guard.name()} now has {guard.expected!r}"


@_kind("grad_is_none")
class GRAD_IS_NONE(GuardKind):
    name, order = "GRAD_IS_NONE", 6

    def make(self, source):
        return Guard(source, self, None)

    def render(self, guard, check):
        return f"{check.read(guard.source)}.grad is None"

    def describe(self, guard):
        return f"{guard.name()}.grad is None"

    def explain(self, guard, value, env):
        with torch._C.DisableTorchFunctionSubclass():
            grad = value.grad
        return None if grad is None else f"{guard.name()}.grad is no longer None"


@_kind("no_handled_exception")
class NO_HANDLED_EXCEPTION(GuardKind):
    """The compiled frame's caller handles no exception (`sys.exception()` is None when the frame
    starts): what the trace assumed reading `sys.exc_info()`, a bare `raise` or an exception's context
    outside the frame's own except blocks."""
    name, order = "NO_HANDLED_EXCEPTION", 1

    def make(self):
        return Guard(None, self, None)

    def render(self, guard, check):
        return f"{check.const(sys.exception, 'sys_exception')}() is None"

    def describe(self, guard):
        return "sys.exception() is None"

    def explain(self, guard, value, env):
        exc = sys.exception()
        return None if exc is None else f"the caller now handles an exception ({type(exc).__name__})"


@_kind("tensor")
class TENSOR_MATCH(GuardKind):
    """A tensor input's type, dtype, device, sizes, strides, requires_grad and dispatch keys
    (`TensorMeta`); one per source. The C++ fast path checks all tensor inputs in one call and
    assumes they are distinct objects, as they were when traced."""
    name, order, fast_path = "TENSOR_MATCH", 7, True

    def make(self, source, value, meta=None):
        return Guard(source, self, meta or TensorMeta.of(value))

    def key(self, expected):
        return None

    def render_all(self, guards, check):
        fast = TensorGuards(tuple(tensor_spec(g.expected) for g in guards))
        tensors = ", ".join(check.read(g.source) for g in guards)
        return f"{check.const(fast, 'tensor_guards')}({tensors})"

    def describe(self, guard):
        exp = guard.expected
        return (f"{guard.name()}: {exp.cls.__name__} {exp.dtype} {exp.device} size={_dims(exp.shape)} "
                f"stride={_dims(exp.stride)} requires_grad={exp.requires_grad}")

    def explain(self, guard, value, env):
        return guard.expected.mismatch(value, guard.name())

    def explain_together(self, guards, read):
        failed, seen = [], {}
        for g in guards:
            try:
                value = read(g)
            except Exception:  # noqa: BLE001 - reported guard by guard
                continue
            if id(value) in seen:
                failed.append((g, value, f"{g.name()} and {seen[id(value)]} are now the same tensor (they were "
                                         "distinct when compiled)"))
            seen[id(value)] = g.name()
        return failed

    def dynamic_change(self, guard, value):
        dims = guard.expected.size_change(value)
        if dims is not None:
            return DynamicChange(dims=dims)
        if type(value) in (int, float):
            # an argument that is a tensor in some calls and a number in others: both forms symbolic,
            # so that each form's graph fits its later calls whatever their sizes (the number only
            # where numbers may be symbolic: ShapePolicy.dynamic_scalar)
            shape = guard.expected.shape
            return DynamicChange(dims=frozenset(i for i, n in enumerate(shape) if n is not None), scalar=True)
        return None


@_kind("same_object")
class SAME_OBJECT(GuardKind):
    """Two sources hold one object (the graph was traced with them aliased)."""
    name, order = "SAME_OBJECT", 8

    def make(self, source, other_source):
        return Guard(source, self, other_source)

    def render(self, guard, check):
        return f"{check.read(guard.source)} is {guard.expected.expr()}"

    def describe(self, guard):
        return f"{guard.name()} is {guard.expected.name()}"

    def explain(self, guard, value, env):
        return None if value is eval(guard.expected.expr(), env) else \
            f"{guard.name()} is no longer the same object as {guard.expected.name()}"


@_kind("distinct_objects")
class DISTINCT_OBJECTS(GuardKind):
    """Two sources hold different objects, as when traced: the trace told them apart (`a is b`, a dict
    key), or wrote to one and read the other (`a.append(1); len(b)` is only right while `a is not b`)."""
    name, order = "DISTINCT_OBJECTS", 8

    def make(self, source, other_source):
        return Guard(source, self, other_source)

    def render(self, guard, check):
        return f"{check.read(guard.source)} is not {guard.expected.expr()}"

    def describe(self, guard):
        return f"{guard.name()} is not {guard.expected.name()}"

    def explain(self, guard, value, env):
        return None if value is not eval(guard.expected.expr(), env) else \
            f"{guard.name()} is now the same object as {guard.expected.name()}"


def apart(written: tuple, others: tuple) -> bool:
    """Run time: each of `written` is none of the other objects of `written` and `others` (which may be
    one another: only a written object must stay apart)."""
    seen = {id(o) for o in others}
    for w in written:
        if id(w) in seen:
            return False
        seen.add(id(w))
    return True


@_kind("apart")
class APART(GuardKind):
    """One member of a group of objects (the objects of one class, or the attribute dicts) some of which
    the graph writes to: each written member is none of the group's others, as when traced
    (`a.append(1); len(b)` is only right while `a is not b`). `expected` is (group, label, written).
    One check per group, linear in its size: a guard per pair was quadratic (the 212 path finders
    `importlib.invalidate_caches()` writes to made 45,000 guards, 16 s of guard building)."""
    name, order, fast_path = "APART", 8, True

    def make(self, source, group, label, written):
        return Guard(source, self, (group, label, bool(written)))

    def _groups(self, guards):
        groups: dict = {}
        for g in guards:
            groups.setdefault(g.expected[0], ([], []))[0 if g.expected[2] else 1].append(g)
        return groups

    def render_all(self, guards, check):
        fn = check.const(apart, "apart")
        # (each source read in guard order, as SharedReads binds a shared read at its first use)
        checks = []
        for written, others in self._groups(guards).values():
            w = "".join(f"{check.read(g.source)}, " for g in written)
            o = "".join(f"{check.read(g.source)}, " for g in others)
            checks.append(f"{fn}(({w}), ({o}))")
        return " and ".join(checks)

    def describe(self, guard):
        _, label, written = guard.expected
        return (f"{guard.name()} is none of the other {label} the graph reached" if written else
                f"{guard.name()} is none of the {label} the graph writes to")

    def explain(self, guard, value, env):
        return None      # (a member alone always passes: explain_together)

    def explain_together(self, guards, read):
        failed = []
        for written, others in self._groups(guards).values():
            seen = {}
            try:
                for g in others:
                    seen.setdefault(id(read(g)), g.name())
                for g in written:
                    value = read(g)
                    if id(value) in seen:
                        failed.append((g, value, f"{g.name()} is now the same object as {seen[id(value)]} "
                                                 "(they were distinct when compiled)"))
                    seen[id(value)] = g.name()
            except Exception:  # noqa: BLE001, S112 - an unreadable member is reported guard by guard
                continue
        return failed


def written_sharing(pattern: tuple, written: tuple) -> tuple:
    """The part of a `memory_sharing` pattern that a graph writing into the inputs at positions
    `written` depends on: the entries of the groups that hold a written input, None for the others
    (inputs that share memory only among themselves are only read: how, no write can observe; e.g.
    the two columns `torch.where` returns, at a distance that follows the number of rows)."""
    groups = {pattern[i][0] for i in written}
    return tuple(p if p[0] in groups else None for p in pattern)


def written_memory_sharing(written: tuple, *tensors) -> tuple:
    """Run time: `written_sharing` of the tensors' `memory_sharing` pattern."""
    return written_sharing(memory_sharing(*tensors), written)


@_kind("memory_sharing")
class MEMORY_SHARING(GuardKind):
    """For a graph that writes into an input: which tensor inputs share memory with a written one and
    at which distance (`written_sharing` of `memory_sharing`'s pattern over all of them).
    Functionalizing backends turn the write into a copy made after the graph's reads, which is only
    right when the written inputs alias exactly as when traced."""
    name, order = "MEMORY_SHARING", 8

    def make(self, sources, pattern, written):
        written = tuple(written)
        return Guard(None, self, (tuple(sources), written_sharing(tuple(pattern), written), written))

    def render(self, guard, check):
        sources, pattern, written = guard.expected
        tensors = ", ".join(check.read(s) for s in sources)
        return f"{check.const(written_memory_sharing, 'written_memory_sharing')}({written!r}, {tensors}) == {pattern!r}"

    def describe(self, guard):
        sources, pattern, _ = guard.expected
        shared = [f"{s.name()} with {sources[p[0]].name()} ({p[1]:+} bytes)" for s, p in zip(sources, pattern)
                  if p is not None and sources[p[0]] != s]
        return f"tensor inputs sharing memory with a written one: {', '.join(shared) or 'none'}"

    def explain(self, guard, value, env):
        sources, pattern, written = guard.expected
        now = written_memory_sharing(written, *(eval(s.expr(), env) for s in sources))
        if now == pattern:
            return None
        changed = [s.name() for s, a, b in zip(sources, pattern, now) if a != b]
        return (f"the graph writes into an input, and which inputs share memory with a written one changed "
                f"(for {', '.join(changed)})")


def comparison_truth(tensor, op, number, tensor_first: bool) -> bool:
    """`bool(op(tensor, number))` (or `op(number, tensor)`) of a one-element tensor: what `max(x, 0)`
    asks of `0 > x`, asked the same way (the tensor's own comparison, then its truth)."""
    return bool(op(tensor, number) if tensor_first else op(number, tensor))


@_kind("comparison_truth")
class COMPARISON_TRUTH(GuardKind):
    """The truth of a one-element tensor input compared with a number, read from its value on each
    call: `max(x, 0)` answers one of its operands themselves, chosen by it, and the graph was traced
    for one answer. After the tensor's own guards (its type, dtype, one element)."""
    name, order = "COMPARISON_TRUTH", 10

    def make(self, source, op, number, tensor_first, value):
        return Guard(source, self, (op, number, tensor_first, value))

    def key(self, expected):
        op, number, tensor_first, value = expected
        return (op.__name__, type(number), repr(number), tensor_first, value)

    def render(self, guard, check):
        op, number, tensor_first, value = guard.expected
        return (f"{check.const(comparison_truth, 'comparison_truth')}({check.read(guard.source)}, "
                f"{check.const(op, op.__name__)}, {check.const(number, 'number')}, {tensor_first}) is {value}")

    def describe(self, guard):
        op, number, tensor_first, value = guard.expected
        operands = (guard.name(), repr(number)) if tensor_first else (repr(number), guard.name())
        return f"bool({op.__name__}({operands[0]}, {operands[1]})) is {value}"

    def explain(self, guard, value, env):
        op, number, tensor_first, expected = guard.expected
        try:
            now = comparison_truth(value, op, number, tensor_first)
        except Exception as e:  # noqa: BLE001 - the value is of another kind now
            return f"{self.describe(guard)} cannot be read: {e}"
        return None if now is expected else f"{self.describe(guard)} changed: now {now}"


@_kind("shape")
class SHAPE(GuardKind):
    """A relation between input sizes/strides (a `guards.shape.ShapeCheck`, printed from the ShapeEnv)."""
    name, order = "SHAPE", 9

    def make(self, check):
        return Guard(None, self, check)

    def key(self, expected):
        return expected.fast

    def render(self, guard, check):
        return guard.expected.fast

    def describe(self, guard):
        return guard.expected.readable

    def explain(self, guard, value, env):
        return guard.expected.explain(env)

    def dynamic_change(self, guard, value):
        return DynamicChange()   # sizes relate differently: the TENSOR_MATCH failures say which dims



def _without_subclass_hooks(method):
    """Reads of a real tensor's metadata with subclass dispatch off: a tensor subclass's own
    `__torch_function__` is user code, which reading it must never run."""
    @functools.wraps(method)
    def read(*args, **kwargs):
        with torch._C.DisableTorchFunctionSubclass():
            return method(*args, **kwargs)
    return read

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
        shape = tuple(None if i in dynamic_sizes else s for i, s in enumerate(t.size()))
        stride = tuple(None if i in dynamic_strides else s for i, s in enumerate(t.stride()))
        return TensorMeta(type(t), t.dtype, t.device, shape, stride, t.requires_grad,
                          torch._C._dispatch_keys(t), not dynamic_sizes and not dynamic_strides)

    @_without_subclass_hooks
    def size_change(self, value):
        """The static dims whose size differs, if sizes (and the strides that follow from them) are
        all that changed; None when anything else differs."""
        if not issubclass(type(value), torch.Tensor) or type(value) is not self.cls or value.dtype != self.dtype or \
                value.device != self.device or value.dim() != len(self.shape) or \
                value.requires_grad != self.requires_grad or torch._C._dispatch_keys(value) != self.dispatch_keys:
            return None
        dims = frozenset(i for i, (e, a) in enumerate(zip(self.shape, value.size())) if e is not None and e != a)
        return dims or None

    @_without_subclass_hooks
    def mismatch(self, value, name: str):
        """A sentence saying how `value` differs, or None."""
        if not issubclass(type(value), torch.Tensor):   # (no hooks of a failing object run)
            return f"{name} is no longer a tensor: got {type(value).__name__}"
        if type(value) is not self.cls:
            return f"{name} type changed: expected {self.cls.__name__}, got {type(value).__name__}"
        if value.dtype != self.dtype:
            return f"{name}.dtype changed: expected {self.dtype}, got {value.dtype}"
        if value.device != self.device:
            return f"{name}.device changed: expected {self.device}, got {value.device}"
        if value.dim() != len(self.shape):
            return f"{name}.dim() changed: expected {len(self.shape)}, got {value.dim()}"
        for i, (a, b) in enumerate(zip(self.shape, value.size())):
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



def tensor_spec(meta: TensorMeta) -> tuple:
    """The C++ TensorGuards description of one tensor (None = a symbolic dim, not checked here)."""
    return (meta.cls, meta.dtype, meta.device, tuple(meta.shape), tuple(meta.stride), meta.requires_grad,
            meta.dispatch_keys.raw_repr())


def _label(obj) -> str:
    """A readable name for a guarded object, read without running attribute hooks: a module's
    `__getattr__` (torch.classes) or an object's `__getattribute__` may do anything, even raise."""
    kind = type(obj)    # (isinstance would read a failing object's `__class__` through its hooks)
    if issubclass(kind, type):      # (a metaclass may hook attribute reads too)
        return f"{type.__dict__['__qualname__'].__get__(obj)} (id {id(obj)})"
    if issubclass(kind, (types.FunctionType, types.BuiltinFunctionType)):
        return f"{obj.__qualname__} (id {id(obj)})"
    if issubclass(kind, types.ModuleType):   # (the module type's own dict: a subclass may override `__dict__`)
        name = types.ModuleType.__dict__["__dict__"].__get__(obj).get("__name__")
        return f"module {name!s} (id {id(obj)})"
    return f"{type(obj).__name__} (id {id(obj)})"


def _dims(values) -> str:
    """A size/stride tuple with its dynamic entries shown as `*`."""
    return "[" + ", ".join("*" if v is None else str(v) for v in values) + "]"


MODULE_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")

# device types with an autocast state (an op on any of them may be autocast while the graph runs)
AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "ipu", "mtia", "privateuseone")

def user_dispatch_mode_active() -> bool:
    """A TorchDispatchMode of the user's is active (torch's own infrastructure modes do not count).
    Compiled code never runs under one, as with torch.compile: compiling would show the mode fake
    ops, and a graph would show it the backend's ops instead of the program's."""
    return torch._C._len_torch_dispatch_stack() > 0 and any_torch_dispatch_mode_on_stack()


def user_function_mode_active() -> bool:
    """A TorchFunctionMode is active (a user's, a library's like HF's `TransformGetItemToIndex`, or
    `with torch.device(...)`): it would see the graph's calls, and the backend's ops not at all,
    while tracing does not model it. Compiled code never runs under one: the frame runs eagerly."""
    return torch._C._len_torch_function_stack() > 0


def functorch_transform_active() -> bool:
    """A functorch transform (vmap, grad, jvp...) is running the frame natively: its tensors are
    wrapped (batched, grad-tracking), which tracing does not model, so the frame runs eagerly, and
    no entry compiled outside a transform runs inside one."""
    return torch._C._are_functorch_transforms_active()


GLOBAL_STATE_READERS = {
    "grad_enabled": torch.is_grad_enabled,
    "default_dtype": torch.get_default_dtype,
    "deterministic_algorithms": torch.are_deterministic_algorithms_enabled,
    "autocast": lambda: tuple((d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d))
                              for d in AUTOCAST_DEVICES),
    "autocast_cache": torch.is_autocast_cache_enabled,
    "user_dispatch_mode": user_dispatch_mode_active,
    "user_function_mode": user_function_mode_active,
    "functorch_transform": functorch_transform_active,
    # ops inside inference_mode record no autograd and make inference tensors, whatever grad mode says: a
    # graph compiled outside it (an AOTAutograd one links its outputs to autograd) must not run inside it
    "inference_mode": torch.is_inference_mode_enabled,
    # inside torch._C.DisableTorchFunction[Subclass]() blocks ops give plain tensors and state queries
    # answer otherwise (a resume function starts inside one)
    "torch_function": lambda: torch_function_state(),
}


def torch_function_state() -> tuple:
    """(torch function enabled, all torch function disabled)."""
    return torch._C._is_torch_function_enabled(), torch._C._is_torch_function_all_disabled()


def global_state_guards() -> list[Guard]:
    """The global state every graph depends on, as of now."""
    return [Guard.global_state(name, reader()) for name, reader in GLOBAL_STATE_READERS.items()]
