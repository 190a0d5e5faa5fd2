"""nn.Module instances: parameters and buffers become graph inputs, submodules are inlined
through `forward` (with forward pre/post hooks), containers iterate and index."""
from __future__ import annotations

import dataclasses
import types
from typing import Any

import torch

from ... import _C
from ...guards.guard import MODULE_HOOK_TABLES, Guard
from ...guards.source import AttrSource, ItemSource, ModuleGlobalSource, ModuleStateSource
from ..graph_break import Unsupported, fold, user_error
from ..reads import MISSING, class_lookup, instance_attr
from .base import NotConstant, families, python_value
from .constant import const
from .dicts import DictVariable
from .functions import BoundMethodVariable, UserFunctionVariable
from .distributed import is_distributed_module
from .iterators import ListIteratorVariable, StopIterationSignal, advanced, exhausted_like
from .lazy_module import initialize_now, initializes_lazily, is_torch_lazy_class
from .lists import ListVariable, TupleVariable
from .tensor import TensorVariable
from .user_defined import _MISSING, UserDefinedObjectVariable, class_method

_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict, torch.nn.ParameterList,
               torch.nn.ParameterDict)


def new_torch_module(tx, cls, args, kwargs):
    """`nn.MaxPool1d(2)` inside compiled code: one of torch's own module classes (or a user class
    whose building runs only `nn.Module.__init__`, like HF's `ACT2FN["silu"]`), built at trace time
    from constant arguments. Building it runs torch's code only; it is kept when that touched no RNG
    state and gave a module without parameters or buffers, which is the same whichever call made it
    (its attributes are constants of the trace; it exists only there, so letting it escape the frame
    breaks the graph)."""
    if issubclass(cls, _CONTAINERS) or not (cls.__module__.startswith("torch.nn.modules.") or
                                            _built_by_module_init(tx, cls)):
        raise Unsupported("unsupported_call", fn=f"class {cls.__qualname__}", detail=" (a user-defined module "
                                                                                     "created inside compiled code)")
    try:
        real_args = [python_value(tx, a) for a in args]
        real_kwargs = {k: python_value(tx, v) for k, v in kwargs.items()}
    except NotConstant:
        raise Unsupported("unsupported_call", fn=f"class {cls.__qualname__}",
                          detail=" (a module created from values that are not constants)") from None
    rng = torch.random.get_rng_state()
    module = fold(cls, *real_args, **real_kwargs)
    if not torch.equal(rng, torch.random.get_rng_state()) or any(True for _ in module.parameters()) or \
            any(True for _ in module.buffers()):
        torch.random.set_rng_state(rng)
        raise Unsupported("unsupported_call", fn=f"class {cls.__qualname__}",
                          detail=" (a module with parameters or buffers created inside compiled code)")
    built = None
    if all(_rebuildable_argument(v) for v in (*real_args, *real_kwargs.values())):
        built = (cls, tuple(real_args), tuple(real_kwargs.items()))
    return NNModuleVariable(value=module, cls=cls, built=built)


def build_module(cls, args, kwargs):
    """Run time: a module the trace built (new_torch_module), built again by the same call. Its frames
    (torch's own code) are not compiled: what they do is known, and the trace had them inline."""
    hook = _C.set_callback(None)
    try:
        return cls(*args, **dict(kwargs))
    finally:
        _C.set_callback(hook)


def _rebuildable_argument(value) -> bool:
    """An argument the transformed code can build the module from again, on each run, to the same
    module: a constant that is immutable all the way down (a list would be one object shared by the
    modules of every run)."""
    if type(value) is tuple:
        return all(_rebuildable_argument(v) for v in value)
    return type(value) in (int, float, bool, str, type(None), torch.dtype, torch.device)


def _built_by_module_init(tx, cls) -> bool:
    """Whether `cls()` runs nothing but torch's `nn.Module.__init__`: no metaclass, `__new__` or
    `__init__` of its own, `call_super_init` off and nothing after nn.Module in the MRO (which
    `nn.Module.__init__` would call into). The class lookups are guarded."""
    mro = cls.__mro__
    if type(cls) is not type or mro[mro.index(torch.nn.Module) + 1:] != (object,):
        return False
    init, new = class_lookup(tx, cls, "__init__")[0], class_lookup(tx, cls, "__new__")[0]
    return init is torch.nn.Module.__init__ and new is object.__dict__["__new__"] and \
        class_lookup(tx, cls, "call_super_init")[0] is False


