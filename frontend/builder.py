"""VariableBuilder: wrap a real value read from the frame (through a Source) into a tracker, and
record the guards that make the assumptions about it safe. Compile time only."""
from __future__ import annotations

import collections
import enum
import functools
import inspect
import operator
import sys
import types
import weakref

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from ..decorators import is_constant_result
from ..disable import disabled_wrapper_code
from ..guards.guard import Guard, is_numpy_number
from ..guards.shape import scalar_can_be_dynamic
from ..guards.source import (
    AttrSource,
    ClassNamespaceSource,
    ConstSource,
    ItemSource,
    ListIteratorSource,
    LocalSource,
    SetItemsSource,
    iterator_rest,
    set_items_seen,
)
from ..probe import (
    class_dict_lookup,
    class_mro,
    class_namespace,
    overrides_in_python,
    safe_in,
    static_getattr,
    static_hasattr,
)
from .graph_break import Unsupported
from .resume import ITER_ARGUMENT_PREFIX, STACK_ARGUMENT_PREFIX, TABLE_ARGUMENT_PREFIX, is_resume_code
from .variables.autograd_function import CheckpointVariable
from .variables.base import families
from .variables.builtins import BuiltinVariable, OperatorGetterVariable, has_builtin_handler, is_tensor_getter
from .variables.constant import ConstantVariable, LazyGuardedConstantVariable, is_constant_value
from .variables.dicts import DictVariable, SetVariable, UnreadValue
from .variables.distributed import DistributedFunctionVariable, is_distributed_function
from .variables.functions import (
    BoundMethodVariable,
    CompiledFunctionVariable,
    CompileFunctionVariable,
    ConstantResultFunctionVariable,
    PartialVariable,
    SkippedFunctionVariable,
    UserFunctionVariable,
)
from .variables.iterators import (
    ListIteratorVariable,
    ResumedIteratorVariable,
    ResumedLiveIterator,
)
from .variables.lists import ListVariable, NamedTupleVariable, SizeVariable, TupleVariable, is_named_tuple_class
from .variables.misc import CellVariable, PythonModuleVariable, WeakProxyVariable
from .variables.nn_module import NNModuleVariable
from .variables.numpy import NumpyFunctionVariable, lookup_numpy_function, wrap_ndarray_input
from .variables.python_random import RandomDrawVariable, is_random_draw
from .variables.torch import (
    AutocastVariable,
    GradModeVariable,
    InferenceModeVariable,
    TorchFunctionVariable,
    is_torch_op,
)
from .variables.torch_function import (COMPILER_READS, DEFAULT_HOOK, DefaultHookVariable, hook_refusal, replaced_names,
                                       user_classes_below_tensor)
from .variables.torchscript import TorchScriptFunctionVariable
from .variables.user_defined import EnumVariable, UserDefinedClassVariable, UserDefinedObjectVariable


@functools.lru_cache(None)
def _skipped_wrapper_codes():
    """Code objects of wrappers that mark a function as never-compiled."""
    codes = {disabled_wrapper_code()}
    try:
        @torch._disable_dynamo
        def probe():
            pass
        codes.add(probe.__code__)
    except Exception:  # noqa: BLE001
        pass
    return codes


@functools.lru_cache(None)
def _trace_only_classes():
    """Builtin types called like functions (int(x), list(x)...)."""
    return {int, float, bool, str, list, tuple, dict, set, frozenset, range, slice, type, object, super,
            enumerate, zip, map, filter, reversed}


def is_skipped_function(fn) -> bool:
    return static_getattr(fn, "__code__") in _skipped_wrapper_codes() or \
        static_getattr(fn, "_bytegraph_disabled") is True or is_torchscript_callable(fn)


def is_torchscript_callable(fn) -> bool:
    """A TorchScript function or method runs in the TorchScript interpreter, whose rules (typed
    arguments, its own errors) are not Python's: it is called as it is, never traced (its reported name
    is its class's, `torch.jit.ScriptFunction`). A ScriptFunction doing plain tensor work is one graph
    node calling it (variables/torchscript.py); others run natively."""
    jit = sys.modules.get("torch.jit")
    return jit is not None and _is_a(fn, (jit.ScriptFunction, torch._C.ScriptMethod))


def is_compiled_function(fn) -> bool:
    """A function made by `bytegraph.compile` (traced as the function it wraps)."""
    return _is_a(fn, types.FunctionType) and "_bytegraph_callback" in fn.__dict__


