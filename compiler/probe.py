"""Inspect a real object without running the user's code.

Compile time only. bytegraph asks questions about the objects it meets (is this a disabled
function? a named tuple class? a torch op?) that eager never asks. A plain `getattr`/`hasattr`/`in`
would run a user `__getattr__`, `__getattribute__`, property, descriptor, metaclass hook, `__hash__`
or `__eq__`: a side effect eager does not have, and code that may re-enter the compiler. Every such
probe goes through here: a question that can only be answered by running user code gets the
"absent" answer (the object is then treated as an ordinary user object, which is always sound).
"""
from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import linecache
import sys
import traceback
import types
import weakref

_MISSING = object()

# type's own descriptors: a metaclass may define `__dict__`, `__mro__` or `__flags__` as a property
# (user code), which `klass.__dict__`, `vars(klass)` or `type.__getattribute__` would run
_namespace_of, _mro_of, _flags_of = (type.__dict__[n].__get__ for n in ("__dict__", "__mro__", "__flags__"))


def class_namespace(klass: type):
    """The class's own namespace (`klass.__dict__` as type keeps it), read without running user code."""
    return _namespace_of(klass)


def class_mro(klass: type) -> tuple:
    """`klass.__mro__` as type keeps it, read without running user code."""
    return _mro_of(klass)


def per_class(fn):
    """Cache `fn(cls)` for each class, holding the class weakly: the entry goes when the class dies (a
    class the program made and dropped must die, see guards/held.py), and the class is never hashed
    (a metaclass's `__hash__` is the program's code)."""
    cache: dict = {}

    def cached(cls):
        entry = cache.get(id(cls))
        if entry is not None and entry[0]() is cls:
            return entry[1]
        result = fn(cls)
        try:
            ref = weakref.ref(cls, lambda _, key=id(cls): cache.pop(key, None))
        except TypeError:
            return result
        cache[id(cls)] = (ref, result)
        return result
    return functools.wraps(fn)(cached)


def _type_lookup(tp: type, name: str):
    """`name` as found in the dicts of `tp`'s MRO (no descriptors run), or _MISSING."""
    for klass in _mro_of(tp):
        d = _namespace_of(klass)
        if name in d:
            return d[name]
    return _MISSING


def class_dict_lookup(tp: type, name: str, default=None):
    """`name` as the class dicts of `tp`'s MRO hold it (no descriptor bound), or `default`."""
    found = _type_lookup(tp, name)
    return default if found is _MISSING else found


# C implementations of __getattribute__ (object, type, module, ...) run no Python code of their own
_C_SLOTS = (types.WrapperDescriptorType, types.MethodWrapperType, types.BuiltinFunctionType)


def is_c_level(fn) -> bool:
    return fn is _MISSING or fn is None or isinstance(fn, _C_SLOTS)


def plain_getattribute(tp: type) -> bool:
    """Whether attribute reads on instances of `tp` go through a C `__getattribute__`."""
    return is_c_level(_type_lookup(tp, "__getattribute__"))


def _runs_python_get(attr) -> bool:
    """Whether binding `attr` (found on a class) runs Python code: a property, a descriptor whose
    `__get__` is written in Python (cached_property, user descriptors...)."""
    tp = type(attr)
    if issubclass(tp, property):
        return True
    return not is_c_level(_type_lookup(tp, "__get__"))


def is_python_data_descriptor(attr) -> bool:
    """A data descriptor (its type has `__set__` or `__delete__`) whose reading runs Python code: a
    property, a descriptor class written in Python. Found on a metaclass, it answers before the class."""
    tp = type(attr)
    return (_type_lookup(tp, "__set__") is not _MISSING or _type_lookup(tp, "__delete__") is not _MISSING) and \
        _runs_python_get(attr)


def static_getattr(obj, name: str, default=None):
    """`getattr(obj, name, default)` when reading it runs no user code; `default` when the attribute
    is absent or only user code (a `__getattr__`, a property, a custom descriptor) could produce it."""
    if not plain_getattribute(type(obj)):
        return default
    try:
        attr = inspect.getattr_static(obj, name, _MISSING)
    except Exception:  # noqa: BLE001 - a broken object: treat as absent
        return default
    if attr is _MISSING:
        return default      # eager would ask `__getattr__` (if any) here; bytegraph does not
    if _runs_python_get(attr):
        return default
    try:
        return getattr(obj, name)
    except Exception:  # noqa: BLE001
        return default


def static_hasattr(obj, name: str) -> bool:
    return static_getattr(obj, name, _MISSING) is not _MISSING