def _is_plain_graph_module_call(module, call) -> bool:
    """An fx GraphModule's class `__call__` is a wrapper fx installs that runs nn.Module.__call__ and,
    on an error, prints the generated code's line before re-raising: a module call to trace as such
    (unless a user subclass of GraphModule brought its own `__call__`, which the wrapper calls)."""
    wrapped = type(module).__dict__.get("_wrapped_call") if isinstance(module, torch.fx.GraphModule) else None
    return isinstance(wrapped, torch.fx.graph_module._WrappedCall) and wrapped.cls_call is None and \
        getattr(call, "__qualname__", "") == "GraphModule.recompile.<locals>.call_wrapped"


def _torch_defines(tx, var, name) -> bool:
    """Whether the method `name` of the module's class is torch's own (a container's `__getitem__`, not
    one a subclass wrote): the class lookup is guarded."""
    attr = class_method(tx, var, name)[0]
    owner = next((k for k in type(var.value).__mro__ if vars(k).get(name, MISSING) is attr), None)
    return attr is not MISSING and owner is not None and owner.__module__.startswith("torch.nn.modules.")


def _changed_by_trace(tx, obj) -> bool:
    """Whether the trace changed the real dict or object `obj` (a change written back after the graph)."""
    cached = tx.output.wrapped_objects.get(id(obj))
    return cached is not None and cached[0] is obj and cached[1] in tx.output.side_effects.mutated


def _traced_contents(tx, table):
    """The contents of the tracker of a real dict the trace changed (a new object at each change), or None."""
    cached = tx.output.wrapped_objects.get(id(table))
    if cached is None or cached[0] is not table or cached[1] not in tx.output.side_effects.mutated:
        return None
    return tx.output.side_effects.peek(cached[1])


_TABLES = ("_parameters", "_buffers", "_modules")


def _state_changed(tx, modules, tables=True, attributes=True) -> bool:
    """Whether the trace changed what nn.Module's own code reads from these real modules and has not
    written it back yet: a table (`m._buffers["b"] = t`: its tracker holds the change), or an attribute
    that lives in one or becomes one (a module or a parameter assigned, an attribute deleted: the
    tables, tracker or not, do not show it until the write-back; a table replaced, `self._modules = {...}`).
    Reading the real tables is stale then."""
    effects = tx.output.side_effects
    for m in modules:
        owned = [m.__dict__.get(t) for t in _TABLES]
        if tables and any(t is not None and _changed_by_trace(tx, t) for t in owned):
            return True
        cached = tx.output.wrapped_objects.get(id(m))
        if not attributes or cached is None or cached[0] is not m or cached[1] not in effects.mutated:
            continue
        # (a module with a source keeps only object's writes as attributes, setattr: they change no table,
        # unless they replace one)
        sourced = cached[1].source is not None
        for name, value in effects.peek(cached[1]).items():
            if name in _TABLES:
                return True
            if sourced:
                continue
            if value is _MISSING or any(t is not None and name in t for t in owned) or \
                    isinstance(value, NNModuleVariable) or \
                    (isinstance(value, TensorVariable) and issubclass(value.python_type(), torch.nn.Parameter)):
                return True
    return False


# the values nn.Module.__setattr__ puts in a table whatever their name (by the tracker's type, as
# builtins.isinstance_of answers isinstance for tensors)
_TABLE_VALUES = (torch.nn.Parameter, torch.nn.Buffer, torch.nn.Module)

# a container's methods the model answers from its table (when the class has torch's own)
_MODELLED = ("__len__", "__iter__", "__getitem__", "__contains__", "keys", "values", "items")