def _is_frame_varkw(tx, source) -> bool:
    code = tx.code
    if tx.parent is not None or not isinstance(source, LocalSource) or not code.co_flags & inspect.CO_VARKEYWORDS:
        return False
    index = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS)
    return source.local_name == code.co_varnames[index]


def _is_numpy_type_info(value) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and _is_a(value, (np.finfo, np.iinfo, np.dtype))


def _is_numpy_scalar(value) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and _is_a(value, np.generic)


def _is_identity_key(value) -> bool:
    """A function, a class or an object compared and hashed by identity (its class, or metaclass,
    keeps the default __eq__/__hash__): as a dict key as safe as a constant (the DICT_KEYS guard compares keys by
    identity). pytree's registry is keyed by classes."""
    if _is_a(value, type):
        return type(value).__eq__ is type.__eq__ and type(value).__hash__ is type.__hash__
    if _is_a(value, (types.FunctionType, types.BuiltinFunctionType)):
        return True
    if _is_a(value, enum.Enum):
        # a member (a singleton) of an enum keeping Enum's __hash__ and a C __eq__: the trace looks it
        # up as the real member (dicts.hashable_key), and the guard compares it by identity
        return type(value).__hash__ is enum.Enum.__hash__ and type(type(value).__eq__) is not types.FunctionType
    # an object of a class keeping object's __eq__ and __hash__ (typing's `Union`, `Literal`)
    return type(value).__eq__ is object.__eq__ and type(value).__hash__ is object.__hash__


def _wrap_key(tx, key):
    """A key of a dict read from the frame (its identity is guarded with the dict's keys). An object
    key keeps itself as its source, so what is read from it later is guarded."""
    if is_constant_value(key) or _is_a(key, (type, types.FunctionType, types.BuiltinFunctionType)):
        return wrap(tx, key, None, trusted=True)
    return wrap(tx, key, ConstSource(key), trusted=True)


def wrap(tx, value, source, trusted=False):
    out = tx.output
    if out.backward_proof is not None and source is not None and not trusted:
        out.backward_proof.check_outside_read(value, source)    # (read again by eager's backward)
    key = id(value)
    cached = out.wrapped_objects.get(key)
    if cached is not None and cached[0] is value:
        known = cached[1]
        if source is not None and source != known.source and not trusted:
            # this source must keep reaching the very object: guarded against the known one's source,
            # or, for an object first met without a source (a builtin read by name), by identity
            tx.output.guards.add(Guard.same_object(source, known.source) if known.source is not None
                                 else Guard.id_match(source, value))
        return known
    var = _wrap(tx, value, source, trusted)
    if not isinstance(var, ConstantVariable) and not _is_a(value, (int, float, str, bool)):
        _one_tracker_per_state(out, value, var)
        out.wrapped_objects[key] = (value, var)
        if source is None and not trusted:
            out.side_effects.mark_unsourced(var)
    return var


def instance_dict(value):
    """The attribute dict of a user object, read through the type's own `__dict__` slot (never a
    `__dict__` property a class defines), or None."""
    for klass in class_mro(type(value)):
        slot = class_namespace(klass).get("__dict__")
        if slot is not None:
            d = slot.__get__(value) if type(slot) is types.GetSetDescriptorType else None
            return d if type(d) is dict else None
    return None


def _one_tracker_per_state(out, value, var) -> None:
    """A dict that is also an object's attribute dict (`vars(m)` passed on, objects sharing one
    `__dict__`) would be two trackers of one state, a write through one unseen by reads through the
    other: the trace stops before it meets the second. (Object attribute dicts are indexed in
    `wrapped_objects` under ("instance dict", id), so checkpoints restore them too.)"""
    if type(value) is dict:
        if ("instance dict", id(value)) in out.wrapped_objects:
            raise Unsupported("python_protocol", what="a dict that is also an object's attribute dict")
        return
    if not isinstance(var, UserDefinedObjectVariable):
        return
    d = instance_dict(value)
    if d is None:
        return
    owner = out.wrapped_objects.get(("instance dict", id(d)))
    if (owner is not None and owner[0] is not value) or id(d) in out.wrapped_objects:
        raise Unsupported("python_protocol", what="objects sharing one attribute dict")
    out.wrapped_objects[("instance dict", id(d))] = (value, d)


def _through_module(output, source) -> bool:
    """Whether `source` reads an attribute (at any depth) of an nn.Module."""
    s = getattr(source, "base", None)
    while s is not None:
        if s in output.module_sources:
            return True
        s = getattr(s, "base", None)
    return False