def _plain_hash_type(tp: type) -> bool:
    if not _flags_of(tp) & _HEAPTYPE:    # a builtin type's dict never changes: its answer is kept
        return _plain_hash_builtin_type(tp)
    return is_c_level(_type_lookup(tp, "__hash__")) and is_c_level(_type_lookup(tp, "__eq__"))


@functools.lru_cache(None)
def _plain_hash_builtin_type(tp: type) -> bool:
    return is_c_level(_type_lookup(tp, "__hash__")) and is_c_level(_type_lookup(tp, "__eq__"))


def plain_hash(value, depth: int = 3) -> bool:
    """Whether `value in some_dict_or_set` runs no user code (`__hash__`/`__eq__` are C-level). A weak
    reference hashes its referent (and keeps that hash for after its death: a change eager would not
    make); a tuple or frozenset hashes its items."""
    tp = type(value)
    if issubclass(tp, weakref.ReferenceType):
        return False
    if tp in (tuple, frozenset):   # (bytegraph's tables hold small ones only)
        return depth > 0 and len(value) <= 16 and all(plain_hash(item, depth - 1) for item in value)
    try:
        return _plain_hash_type(tp)
    except TypeError:   # an unhashable metaclass
        return False


def safe_in(value, container) -> bool:
    """`value in container` for a builtin dict/set of bytegraph's own: False when answering would run a
    user `__hash__`/`__eq__` (a user object is never one of bytegraph's entries) or `value` is
    unhashable."""
    if not plain_hash(value):
        return False
    try:
        return value in container
    except TypeError:
        return False


_HEAPTYPE = 1 << 9   # Py_TPFLAGS_HEAPTYPE: a class made by a class statement


def is_heap_type(tp: type) -> bool:
    """Whether `tp` was made by a class statement (or `type(...)`), not written in C."""
    return bool(_flags_of(tp) & _HEAPTYPE)


_DISALLOW_INSTANTIATION = 1 << 7   # Py_TPFLAGS_DISALLOW_INSTANTIATION: calling the type raises


def disallows_instantiation(tp: type) -> bool:
    """Whether calling `tp` raises TypeError ("cannot create 'sys.flags' instances")."""
    return bool(_flags_of(tp) & _DISALLOW_INSTANTIATION)


def builtin_base(tp: type) -> type:
    """The first class in `tp`'s MRO written in C (dict for a dict subclass, OrderedDict for an
    OrderedDict subclass): its methods read the object without running the user's overrides."""
    for klass in _mro_of(tp):
        if not _flags_of(klass) & _HEAPTYPE:
            return klass
    return object


def overrides_in_python(tp: type, names) -> bool:
    """Whether `tp` (or a base written in Python) defines any of `names` in Python."""
    return any(not is_c_level(_type_lookup(tp, n)) for n in names)


def has_finalizer(cls: type) -> bool:
    """Whether the class or a base defines `__del__` (read from the class dicts: runs no user code)."""
    return any("__del__" in _namespace_of(klass) for klass in _mro_of(cls))


_REF_CALLBACK = weakref.ReferenceType.__dict__["__callback__"].__get__


def has_weakref_callbacks(obj) -> bool:
    """Whether a weak reference to `obj` has a callback, which its death runs (`weakref.finalize`, the
    cleanup of a WeakKeyDictionary or WeakSet entry). A proxy's callback cannot be read (its attributes
    are the referent's): a proxy counts as one with a callback."""
    if not weakref.getweakrefcount(obj):
        return False
    return any(not issubclass(type(r), weakref.ReferenceType) or _REF_CALLBACK(r) is not None
               for r in weakref.getweakrefs(obj))


@functools.lru_cache(None)
def _torch_classes():
    import torch    # (imported when first asked, as in may_hold_tensors)
    return torch.Tensor, torch.nn.Module


def runs_code_when_dropped(obj) -> bool:
    """Whether the death of `obj` runs Python code: its class's `__del__`, or a weak reference's
    callback. Not asked of tensors and modules, whose lifetimes are the graph's and the model's:
    torch's own machinery (fake-tensor caches, FSDP's state) keeps weak references with callbacks
    to them, and a trace never models their deaths (lifetimes.finalizer_may_run)."""
    tp = type(obj)
    if issubclass(tp, _torch_classes()):
        return False
    return has_finalizer(tp) or has_weakref_callbacks(obj)


_NO_TENSORS = frozenset({type(None), bool, int, float, complex, str, bytes, range, slice, type(Ellipsis),
                         type(iter(range(0))), type(iter(range(2 ** 64))), types.FunctionType,
                         types.BuiltinFunctionType, types.ModuleType, types.CodeType, type})