@dataclasses.dataclass(frozen=True, eq=False)
class ModuleTableIterator(ListIteratorVariable):
    """The iterator of a ModuleList, Sequential or ModuleDict: a dict iterator over the real `_modules`
    table (`iter(self._modules.values())`), so the trace changing the table's size while it is live
    makes its next step raise eager's RuntimeError (another change is not modelled: a graph break).
    Live at a break, it is rebuilt as that dict iterator at its position, before the table's changes
    are written back: what runs after the graph finds the live table, as eager's loop does."""
    table: Any = None
    table_source: Any = None   # reads `_modules` at run time (None: a container made in the trace)
    container_source: Any = None   # a reversed one: reads the container at run time (None: made in the trace)
    at_start: Any = None     # the table's traced contents when the iterator was made (None: unchanged)
    walks_known_items = False   # each step reads the live container (`reversed`: `container[i]`)

    @staticmethod
    def create(tx, items, table, table_source, keys=False):
        var = ModuleTableIterator(kind="dict_keyiterator" if keys else "dict_valueiterator", table=table,
                                  table_source=table_source, at_start=_traced_contents(tx, table))
        tx.output.side_effects.track(var, (tuple(items), 0))
        return var

    def python_type(self):
        if self.kind == "reversed":
            return reversed
        return type(iter({})) if self.kind == "dict_keyiterator" else type(iter({}.values()))

    def _check(self, tx):
        now = _traced_contents(tx, self.table)
        if now is self.at_start:
            return
        if self.kind != "reversed" and len(now) != len(tx.output.side_effects.get(self)[0]):
            raise user_error(RuntimeError("dictionary changed size during iteration"))
        raise Unsupported("python_protocol", what="a module container's iterator after the trace changed the "
                                                  "container")

    def next_item(self, tx):
        self._check(tx)
        try:
            return super().next_item(tx)
        except StopIterationSignal:
            # CPython's dict iterator lets go of its table once it has said so: it stays exhausted
            tx.output.side_effects.track(("exhausted", self), True)
            raise

    def unpack(self, tx):
        self._check(tx)
        tx.output.side_effects.track(("exhausted", self), True)
        return super().unpack(tx)

    def reconstruct(self, codegen):
        effects = codegen.tx.output.side_effects
        source = self.container_source if self.kind == "reversed" else self.table_source
        if source is None or self.at_start is not None:
            raise Unsupported("unrebuildable", what=f"rebuilding {self.describe()} over a module container "
                                                    "the trace made or changed")
        if self.kind == "reversed":
            # CPython's `reversed` holds the container and an index (from the length when made): rebuilt
            # at its position, its next steps read `container[i]` from the live container, as eager's
            codegen.load_callable(advanced)
            codegen.load_global_builtin("reversed")
            if effects.contents.get(("exhausted", self)):
                codegen.load_const(())        # (an exhausted one has let go of its container)
                codegen.call(1)
                codegen.load_const(None)
            else:
                source.reconstruct(codegen)
                codegen.call(1)
                codegen.load_const(effects.get(self)[1])
            codegen.call(2)
            return
        if effects.contents.get(("exhausted", self)):
            codegen.load_callable(exhausted_like)
            codegen.load_const(self.python_type())
            codegen.call(1)
            return
        codegen.load_callable(advanced)
        codegen.load_global_builtin("iter")
        self.table_source.reconstruct(codegen)
        if self.kind == "dict_valueiterator":
            codegen.load_method("values")
            codegen.call_method(0)
        codegen.call(1)
        codegen.load_const(effects.get(self)[1])
        codegen.call(2)


def module_state_changed(tx) -> bool:
    """Whether the trace changed the tables or module attributes of any real module (not written back)."""
    return _state_changed(tx, [obj for obj, _ in tx.output.wrapped_objects.values()
                               if isinstance(obj, torch.nn.Module)])


families.register(module_state_changed)