def _guard(tx, guard):
    if guard.source is not None:
        tx.output.guards.add(guard)


def _is_a(value, classes) -> bool:
    """isinstance by the real type: `isinstance` reads `value.__class__`, which a user property
    may answer (running user code at compile time, and not the type the guards check)."""
    return issubclass(type(value), classes)


_ATTRIBUTE_HOOKS = ("__getattribute__", "__getattr__", "__setattr__", "__delattr__")


def _hooks_attributes(module_type) -> bool:
    """A module subclass with its own attribute hooks: an object like any other, not a module whose
    attributes are its dict's (and maybe taken as constants)."""
    return any(name in class_namespace(klass) for klass in class_mro(module_type)
               if klass not in (types.ModuleType, object)
               for name in _ATTRIBUTE_HOOKS)


_LIST_ITERATORS = (type(iter([])), type(reversed([])))
_TUPLE_ITERATOR = type(iter(()))
_DICT_ITERATORS = (type(iter({})), type(iter({}.values())))
_RANGE_ITERATORS = (type(iter(range(0))), type(iter(range(2 ** 64))))
_WEAK_PROXIES = (weakref.ProxyType, weakref.CallableProxyType)


def _is_resume_stack_argument(tx, source) -> bool:
    """`source` is a stack value passed to a resume function: the loop's iterator, say (which the
    program may hold elsewhere too: a traced change to it is written back to it)."""
    return isinstance(source, LocalSource) and source.local_name.startswith(STACK_ARGUMENT_PREFIX) and \
        is_resume_code(tx.code)


def _is_resumed_loop_iterator(tx, value, source) -> bool:
    """`value` is the iterator of a loop that broke, handed to this resume function (resume.ITER_SLOT)."""
    return type(value) is _TUPLE_ITERATOR and isinstance(source, LocalSource) and \
        source.local_name.startswith(ITER_ARGUMENT_PREFIX) and is_resume_code(tx.code)


def _wrap_resumed_iterator(tx, it, source, guard):
    """A loop's iterator handed to a resume function: its tuple and position, the items read lazily
    (ResumedIteratorVariable), so the resumed loop does not depend on how many are left."""
    guard(Guard.type_match(source, _TUPLE_ITERATOR))
    reduced = it.__reduce__()        # (iter, (tuple,), index), or (iter, ((),)) once exhausted
    position = tuple(reduced[2:])
    guard(Guard.constant(ListIteratorSource(source, "position"), position))
    return ResumedIteratorVariable.create(tx, reduced[1][0], ListIteratorSource(source, "seq"),
                                          position[0] if position else None)


def _wrap_live_iterator(tx, it, source, guard, watches):
    """A loop's list iterator (`watches` "lists"), or its iterator over a module container's table
    (resume.TABLE_SLOT, "modules"), handed to a resume function: the program's own, its items left read
    one at a time (ResumedLiveIterator). None for one over a dict that changed size (its next step
    raises: left to eager's own loop)."""
    try:
        iterator_rest(it)
    except RuntimeError:
        return None
    guard(Guard.type_match(source, type(it)))
    return ResumedLiveIterator.create(tx, it, source, watches)


def _wrap_range_iterator(tx, it, source, guard):
    """A loop's range iterator passed to a resume function: its range and index (a number per
    item taken, never the list of the numbers left, however long the range)."""
    guard(Guard.type_match(source, type(it)))
    _, (numbers,), index = it.__reduce__()
    guard(Guard.constant(ListIteratorSource(source, "seq"), numbers))
    guard(Guard.constant(ListIteratorSource(source, "position"), (index,)))
    var = ListIteratorVariable(kind=type(it).__name__, source=source)
    tx.output.side_effects.track(var, (numbers, index))
    return var