def may_hold_tensors(value, depth: int = 3) -> bool:
    """Whether `value` is, or may lead to, a tensor or a module (whose parameters are tensors). What
    it holds is found `depth` levels deep by the collector's own traversal (`gc.get_referents`:
    containers, instance attributes, slots, a bound method's object), which runs no user code and
    changes nothing (reading `__dict__` would make one, and a `functools.partial` with a dict is no
    longer flattened); an object the collector cannot see into answers True."""
    import gc

    import torch
    tp = type(value)
    if tp in _NO_TENSORS or issubclass(tp, type):
        return False
    if issubclass(tp, (torch.Tensor, torch.nn.Module)):
        return True
    if depth == 0:
        return False
    if tp in (list, tuple, set, frozenset):
        return any(may_hold_tensors(v, depth - 1) for v in value)
    if tp is dict:
        return any(may_hold_tensors(v, depth - 1) for v in value.values())
    if not gc.is_tracked(value) or not (tp.__dictoffset__ or _has_slots(tp) or tp in _SEEN_INTO or
                                        _TYPE_MODULE(tp) == "builtins"):
        # an object whose references the collector does not see, or one of an extension's types,
        # whose traversal may visit what it does not own (get_referents on a `_elementtree.TreeBuilder`
        # crashed the process)
        return True
    return any(may_hold_tensors(v, depth - 1) for v in gc.get_referents(value))


_TYPE_MODULE = type.__dict__["__module__"].__get__

# besides the interpreter's own types: the standard library's C objects whose references the
# collector's traversal reports exactly
_SEEN_INTO = frozenset({types.MethodType, types.CellType, functools.partial, collections.deque,
                        collections.OrderedDict, collections.defaultdict})


def _has_slots(tp: type) -> bool:
    return any("__slots__" in class_namespace(k) for k in class_mro(tp))


def _names_torch(value) -> bool:
    """Whether a global is torch or numpy, or one of their modules, functions or classes (read without
    running user code: a module's, function's or class's own name fields)."""
    tp = type(value)
    if tp is types.ModuleType:
        name = value.__name__
    elif tp in (types.FunctionType, types.BuiltinFunctionType):
        name = value.__module__
    elif issubclass(tp, type):
        name = _TYPE_MODULE(value)
    else:
        return False
    return isinstance(name, str) and name.split(".")[0] in ("torch", "numpy")


def frame_may_reach_tensors(code, func, args) -> bool:
    """Whether a frame starting with `args` may meet a tensor: an argument, a closure cell or a global
    the code names holds one or may lead to one (`may_hold_tensors`), or the code names torch or numpy
    (or something of theirs). A frame that cannot has nothing to compile."""
    missing = object()
    cells = [_cell_value(cell, missing) for cell in func.__closure__ or ()]
    names = [dict.get(func.__globals__, name, missing) for name in code.co_names]
    return any(may_hold_tensors(v) for v in (*args, *cells) if v is not missing) or \
        any(_names_torch(v) or may_hold_tensors(v) for v in names if v is not missing)


def _cell_value(cell, missing):
    try:
        return cell.cell_contents
    except ValueError:   # an empty cell
        return missing


@contextlib.contextmanager
def source_lines_kept_apart():
    """Source lines read inside (an import reads its own source) leave the process-wide `linecache`
    as it was: a program that reads lines lazily, or reads the cache itself, sees none read by the
    compiler."""
    cached = set(linecache.cache)
    try:
        yield
    finally:
        for name in [n for n in linecache.cache if n not in cached]:
            linecache.cache.pop(name, None)


def _extract_stack_lazily(f=None, limit=None):
    """`traceback.extract_stack`, its lines read only when asked for."""
    stack = traceback.StackSummary.extract(traceback.walk_stack(f or sys._getframe(1)), limit=limit,
                                           lookup_lines=False)
    stack.reverse()
    return stack


@contextlib.contextmanager
def stack_lines_unread():
    """torch's FakeTensorMode records the stack it is made on with `traceback.extract_stack()`, which
    reads every frame's source line at once: through linecache and `tokenize.open`, which a program
    may have patched (CPython's test_tokenize mocks the `open` it uses). Inside, the summaries read
    their lines only when asked (for any caller: the summary is the same, its lines come later)."""
    eager = traceback.extract_stack
    traceback.extract_stack = _extract_stack_lazily
    try:
        yield
    finally:
        traceback.extract_stack = eager