@dataclasses.dataclass(frozen=True, eq=False)
class NNModuleVariable(UserDefinedObjectVariable):
    # (class, args, keyword items) of a module built while tracing from immutable constants by torch's
    # code alone (new_torch_module): the transformed code builds it again when it leaves the frame
    built: Any = None

    def iterate(self, tx):
        if isinstance(self.module, _CONTAINERS) and not _torch_defines(tx, self, "__iter__"):
            return self.call_method(tx, "__iter__", [], {})     # the subclass's own __iter__
        if isinstance(self.module, (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)):
            table_source = AttrSource(self.source, "_modules") if self.source else None
            return ModuleTableIterator.create(tx, self._children_items(tx), self.module._modules, table_source,
                                              keys=isinstance(self.module, torch.nn.ModuleDict))
        if isinstance(self.module, (torch.nn.ParameterList, torch.nn.ParameterDict)):
            # torch's own __iter__ runs: a ParameterList's reads `self[i]` at each step (a parameter
            # replaced later in the loop is the one taken), a ParameterDict's walks its `_keys` dict
            # (a size change raises eager's RuntimeError)
            fn, fn_source = class_method(tx, self, "__iter__")
            return UserFunctionVariable(fn=fn, source=fn_source).call_function(tx, [self], {})
        return None   # a module container iterates over its children (unpack)

    def describe(self):
        return f"module {type(self.value).__name__}"

    @property
    def module(self) -> torch.nn.Module:
        return self.value

    def _state_source(self, table, name):
        """Parameters, buffers and submodules are read from the module's own dicts: a dict lookup
        in guards and generated code instead of nn.Module.__getattr__."""
        return ModuleStateSource(self.source, table, name) if self.source else None

    def python_type(self):
        # the module's class as it is now: a lazy module's first call changes it (LazyLinear -> Linear)
        return type(self.value)

    def guard_identity(self, tx):
        if self.source is not None:
            tx.output.guards.add(Guard.id_match(self.source, self.module))

    def _attr_source(self, name):
        return AttrSource(self.source, name) if self.source else None

    def var_getattr(self, tx, name):
        module = self.module
        tx.output.modules_read.add(id(module))
        written = self.attrs(tx)
        if name in written:
            if written[name] is not _MISSING:
                return written[name]
            if class_method(tx, self, name)[0] is not MISSING:
                raise Unsupported("python_protocol", what=f"reading {name!r} of {self.describe()} after deleting it")
            raise user_error(AttributeError(f"'{type(module).__name__}' object has no attribute '{name}'"))
        if name in _TABLES + ("__dict__",) and _state_changed(tx, [module], tables=False):
            # nn.Module's own code reading a table the trace's attribute writes have not reached yet (a
            # table changed itself is read through its tracker, which holds the change)
            raise Unsupported("python_protocol", what=f"reading {name} of {self.describe()} after the trace changed "
                                                      "its parameters, buffers or submodules")
        if class_method(tx, self, name, pending_ok=True)[0] is not MISSING:
            # a name the class defines (or the trace set on it) answers before the parameter, buffer and
            # submodule tables, which only nn.Module.__getattr__ reads (a method `act` wins over a submodule
            # `self.act`); the generic lookup keeps Python's order (data descriptors, the instance dict, the class)
            return super().var_getattr(tx, name)
        if name == "training":
            if self.source is not None:
                tx.output.guards.add(Guard.constant(self._attr_source(name), module.training))
            return const(module.training)
        if name in module.__dict__:
            return tx.wrap(module.__dict__[name], self._attr_source(name))
        if _state_changed(tx, [module], attributes=False) or any(t in written for t in _TABLES):
            # a table changed by the trace (`m._buffers["b"] = t`) is not what the real one holds: nn.Module's
            # own __getattr__, traced, reads the tables' trackers (an attribute written, this one
            # included, is read from the writes above; a table replaced is one of them)
            return super().var_getattr(tx, name)
        for table in _TABLES:
            entries = module.__dict__.get(table, {})
            if name in entries:
                value = entries[name]
                return tx.wrap(value, self._state_source(table, name))
        return super().var_getattr(tx, name)

    def setattr(self, tx, name, value):
        """`module.name = value` through torch's nn.Module.__setattr__: an attribute that is none of the
        module's parameters, buffers or submodules, given a value that is none of them, is object's
        write to the instance dict; any other runs torch's own code, traced, which writes the tables
        (their trackers hold the change, so a later read of a table sees it, and replay it after the
        graph)."""
        if class_method(tx, self, "__setattr__")[0] is not torch.nn.Module.__setattr__:
            return super().setattr(tx, name, value)    # the class's own __setattr__, traced
        if self.source is None:
            return self._setattr_made_here(tx, name, value)
        in_tables = self._in_tables(tx, name)
        if not in_tables and not issubclass(value.python_type(), _TABLE_VALUES):
            return self.generic_setattr(tx, name, value)
        UserFunctionVariable(fn=torch.nn.Module.__setattr__).call_function(tx, [self, const(name), value], {})

    def delattr(self, tx, name):
        """`del module.name` through torch's nn.Module.__delattr__: a table's entry is deleted from the
        table (traced), another attribute as object deletes it."""
        if class_method(tx, self, "__delattr__")[0] is not torch.nn.Module.__delattr__:
            return super().delattr(tx, name)    # the class's own __delattr__, traced
        if self.source is None:
            attrs = dict(self.attrs(tx))
            attrs[name] = _MISSING
            tx.output.side_effects.store(self, attrs)
            return
        if not self._in_tables(tx, name):
            return self.generic_delattr(tx, name)
        UserFunctionVariable(fn=torch.nn.Module.__delattr__).call_function(tx, [self, const(name)], {})

    def _in_tables(self, tx, name) -> bool:
        """Whether `name` is a key of the module's parameters, buffers or submodules, as the trace has
        them now: read through the tables' trackers (the real tables' answers are guarded; tables the
        trace made, `nn.Module.__init__` traced, are its attributes)."""
        written = self.attrs(tx)
        for table in _TABLES:
            if table in written:
                tracker = written[table]
            else:
                real = instance_attr(tx, self.module, self.source, table)
                tracker = _MISSING if real is MISSING else tx.wrap(real, AttrSource(self.source, table))
            if tracker is _MISSING:
                continue
            if tracker.call_method(tx, "__contains__", [const(name)], {}).as_python_constant():
                return True
        return False

    def _setattr_made_here(self, tx, name, value):
        """A module made in the compiled frame (never written back: it cannot leave the frame): the
        write is kept as an attribute (a table read after one that changes a table breaks, see
        _state_changed)."""
        module = self.module
        for table in _TABLES:
            if name not in module.__dict__.get(table, {}):
                continue
            is_none = value.is_python_constant() and value.as_python_constant() is None
            if not (is_none or (table == "_buffers" and isinstance(value, TensorVariable)) or
                    (table == "_modules" and isinstance(value, NNModuleVariable) and value.source is not None)):
                raise Unsupported("attribute_write", what=f"assigning module attribute {name!r} that is a "
                                                         f"{table[1:-1]} to {value.describe()}")
            break
        attrs = dict(self.attrs(tx))
        attrs[name] = value
        tx.output.side_effects.store(self, attrs)

    # -- containers -----------------------------------------------------------
    def children_vars(self, tx):
        module = self.module
        table = "_parameters" if isinstance(module, (torch.nn.ParameterList, torch.nn.ParameterDict)) else "_modules"
        if _state_changed(tx, [module], tables=table != "_modules"):
            raise Unsupported("python_protocol", what=f"the children of {self.describe()} after the trace changed "
                                                      "them")
        if _changed_by_trace(tx, module._modules) and self.source is not None:
            # appended to, or items set or deleted, by the trace (torch's own methods, traced): the
            # children are what the table's tracker holds now
            pairs = tx.wrap(module._modules, AttrSource(self.source, "_modules")).pairs(tx)
            if not all(k.is_python_constant() for k, _ in pairs):
                raise Unsupported("python_protocol", what=f"the children of {self.describe()} under keys that are "
                                                          "not constants")
            return [(k.as_python_constant(), v) for k, v in pairs]
        if self.source is not None:   # the container's length and keys (`layers.append(...)` recompiles)
            tx.output.guards.add(Guard.dict_keys(AttrSource(self.source, table), getattr(module, table)))
        if isinstance(module, (torch.nn.ParameterList, torch.nn.ParameterDict)):
            return [(k, tx.wrap(v, self._state_source("_parameters", k))) for k, v in module._parameters.items()]
        return [(k, tx.wrap(v, self._state_source("_modules", k))) for k, v in module._modules.items()]

    def unpack(self, tx):
        it = self.iterate(tx)
        if it is not None:
            return tx.unpack_iterable(it)
        return self._children_items(tx)

    def reversed_iterator(self, tx):
        """`reversed(container)` of a ModuleList, Sequential or ParameterList (no `__reversed__`: CPython's
        reversed takes `container[i]` from the end), or None. Its items are the children as they are
        now: a change of the table while it is live is not modelled (a graph break); live at a break, it
        is rebuilt as CPython's reversed at its position (reconstruct)."""
        module = self.module
        if not isinstance(module, (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ParameterList)) or \
                class_method(tx, self, "__reversed__")[0] is not MISSING or \
                not all(_torch_defines(tx, self, n) for n in ("__len__", "__getitem__")):
            return None
        table = module._parameters if isinstance(module, torch.nn.ParameterList) else module._modules
        var = ModuleTableIterator(kind="reversed", table=table, container_source=self.source,
                                  at_start=_traced_contents(tx, table))
        tx.output.side_effects.track(var, (tuple(v for _, v in self.children_vars(tx))[::-1], 0))
        return var

    def _children_items(self, tx):
        if isinstance(self.module, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
            return [const(k) for k, _ in self.children_vars(tx)]
        if isinstance(self.module, _CONTAINERS):
            return [v for _, v in self.children_vars(tx)]
        return super().unpack(tx)

    def call_method(self, tx, name, args, kwargs):
        module = self.module
        if name == "__call__":
            return self.call_function(tx, args, kwargs)
        tx.output.modules_read.add(id(module))
        if isinstance(module, _CONTAINERS) and (name not in _MODELLED or _torch_defines(tx, self, name)):
            children = self.children_vars(tx)
            if name == "__len__":
                return const(len(children))
            if name == "__iter__":
                return self.iterate(tx) or ListIteratorVariable.create(tx, self.unpack(tx))
            if name == "__getitem__":
                key = args[0].as_python_constant()
                if isinstance(key, slice):
                    # the container's own __getitem__ builds a new container of the same children; the
                    # children were just wrapped with their sources, and reading them through the new
                    # container finds those same trackers
                    if isinstance(module, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
                        raise Unsupported("unsupported_syntax", what="slicing a module dict")
                    sub = module[key]
                    return NNModuleVariable(value=sub, cls=type(sub))
                if isinstance(key, str):
                    return dict(children)[key]
                return children[key][1]
            if name == "__contains__":
                return const(args[0].as_python_constant() in dict(children))
            if name in ("keys", "values", "items"):
                items = {"keys": [const(k) for k, _ in children], "values": [v for _, v in children],
                         "items": [TupleVariable((const(k), v)) for k, v in children]}[name]
                return ListVariable.create(tx, items)
        if name in ("children", "modules", "parameters", "buffers", "named_children", "named_parameters",
                    "named_buffers", "named_modules"):
            return self._iterate(tx, name, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def _iterate(self, tx, name, args, kwargs):
        # the entries are listed from this module's tables (their number and order, and which of them
        # are one object): the direct children of a module with at most one are its `_modules` keys
        # (`Module._apply`, which `.to()` runs, walks the children of every leaf); otherwise the
        # trace is specialized on the module
        if name in ("children", "named_children") and len(self.module._modules) <= 1 and self.source is not None:
            tx.output.guards.add(Guard.dict_keys(AttrSource(self.source, "_modules"), self.module._modules))
        else:
            self.guard_identity(tx)
        if _state_changed(tx, self.module.modules()):
            raise Unsupported("python_protocol", what=f"{name}() of {self.describe()} after the trace changed "
                                                      "its parameters, buffers or submodules")
        real_args = [a.as_python_constant() for a in args]
        real_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        results = []
        named = name.startswith("named_")
        entries = list(getattr(self.module, name)(*real_args, **real_kwargs))
        for entry in entries:
            key, value = entry if named else (None, entry)
            path = self._path_to(value)
            src = self.source
            for part in path or []:
                src = AttrSource(src, part) if src is not None else None
            var = tx.wrap(value, src if path is not None else None)
            results.append(TupleVariable((const(key), var)) if named else var)
        return ListIteratorVariable.create(tx, results, name)

    def _path_to(self, target):
        for qualname, value in list(self.module.named_parameters(remove_duplicate=False)) + \
                list(self.module.named_buffers(remove_duplicate=False)) + \
                list(self.module.named_modules(remove_duplicate=False)):
            if value is target:
                return [p for p in qualname.split(".") if p]
        return None

    # -- calling ----------------------------------------------------------------
    def call_function(self, tx, args, kwargs):
        module = self.module
        call, call_src = class_method(tx, self, "__call__")
        if isinstance(call, types.FunctionType) and call.__module__ is not None and \
                not call.__module__.startswith("torch.") and not _is_plain_graph_module_call(module, call):
            # the class's own `__call__` (written by the program) runs instead of nn.Module's (no hooks
            # unless it calls them)
            return UserFunctionVariable(fn=call, source=call_src).call_function(tx, [self, *args], kwargs)
        if call is not torch.nn.Module.__dict__["__call__"] and not _is_plain_graph_module_call(module, call):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (its class overrides __call__)")
        if is_distributed_module(module):
            raise Unsupported("distributed", fn=self.describe())
        if torch.nn.modules.module._global_forward_hooks or torch.nn.modules.module._global_forward_pre_hooks:
            raise Unsupported("module_hooks", what="global module hooks")
        if module._backward_hooks or module._backward_pre_hooks:
            raise Unsupported("module_hooks", what="module backward hooks")
        first_call, forward = None, None
        if initializes_lazily(module):
            # its first call: the initializing pre-hook runs now when that is exactly eager (else the
            # builder refuses its uninitialized parameters, breaking the graph at this call)
            if not is_torch_lazy_class(module):
                # eager's `_call_impl` took `forward` and the pre-hooks and backward hooks to run before
                # the hook ran: what a program's hook adds, removes or replaces counts from the next call
                first_call = {t: dict(getattr(module, t)) for t in
                              ("_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")}
                forward_before = module.__dict__.get("forward"), type(module)
            ran = initialize_now(tx, self, args, kwargs)
            first_call, forward = _first_call_differences(tx, self, first_call, forward_before) \
                if first_call is not None and ran else (None, None)
        # (after a lazy module's initialization: the hooks the trace runs are the ones left, as the
        # next call finds them; for a program's hook that changed them, the ones this first call runs)
        self._guard_hooks(tx, first_call)
        pre_hooks = module._forward_pre_hooks if first_call is None else \
            {k: v for k, v in first_call["_forward_pre_hooks"].items() if k != _INITIALIZING}
        # the hooks get the very objects eager's `_call_impl` hands them: the args tuple (or what a
        # pre-hook returned) and one kwargs dict, which a hook may change in place
        args_var, kwargs_var = TupleVariable(tuple(args)), None
        if module._forward_pre_hooks_with_kwargs or module._forward_hooks_with_kwargs:
            kwargs_var = DictVariable.create(tx, [(const(k), v) for k, v in kwargs.items()])
        for hook_id, hook in pre_hooks.items():
            # (one the initializing hook removed still runs at this first call, as eager's: the compiled
            # code serves that call only, see _first_call_differences)
            hook_var = tx.wrap(hook, self._hook_source("_forward_pre_hooks", hook_id)
                               if hook_id in module._forward_pre_hooks else None)
            if hook_id in module._forward_pre_hooks_with_kwargs:
                result = hook_var.call_function(tx, [self, args_var, kwargs_var], {})
                if not _is_none(result):
                    if not (isinstance(result, TupleVariable) and result.python_type() is tuple and
                            len(result.items) == 2):
                        raise Unsupported("module_hooks", what="a forward pre-hook returning neither None "
                                                                "nor (args, kwargs)")
                    args_var, kwargs_var = result.items
                continue
            result = hook_var.call_function(tx, [self, args_var], {})
            if not _is_none(result):
                args_var = result if issubclass(result.python_type(), tuple) else TupleVariable((result,))
        args, kwargs = list(tx.unpack_iterable(args_var)), _keyword_arguments(tx, kwargs_var, kwargs)
        # `forward` as `module.forward` finds it: replaced on the instance or on the class, the read
        # is guarded (frontend/reads.py)
        output = (forward or self.var_getattr(tx, "forward")).call_function(tx, args, kwargs)
        for hook_id, hook in module._forward_hooks.items():
            hook_var = tx.wrap(hook, self._hook_source("_forward_hooks", hook_id))
            if hook_id in module._forward_hooks_with_kwargs:
                result = hook_var.call_function(tx, [self, args_var, kwargs_var, output], {})
            else:
                result = hook_var.call_function(tx, [self, args_var, output], {})
            if not _is_none(result):
                output = result
        return output

    def _guard_hooks(self, tx, first_call=None):
        """Which hooks ran was decided while tracing: a hook added or removed later recompiles.
        `first_call`: the tables a lazy module's first call runs (taken before its initialization)
        where they are not the module's now."""
        for name in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks"):
            table = getattr(torch.nn.modules.module, name)
            tx.output.guards.add(Guard.dict_keys(ModuleGlobalSource("torch.nn.modules.module", name), table))
        if self.source is None:
            return
        module = self.module
        tables = {t: getattr(module, t) for t in MODULE_HOOK_TABLES}
        tables.update(first_call or {})
        if not any(tables.values()):
            tx.output.guards.add(Guard.no_module_hooks(self.source))
        else:
            for t in MODULE_HOOK_TABLES:
                tx.output.guards.add(Guard.dict_keys(AttrSource(self.source, t), tables[t]))

    def _hook_source(self, table, hook_id):
        return ItemSource(AttrSource(self.source, table), hook_id) if self.source else None

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        tx = codegen.tx
        if self.built is None or self.attrs(tx) or \
                any(_changed_by_trace(tx, v) for v in self.module.__dict__.values()):
            raise Unsupported("unrebuildable", what="returning a module created while tracing")
        # built again by the same call: a new module on every run, as eager's (the one the trace built
        # is what this call makes: torch's code from constants, touching no RNG, with no tensors), once
        # per run of the code (codegen keeps it for a second use)
        codegen.load_callable(build_module)
        for part in self.built:
            codegen.load_const(part)
        codegen.call(3)


_INITIALIZING = "initializing hook"


def _first_call_differences(tx, var, before, forward_before):
    """After a program lazy module's initialization: (None, None) when its first call runs what later
    calls run; else (the hook tables the first call runs, as taken before the initialization, with a
    key no later table has, so the compiled code serves this one call: a later one compiles again;
    the tracker of the `forward` the first call runs, or None)."""
    module = var.module
    init_id = next(iter(before["_forward_pre_hooks"]))    # (checked first: lazy_module._refusal)
    hooks_before = {k: v for k, v in before["_forward_pre_hooks"].items() if k != init_id}
    same_hooks = list(hooks_before.items()) == list(module._forward_pre_hooks.items()) and \
        all(list(before[t].items()) == list(getattr(module, t).items())
            for t in ("_backward_hooks", "_backward_pre_hooks"))
    own, cls = forward_before
    same_forward = module.__dict__.get("forward") is own and (
        type(module) is cls or own is not None or
        class_lookup(tx, type(module), "forward")[0] is class_lookup(tx, cls, "forward")[0])
    if same_hooks and same_forward:
        return None, None
    before["_forward_pre_hooks"] = {_INITIALIZING: None, **hooks_before}
    forward = None
    if not same_forward:
        old = own if own is not None else class_lookup(tx, cls, "forward")[0]
        if own is not None:
            forward = tx.wrap(own, None)    # (the instance's own `forward`, called without self)
        elif isinstance(old, types.FunctionType):
            forward = BoundMethodVariable(fn=UserFunctionVariable(fn=old), self_var=var)
        else:
            raise Unsupported("module_hooks", what="a forward a lazy module's initialization replaced")
    return before, forward


def _is_none(var) -> bool:
    return var.is_python_constant() and var.as_python_constant() is None


def _keyword_arguments(tx, kwargs_var, kwargs: dict) -> dict:
    """The keywords `forward_call(*args, **kwargs)` passes: the dict the hooks saw (or returned),
    read after them; keys must be strings (else eager's TypeError: the call runs as Python)."""
    if kwargs_var is None:
        return kwargs
    if not isinstance(kwargs_var, DictVariable) or kwargs_var.python_type() is not dict:
        raise Unsupported("module_hooks", what=f"forward keywords from {kwargs_var.describe()}")
    pairs = kwargs_var.pairs(tx)
    if not all(k.is_python_constant() and type(k.as_python_constant()) is str for k, _ in pairs):
        raise Unsupported("module_hooks", what="forward keywords that are not all strings")
    return {k.as_python_constant(): v for k, v in pairs}


families.register(new_torch_module, NNModuleVariable)