def _wrap(tx, value, source, trusted):
    """The tracker for a real value, guarded through `source` (unless trusted); the families are
    tried in order, the first that answers wins."""
    guard = (lambda g: _guard(tx, g)) if (source is not None and not trusted) else (lambda g: None)
    if type(value) in _WEAK_PROXIES:    # before any probe: each would reach the referent (maybe dead)
        guard(Guard.type_match(source, type(value)))
        return WeakProxyVariable(source=source)
    for wrap_family in _FAMILIES:
        var = wrap_family(tx, value, source, trusted, guard)
        if var is not None:
            return var
    if _is_a(value, (torch.finfo, torch.iinfo)):
        guard(Guard.id_match(source, value))   # torch keeps one finfo/iinfo object per dtype
        return ConstantVariable(value, source=source)
    if source is not None and not trusted:
        var = wrap_ndarray_input(tx, value, source, guard)
        if var is not None:
            return var
    if _is_numpy_type_info(value) or (source is None and _is_numpy_scalar(value)):
        # np.finfo/np.iinfo/np.dtype objects are immutable; a numpy scalar made while tracing (`finfo.eps`)
        # folds with its own arithmetic
        guard(Guard.id_match(source, value))
        return ConstantVariable(value, source=source)
    if is_numpy_number(value):
        # a numpy number read from the frame: a constant too, guarded by its type and its bytes
        guard(Guard.constant(source, value))
        return ConstantVariable(value, source=source)
    if source is None and type(value) in (inspect.Signature, inspect.Parameter):
        # a signature made while tracing, read back from an object folded with it (a BoundArguments'
        # `_signature`): immutable (`replace` makes a new one), folded as inspect.signature's result is
        return ConstantVariable(value)
    if type(value).__module__ == "typing" or type(value) in (types.GenericAlias, types.UnionType):
        # a type annotation (`List[Tensor]`, `Optional`, `int | None`): immutable, and subscripting it
        # only builds another annotation, so it is folded like a constant
        guard(Guard.id_match(source, value))
        return ConstantVariable(value, source=source)
    guard(Guard.type_match(source, type(value)))
    # stores now look for it among what they drop: its class may have __del__, or a weak reference to
    # it a callback (now, or on a later call the entry serves)
    tx.output.side_effects.finalizers_met = True
    return UserDefinedObjectVariable(value=value, cls=type(value), source=source)


_DEFAULT_TORCH_FUNCTION = torch.Tensor.__dict__["__torch_function__"]


def _subclass_refusal(value: torch.Tensor, eager_autograd: bool) -> str | None:
    """Why a tensor of a subclass cannot be a graph value (None: it can). A Parameter
    (`_disabled_torch_function_impl`) and a traceable wrapper subclass (DTensor) are graph values."""
    cls = type(value)
    if cls is torch.Tensor or is_traceable_wrapper_subclass(value):
        return None
    return subclass_refusal_of_class(cls, eager_autograd)


def subclass_refusal_of_class(cls: type, eager_autograd: bool) -> str | None:
    """Why tensors of `cls` (a torch.Tensor subclass, not a wrapper subclass) cannot be graph values.
    Its own `__torch_function__` is traced (variables/torch_function.py) when modelled exactly; a
    subclass keeps its class through the graph only where the graph's ops run on the real tensors (the
    eager backend): AOTAutograd returns plain tensors or fails on them."""
    hook = class_dict_lookup(cls, "__torch_function__")
    if hook is torch._C._disabled_torch_function_impl:
        return None
    if hook is not _DEFAULT_TORCH_FUNCTION:
        refusal = hook_refusal(cls)
        if refusal:
            return refusal
    read = sorted(replaced_names(cls) & COMPILER_READS)
    if read:
        # compiling reads it on the real tensor (fake conversion, guards): the class's own would run there
        return f"a tensor of {cls.__name__}, whose class replaces torch.Tensor.{read[0]}"
    replaced = sorted(name for name in replaced_names(cls) if name.startswith("__"))
    if replaced:
        # a special method Python and torch call implicitly (operators, len, iteration, repr...): the
        # trace models torch.Tensor's (a replaced method or attribute is traced as the class's own)
        return f"a tensor of {cls.__name__}, whose class replaces torch.Tensor.{replaced[0]}"
    if not eager_autograd:
        return f"a tensor of {cls.__name__} (compiled through AOTAutograd, results would lose the subclass)"
    return None


families.register(subclass_refusal_of_class)


def _wrap_tensor(tx, value, source, guard):
    """A tensor as a graph input (or a constant of the graph, with no source)."""
    refusal = _subclass_refusal(value, tx.output.eager_autograd)   # first: reading `layout` is an op
    if refusal:
        raise Unsupported("torch_value", what=refusal)
    for klass in user_classes_below_tensor(type(value)):
        # the names its classes define are guarded: a torch.Tensor method set on one later recompiles
        guard(Guard.dict_keys(ClassNamespaceSource(ConstSource(klass)), list(class_namespace(klass))))
    if value.layout != torch.strided:
        # sparse/quantized layouts have no strides to guard or fake: their users run eagerly
        raise Unsupported("non_strided_tensor", what=f"a tensor with layout {value.layout}")
    if value.is_inference():
        # made under torch.inference_mode: no version counter (which in-place writes are tracked by),
        # its own rules for autograd and in-place ops outside the mode: its users run eagerly
        raise Unsupported("torch_value", what="an inference tensor (made under torch.inference_mode)")
    if source is None:
        return tx.output.add_constant_tensor(value)
    return tx.output.add_graph_input(value, source)


def _wrap_tensor_or_scalar(tx, value, source, trusted, guard):
    """Graph inputs: tensors, and numbers that are (or may become) symbolic."""
    if _is_a(value, torch.nn.parameter.UninitializedTensorMixin):
        # a lazy module's parameter before its first call: no shape yet, any use of it fails eagerly
        raise Unsupported("lazy_module", what="an uninitialized parameter of a lazy module")
    if _is_a(value, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            # (its metadata read as it is: a subclass's own __torch_function__ is user code, not run here)
            return _wrap_tensor(tx, value, source, guard)
    if type(value) in (int, float) and source is not None and not trusted:
        out = tx.output
        if out.shape_policy.dynamic_scalar(value, source, _through_module(out, source)):
            return out.add_scalar_input(value, source)
        if scalar_can_be_dynamic(value, source, _through_module(out, source)):
            # a constant until a miss shows it changing (automatic dynamic, see guards/shape.py),
            # guarded only once its value is used
            return LazyGuardedConstantVariable(value, source=source, output=out)
    return None


def _wrap_constant(tx, value, source, trusted, guard):
    """Immutable constants (numbers, strings, torch.Size, struct sequences), guarded by value."""
    if type(value) in (str, bytes) and source is not None and not trusted:
        # guarded only once its value is used (a string only handed on adds no guard)
        return LazyGuardedConstantVariable(value, source=source, output=tx.output)
    if is_constant_value(value) and not _is_a(value, (tuple, frozenset)):
        guard(Guard.constant(source, value))
        return ConstantVariable(value, source=source)
    if _is_a(value, torch.Size):
        guard(Guard.constant(source, value))
        return SizeVariable(tuple(ConstantVariable(v) for v in value), source=source)
    if _is_a(value, tuple) and static_hasattr(type(value), "n_fields") and is_constant_value(value):
        # a struct sequence of constants (sys.float_info): immutable, kept as the real object so
        # its type and named fields stay
        guard(Guard.constant(source, value))
        return ConstantVariable(value, source=source)
    return None


def _wrap_container(tx, value, source, trusted, guard):
    """Builtin containers: their length/keys are guarded, their items wrapped through item sources."""
    # a tuple subclass overriding __len__/__getitem__/__iter__ is a user object (its guards would
    # call those overrides)
    if type(value) is tuple and source is not None and not trusted and _plain_constants(value) and \
            _through_module(tx.output, source):
        # a module's configuration (a convolution's stride): one identity guard instead of one per item.
        # The guard holds the tuple, so the same object means the same (immutable) contents
        guard(Guard.id_match(source, value))
        return TupleVariable(tuple(ConstantVariable(v) for v in value), source=source)
    if _is_a(value, tuple) and (type(value) is tuple or is_named_tuple_class(type(value))) and \
            not overrides_in_python(type(value), ("__getitem__", "__len__", "__iter__")):
        guard(Guard.type_match(source, type(value)))
        guard(Guard.length(source, len(value)))
        items = tuple(wrap(tx, v, ItemSource(source, i) if source else None, trusted) for i, v in enumerate(value))
        if type(value) is not tuple:
            return NamedTupleVariable(items, cls=type(value), source=source)
        return TupleVariable(items, source=source)
    if _is_a(value, list) and type(value) is list:
        guard(Guard.type_match(source, list))
        guard(Guard.length(source, len(value)))
        items = [wrap(tx, v, ItemSource(source, i) if source else None, trusted) for i, v in enumerate(value)]
        return ListVariable.create(tx, items, source=source)
    if type(value) in _LIST_ITERATORS and _is_resume_stack_argument(tx, source):
        return _wrap_live_iterator(tx, value, source, guard, "lists")
    if type(value) in _RANGE_ITERATORS and _is_resume_stack_argument(tx, source):
        return _wrap_range_iterator(tx, value, source, guard)
    if _is_resumed_loop_iterator(tx, value, source):
        return _wrap_resumed_iterator(tx, value, source, guard)
    if type(value) in _DICT_ITERATORS and isinstance(source, LocalSource) and is_resume_code(tx.code) and \
            source.local_name.startswith(TABLE_ARGUMENT_PREFIX) and \
            (var := _wrap_live_iterator(tx, value, source, guard, "modules")) is not None:
        return var
    if type(value) in (dict, collections.OrderedDict, collections.defaultdict):
        if not all(is_constant_value(k) or _is_identity_key(k) for k in value):
            raise Unsupported("non_constant_value", what="a dict with keys not constants, classes or functions")
        if type(value) is collections.OrderedDict and sum(1 for _ in value) != len(value):
            # keys `dict.__setitem__(od, k, v)` put in the table but not in the order list: the
            # OrderedDict reads differently through dict's methods and its own
            raise Unsupported("python_protocol", what="an OrderedDict whose dict table holds keys its order lacks")
        guard(Guard.type_match(source, type(value)))
        # the key set is guarded when the trace first depends on it all (SideEffects.defer_key_guard)
        defer_keys = source is not None and not trusted and not _is_frame_varkw(tx, source)
        keys = list(type(value).keys(value))     # (an OrderedDict's instance may have an attribute `keys`)
        if not defer_keys:
            guard(Guard.dict_keys(source, keys))
        if source is not None and not _is_frame_varkw(tx, source):
            # each value wrapped (guarded) when the code reads it (dicts.UnreadValue)
            pairs = [(_wrap_key(tx, k), UnreadValue(v, ItemSource(source, k), trusted))
                     for k, v in type(value).items(value)]
        else:
            pairs = [(_wrap_key(tx, k), wrap(tx, v, ItemSource(source, k) if source else None, trusted))
                     for k, v in type(value).items(value)]
        factory = None
        if _is_a(value, collections.defaultdict):
            # guarded: a cached graph filling a missing key calls it
            factory = wrap(tx, value.default_factory, AttrSource(source, "default_factory") if source else None,
                           trusted)
        # the frame's own **kwargs dict is new on every call and seen by no one else: it is tracked
        # like a dict made while tracing (changes need no write-back; it is rebuilt if it escapes)
        var = DictVariable.create(tx, pairs, type(value), factory,
                                  source=None if _is_frame_varkw(tx, source) else source)
        if defer_keys:
            tx.output.side_effects.defer_key_guard(var, Guard.dict_keys(source, keys))
        return var
    if type(value) in (set, frozenset):
        # functions, classes and objects hashed and compared by identity are as safe as constants:
        # the guard below compares them by identity, as the set does
        if not all(is_constant_value(v) or _is_identity_key(v) for v in value):
            raise Unsupported("non_constant_value", what="a set of values that are not constants, classes or functions")
        guard(Guard.type_match(source, type(value)))
        # its items in its iteration order (the trace iterates it in that order)
        guard(Guard.constant(SetItemsSource(source, type(value)), set_items_seen(value)))
        return SetVariable.create(tx, [_wrap_key(tx, v) for v in value], type(value), source=source)
    return None


def _plain_constants(value) -> bool:
    """Constants of exactly the builtin types, at any depth (a subclass may answer in code of its own)."""
    if type(value) in (tuple, frozenset):
        return all(_plain_constants(v) for v in value)
    return type(value) in (int, float, complex, str, bytes, bool, type(None))


def _wrap_special_object(tx, value, source, trusted, guard):
    """Objects with a tracker of their own: modules (by type), enums and torch context managers (by
    identity)."""
    if _is_a(value, torch.nn.Module):
        # by type, not identity: every layer of a model shares its code's compiled entries, as what is
        # read from the module (its tensors, constants, hooks, methods) is guarded through its source.
        # What depends on which object it is guards its identity (NNModuleVariable.guard_identity)
        guard(Guard.type_match(source, type(value)))
        if source is not None:
            tx.output.module_sources[source] = value
        return NNModuleVariable(value=value, cls=type(value), source=source)
    if _is_a(value, enum.Enum):
        guard(Guard.id_match(source, value))
        return EnumVariable(value=value, source=source)
    if _is_a(value, types.ModuleType) and not _hooks_attributes(type(value)):
        guard(Guard.id_match(source, value))
        return PythonModuleVariable(value=value, source=source)
    if _is_a(value, types.CellType):
        # a real closure cell (`f.__closure__[0]`): the same tracker as the frame's own cell when it
        # is one, so a read through either sees writes through the other
        guard(Guard.id_match(source, value))
        return CellVariable.existing(tx, value, source)
    grad_modes = {torch.no_grad: False, torch.enable_grad: True}
    if type(value) in grad_modes or type(value) is torch.set_grad_enabled:
        # a grad-mode context manager object (`@torch.no_grad()` keeps one to enter on each call);
        # a set_grad_enabled restores the mode it found when made, which its `prev` holds
        guard(Guard.id_match(source, value))
        if type(value) is torch.set_grad_enabled:
            return GradModeVariable(target=value.mode, previous=value.prev, kind=type(value), source=source)
        return GradModeVariable(target=grad_modes[type(value)], kind=type(value), source=source)
    if type(value) is torch.inference_mode and type(value.mode) is bool:
        # `@torch.inference_mode()` keeps one to enter (a clone of it) on each call
        guard(Guard.id_match(source, value))
        guard(Guard.constant(AttrSource(source, "mode"), value.mode))   # (a plain attribute: it may be rebound)
        return InferenceModeVariable(mode=value.mode, source=source)
    if _is_a(value, torch.amp.autocast):
        guard(Guard.id_match(source, value))
        return AutocastVariable.from_real(value).with_source(source)
    return None


def is_c_partial_type(tp) -> bool:
    """functools.partial, or its twin from another import of the C module `_functools` (CPython's
    own tests make one); not a subclass, whose `__call__` or attributes may be its own."""
    return tp is functools.partial or (tp.__module__ == "functools" and tp.__qualname__ == "partial" and
                                       type(tp.__dict__.get("__call__")) is types.WrapperDescriptorType)


def _wrap_callable(tx, value, source, trusted, guard):
    """Functions, methods, classes and builtins."""
    if is_c_partial_type(type(value)):
        # first: the probes below read `__dict__`, which a partial makes on first read, and a partial
        # with a `__dict__` is not flattened into a partial made of it
        guard(Guard.type_match(source, type(value)))
        fn, args, keywords = (wrap(tx, getattr(value, name), AttrSource(source, name) if source else None, trusted)
                              for name in ("func", "args", "keywords"))
        return PartialVariable(fn=fn, args=args, keywords=keywords, cls=type(value), source=source)
    checkpoint = sys.modules.get("torch.utils.checkpoint")
    if checkpoint is not None and value is checkpoint.checkpoint:
        guard(Guard.id_match(source, value))
        return CheckpointVariable(fn=value, source=source)
    if static_getattr(value, "_bytegraph_compile") is True:
        guard(Guard.id_match(source, value))
        return CompileFunctionVariable(fn=value, source=source)
    if _is_a(value, torch.jit.ScriptFunction):
        # a graph node calling it when its TorchScript graph is plain tensor work (variables/torchscript.py)
        guard(Guard.id_match(source, value))
        return TorchScriptFunctionVariable(fn=value, source=source)
    if is_skipped_function(value):
        guard(Guard.id_match(source, value))
        return SkippedFunctionVariable(fn=value, source=source)
    if is_compiled_function(value) and source is not None:
        # a new wrapper per `compile` call: what a call does is the wrapped function (guarded when
        # the call reads it), so the wrapper is guarded by its code, not its identity
        guard(Guard.type_match(source, types.FunctionType))
        guard(Guard.id_match(AttrSource(source, "__code__"), value.__code__))
        return CompiledFunctionVariable(wrapper=value, source=source)
    if is_distributed_function(value):
        guard(Guard.id_match(source, value))
        return DistributedFunctionVariable(fn=value, source=source)
    if value is DEFAULT_HOOK.__func__:
        # torch.Tensor.__torch_function__ (`super().__torch_function__(...)` in a subclass's hook): modelled
        guard(Guard.id_match(source, value))
        return DefaultHookVariable(source=source)
    if is_torch_op(value):
        guard(Guard.id_match(source, value))
        return TorchFunctionVariable(fn=value, source=source)
    if source is not None and is_random_draw(value):    # `random.randint` and friends
        guard(Guard.id_match(source, value))
        return RandomDrawVariable(fn=value, source=source)
    if _is_a(value, (types.FunctionType, functools._lru_cache_wrapper)) and is_constant_result(value):
        guard(Guard.id_match(source, value))
        return ConstantResultFunctionVariable(fn=value, source=source)
    numpy_fn = lookup_numpy_function(value)
    if numpy_fn is not None:   # traced through its torch._numpy twin (variables/numpy.py)
        guard(Guard.id_match(source, value))
        return NumpyFunctionVariable(fn=value, twin=numpy_fn[1], name=numpy_fn[2], source=source)
    if _is_a(value, types.FunctionType):
        if value.__closure__ and source is not None:
            # a closure made per call (a lambda, a nested function): same code, and its cells and
            # defaults are guarded through their own sources when read
            guard(Guard.type_match(source, types.FunctionType))
            guard(Guard.id_match(AttrSource(source, "__code__"), value.__code__))
        else:
            guard(Guard.id_match(source, value))
        if has_builtin_handler(value):   # a Python function answered by a handler (inspect.signature)
            return BuiltinVariable(fn=value, source=source)
        return UserFunctionVariable(fn=value, source=source)
    if _is_a(value, types.MethodType):
        self_var = wrap(tx, value.__self__, AttrSource(source, "__self__") if source else None, trusted)
        if isinstance(self_var, (GradModeVariable, AutocastVariable, InferenceModeVariable)):
            # a method of a torch context manager (`no_grad().clone`): the tracker models the object
            return self_var.var_getattr(tx, value.__func__.__name__)
        fn_var = wrap(tx, value.__func__, AttrSource(source, "__func__") if source else None, trusted)
        return BoundMethodVariable(fn=fn_var, self_var=self_var, source=source)
    if _is_a(value, type):
        guard(Guard.id_match(source, value))
        if safe_in(value, _trace_only_classes()) or has_builtin_handler(value):  # e.g. itertools.chain
            return BuiltinVariable(fn=value, source=source)
        return UserDefinedClassVariable(value=value, source=source)
    if _is_a(value, (operator.itemgetter, operator.attrgetter, operator.methodcaller)):
        guard(Guard.id_match(source, value))
        return OperatorGetterVariable.from_real(tx, value).with_source(source)
    if type(value) is types.GetSetDescriptorType and value.__objclass__ is torch._C.TensorBase:
        # `torch.Tensor.ndim`: a C attribute of tensors, whose `__get__` a `__torch_function__` compares
        # its `func` with
        guard(Guard.id_match(source, value))
        return BuiltinVariable(fn=value, source=source)
    if source is not None and is_tensor_getter(value):
        # `torch.Tensor.shape.__get__` (a `__torch_function__`'s `func` for `x.shape`): a new
        # method-wrapper on every read, guarded as the getter of that attribute
        guard(Guard.type_match(source, type(value)))
        guard(Guard.id_match(AttrSource(source, "__self__"), value.__self__))
        return BuiltinVariable(fn=value, source=source)
    if source is not None and _is_builtin_method_of(value):
        # `lst.append` / `", ".join` on the stack at a graph break: a new object on every call, so not
        # guarded by identity (a recompile per call) but as what it is, that object's method of that name
        owner = value.__self__
        guard(Guard.type_match(source, type(value)))
        guard(Guard.constant(AttrSource(source, "__name__"), value.__name__))
        if _is_a(owner, types.FunctionType):
            # a function's own slot (`fn.__get__`, whose read breaks): that function's, exactly
            guard(Guard.id_match(AttrSource(source, "__self__"), owner))
            return BuiltinVariable(fn=value, source=source)
        guard(Guard.type_match(AttrSource(source, "__self__"), type(owner)))
        return wrap(tx, owner, AttrSource(source, "__self__"), trusted).var_getattr(tx, value.__name__)
    if _is_a(value, (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodWrapperType,
                          types.WrapperDescriptorType, types.MethodDescriptorType)) or \
            type(value).__module__ in ("functools", "itertools", "operator") and callable(value):
        guard(Guard.id_match(source, value))
        return BuiltinVariable(fn=value, source=source)
    return None


def _is_builtin_method_of(value) -> bool:
    """A C method bound to an instance (not to a module or a class) that the instance's type gives under
    its name: reading that name on the instance again gives an equal method."""
    if not _is_a(value, (types.BuiltinMethodType, types.MethodWrapperType)):
        return False
    owner = value.__self__
    if owner is None or _is_a(owner, (types.ModuleType, type)):
        return False
    return static_getattr(owner, value.__name__) == value


_FAMILIES = (_wrap_tensor_or_scalar, _wrap_constant, _wrap_container, _wrap_special_object, _wrap_callable)
