"""NumPy traced through torch: a numpy function called while tracing becomes one graph node that
runs its `torch._numpy` twin on tensors, and an ndarray (or numpy scalar) made while tracing is a
tensor in the graph viewed as numpy. After the graph it is turned back into the real numpy object
(`tensor.numpy()`, or a numpy scalar), so the user sees exactly what eager numpy returns.

NumPy returns a scalar (`np.float64`) instead of a 0-d array from ufuncs, operators and
reductions, but a 0-d array from constructors (`np.array(1.5)`), and torch._numpy differs from
numpy in places (dtypes of some promotions): so each call first runs the real numpy function on
small stand-ins of the same dtypes and kinds, and the traced result must match what it returns
(array or scalar, dtype, ndim), else it is a graph break. Each tracker records array or scalar.
Whatever is not modelled (item assignment, `out=`, reading values, arrays read from the frame)
is a graph break, so numpy code is never wrong, only less captured."""
from __future__ import annotations

import dataclasses
import functools
import operator
from typing import Any

import torch
import torch.utils._pytree as pytree

from ...guards.guard import Guard
from ...guards.source import AttrSource, NdarrayTensorSource
from ..graph_break import Unsupported, fold, user_error
from ..quiet_warnings import filters_set_to
from .base import VariableTracker, families
from .constant import ConstantVariable, const, is_constant_value
from .iterators import IteratorVariable, StopIterationSignal
from .lists import ListVariable, TupleVariable, python_index
from .tensor import SymNodeVariable, TensorVariable

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy is optional
    np = None

# numpy names never traced (state, I/O, or classes that are not scalar types)
_NOT_TRACED = {"ndarray", "dtype", "errstate", "seterr", "geterr", "set_printoptions", "get_printoptions",
               "printoptions", "save", "load", "finfo", "iinfo", "can_cast", "result_type", "issubdtype",
               "isscalar", "ndim", "shape", "size", "random"}
_BINARY_DUNDERS = {"__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul,
                   "__truediv__": operator.truediv, "__floordiv__": operator.floordiv, "__mod__": operator.mod,
                   "__pow__": operator.pow, "__matmul__": operator.matmul, "__and__": operator.and_,
                   "__or__": operator.or_, "__xor__": operator.xor, "__lshift__": operator.lshift,
                   "__rshift__": operator.rshift, "__eq__": operator.eq, "__ne__": operator.ne,
                   "__lt__": operator.lt, "__le__": operator.le, "__gt__": operator.gt, "__ge__": operator.ge}
_REFLECTED_DUNDERS = {"__r" + k[2:]: v for k, v in _BINARY_DUNDERS.items()
                      if k not in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")}
_INPLACE_DUNDERS = {"__i" + k[2:]: getattr(operator, "i" + k[2:-2].rstrip("_")) for k in _BINARY_DUNDERS
                    if k in ("__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
                             "__and__", "__or__", "__xor__", "__lshift__", "__rshift__")}
_UNARY_DUNDERS = {"__neg__": operator.neg, "__pos__": operator.pos, "__abs__": operator.abs,
                  "__invert__": operator.invert}
# ndarray methods that write into the array, expose its memory, or read its values
_UNTRACED_METHODS = {"fill", "put", "sort", "resize", "itemset", "setflags", "tofile", "dump", "dumps",
                     "tobytes", "tostring", "item", "tolist", "view", "partition", "byteswap", "setfield",
                     "__array__", "__bool__", "__int__", "__float__", "__index__", "__complex__",
                     "__iter__", "__len__"}


@functools.lru_cache(None)
def _tnp():
    """torch._numpy, imported on first use: deliberately lazy, torch does not load it and most
    programs never trace numpy."""
    import torch._numpy
    return torch._numpy


@functools.lru_cache(None)
def numpy_function_map() -> dict:
    """id(numpy callable) -> (the callable, its torch._numpy twin, its name)."""
    if np is None:
        return {}
    tnp = _tnp()
    found = {}
    # np.random is not: torch's generator draws other numbers than numpy's
    for module, twins, prefix in ((np, tnp, ""), (np.linalg, tnp.linalg, "linalg."), (np.fft, tnp.fft, "fft.")):
        for name in dir(module):
            if name.startswith("_") or name in _NOT_TRACED or not hasattr(twins, name):
                continue
            obj = getattr(module, name)
            if isinstance(obj, type) and not issubclass(obj, np.generic):
                continue
            if not callable(obj) or isinstance(obj, type(np)):
                continue
            found[id(obj)] = (obj, getattr(twins, name), prefix + name)
    return found


def lookup_numpy_function(value):
    entry = numpy_function_map().get(id(value))
    return entry if entry is not None and entry[0] is value else None


def _to_tnp(x):
    return _tnp().ndarray(x) if isinstance(x, torch.Tensor) else x


def _from_tnp(x):
    if isinstance(x, _tnp().ndarray):
        return x.tensor
    if isinstance(x, (tuple, list)):
        return type(x)(_from_tnp(v) for v in x)
    return x


@functools.lru_cache(None)
def numpy_op(fn, name: str):
    """The graph node target for a numpy function, method or operator: tensors in, tensors out, the
    body run by torch._numpy."""

    def op(*args, **kwargs):
        args, kwargs = pytree.tree_map_only(torch.Tensor, _to_tnp, (args, kwargs))
        return _from_tnp(fn(*args, **kwargs))
    op.__name__ = op.__qualname__ = f"numpy_{name.strip('_')}"
    return op


@functools.lru_cache(None)
def _method_caller(name: str):
    def call(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)
    call.__name__ = name
    return call


def to_numpy(tensor, scalar):
    """Run time: the numpy object a traced ndarray stands for."""
    array = tensor.numpy()
    return array[()] if scalar else array


def numpy_dtype(torch_dtype):
    try:
        return np.dtype(str(torch_dtype).replace("torch.", ""))
    except TypeError:
        raise Unsupported("numpy", what=f"a numpy array of {torch_dtype}") from None


_COMPLEX_PARTS = {"real": operator.attrgetter("real"), "imag": operator.attrgetter("imag")}


@dataclasses.dataclass(frozen=True, eq=False)
class NumpyNdarrayVariable(VariableTracker):
    """A numpy array (or, with `scalar`, a numpy scalar) made while tracing, or an array read from the
    frame (with a source, see `wrap_ndarray_input`): a tensor in the graph."""
    tensor: TensorVariable = None
    scalar: bool = False
    # `a += b` must not fall back to `a = a + b`: the array is mutable (see translator.binary_op)
    owns_operators = True         # every operator goes to the dunders below (translator._owned_operator)

    @property
    def has_inplace_operators(self):
        return not self.scalar   # numpy scalars are immutable: `s += 1` is `s = s + 1`

    @property
    def example(self):
        return self.tensor.example

    def python_type(self):
        return numpy_dtype(self.example.dtype).type if self.scalar else np.ndarray

    def describe(self):
        kind = "numpy scalar" if self.scalar else "ndarray"
        return f"{kind} {tuple(self.example.shape)} {self.example.dtype}"

    def parts(self, tx):
        return (self.tensor,)

    def reconstruct(self, codegen):
        if self.source is not None:
            # an array read from the frame: still that object (writes went into its memory)
            self.source.reconstruct(codegen)
            return
        # one numpy object however many places hold it (`return b, b`)
        memo = codegen.__dict__.setdefault("_ndarray_temps", {})
        if self in memo:
            codegen.load_temp(memo[self])
            return
        codegen.load_callable(to_numpy)
        codegen.reconstruct(self.tensor)
        codegen.load_const(self.scalar)
        codegen.call(2)
        memo[self] = codegen.store_temp()
        codegen.load_temp(memo[self])

    def iterate(self, tx):
        """`iter(array)`: its rows (or numbers) `a[i]`, each read when it is asked for (a loop that
        writes into the array sees its writes, as eager's iterator does)."""
        if self.scalar:
            return None
        if self.example.dim() == 0:
            raise user_error(TypeError("iteration over a 0-d array"))
        return NdarrayIteratorVariable.create(tx, self)

    def unpack(self, tx):
        if self.scalar:
            return super().unpack(tx)
        return self.iterate(tx).unpack(tx)

    def var_getattr(self, tx, name):
        example = self.example
        if name == "shape":
            return TupleVariable(tuple(self.tensor.var_getattr(tx, "shape").get_items(tx)))
        if name == "ndim":
            return const(example.dim())
        if name == "size":
            return self.tensor.call_method(tx, "numel", [], {})
        if name == "dtype":
            return const(numpy_dtype(example.dtype))
        if name == "itemsize":
            return const(example.element_size())
        if name == "T":
            return self.call_method(tx, "transpose", [], {})
        if name == "strides" and self.tensor.proxy.node.op == "placeholder" and \
                all(type(s) is int for s in example.stride()):
            # the array shares the input tensor's memory and layout (`x.numpy()`, an array from the frame),
            # whose strides are guarded; a computed array's layout is numpy's choice, not torch's
            return const(tuple(s * example.element_size() for s in example.stride()))
        if name in _COMPLEX_PARTS and example.is_complex():
            # views of the complex array, in numpy as in torch (of a real array, `.imag` is a new
            # read-only array of zeros: not traced)
            return call_numpy(tx, _COMPLEX_PARTS[name], name, [self], {})
        if callable(getattr(np.ndarray, name, None)):
            # bound here, refused (a graph break at the call) in call_method if not traced
            return super().var_getattr(tx, name)
        raise Unsupported("unsupported_attr", name=name, obj=self.describe())

    def call_method(self, tx, name, args, kwargs):
        tnp = _tnp()
        if name in _BINARY_DUNDERS and len(args) == 1 and not kwargs:
            return call_numpy(tx, _BINARY_DUNDERS[name], name, [self, args[0]], {})
        if name in _REFLECTED_DUNDERS and len(args) == 1 and not kwargs:
            return call_numpy(tx, _REFLECTED_DUNDERS[name], name, [args[0], self], {})
        if name in _INPLACE_DUNDERS and len(args) == 1 and not kwargs and not self.scalar:
            # `a += b` updates the array (and whatever shares its memory: `x.numpy()`) in place
            result = call_numpy(tx, _INPLACE_DUNDERS[name], name, [self, args[0]], {})
            if result.tensor is not self.tensor:
                raise Unsupported("numpy", what=f"ndarray.{name} not in place")
            return self
        if name in _UNARY_DUNDERS and not args and not kwargs:
            return call_numpy(tx, _UNARY_DUNDERS[name], name, [self], {})
        if name == "__setitem__" and len(args) == 2 and not kwargs and not self.scalar:
            # writes into the array (and whatever shares its memory), like `a += b`
            return call_numpy(tx, operator.setitem, "setitem", [self] + list(args), {})
        if name == "__getitem__" and len(args) == 1:
            return call_numpy(tx, operator.getitem, "getitem", [self, args[0]], {})
        if name == "__len__" and not args and not kwargs and not self.scalar:
            if self.example.dim() == 0:
                raise user_error(TypeError("len() of unsized object"))
            return self.var_getattr(tx, "shape").get_items(tx)[0]
        if name.startswith("_") or name in _UNTRACED_METHODS or not callable(getattr(tnp.ndarray, name, None)):
            raise Unsupported("unsupported_call", fn=f"ndarray.{name}", detail=" (not traced through torch)")
        return call_numpy(tx, _method_caller(name), name, [self] + list(args), kwargs)


@dataclasses.dataclass(frozen=True, eq=False)
class NdarrayIteratorVariable(IteratorVariable):
    """An iterator over a traced ndarray's first dimension. State in SideEffects: the next index."""
    array: NumpyNdarrayVariable = None

    @staticmethod
    def create(tx, array):
        var = NdarrayIteratorVariable(array=array)
        tx.output.side_effects.track(var, 0)
        return var

    def parts(self, tx):
        return (self.array,)

    def python_type(self):
        return type(iter(np.empty(1)))

    def describe(self):
        return "ndarray iterator"

    def next_item(self, tx):
        index = tx.output.side_effects.get(self)
        length = python_index(self.array.call_method(tx, "__len__", [], {}))
        if index >= length:
            raise StopIterationSignal()
        tx.output.side_effects.track(self, index + 1)
        return self.array.call_method(tx, "__getitem__", [const(index)], {})

    def reconstruct(self, codegen):
        if codegen.tx.output.side_effects.get(self) != 0:
            raise Unsupported("unrebuildable", what="rebuilding a started ndarray iterator after the graph")
        codegen.load_global_builtin("iter")
        codegen.reconstruct(self.array)
        codegen.call(1)


_HEAPTYPE = 1 << 9     # Py_TPFLAGS_HEAPTYPE


@dataclasses.dataclass(frozen=True, eq=False)
class NumpyFunctionVariable(VariableTracker):
    """A numpy function, ufunc or scalar type (`np.sum`, `np.square`, `np.float64`) with a
    torch._numpy twin."""
    fn: Any = None
    twin: Any = None
    name: str = ""

    def python_type(self):
        return type(self.fn)

    def describe(self):
        return f"numpy function {self.name}"

    def as_python_constant(self):
        return self.fn

    def reconstruct(self, codegen):
        if self.source is not None:
            self.source.reconstruct(codegen)
        else:
            codegen.load_const(self.fn)

    def var_getattr(self, tx, name):
        # the names of a scalar type (a static type of numpy's C code: immutable) or of a ufunc (read-only)
        immutable = isinstance(self.fn, np.ufunc) or isinstance(self.fn, type) and \
            not self.fn.__flags__ & _HEAPTYPE
        if name in ("__name__", "__qualname__") and immutable:
            return const(getattr(self.fn, name))
        raise Unsupported("unsupported_attr", name=name, obj=self.describe())

    def call_function(self, tx, args, kwargs):
        if all(a.is_python_constant() for a in list(args) + list(kwargs.values())) and \
                (not isinstance(self.fn, type) or issubclass(self.fn, np.generic)):
            # `np.sqrt(64)`, `np.float32(0.5)`: numpy on constants gives the same scalar on every call;
            # kept a constant (its own numpy type) unless it is an array (mutable: traced as a tensor below)
            result = fold(self.fn, *[a.as_python_constant() for a in args],
                          **{k: v.as_python_constant() for k, v in kwargs.items()})
            if isinstance(result, np.generic) or is_constant_value(result):
                return tx.wrap(result, None, trusted=True)
        return call_numpy(tx, self.twin, self.name, list(args), dict(kwargs), real_fn=self.fn)


def _graph_arg(tx, var):
    """The tracker handed to the graph node for one argument of a numpy call."""
    if isinstance(var, NumpyNdarrayVariable):
        return var.tensor
    if isinstance(var, TensorVariable):
        # (call_numpy turns the tensors it may take into their arrays first)
        raise Unsupported("numpy", what="passing a torch tensor to a numpy function")
    if isinstance(var, NumpyFunctionVariable) and isinstance(var.fn, type):
        return const(np.dtype(var.fn).name)   # a scalar type used as a dtype
    if var.is_python_constant():
        value = var.as_python_constant()
        if np is not None and isinstance(value, np.dtype):
            return const(value.name)
        if isinstance(value, (np.generic, np.ndarray)) if np is not None else False:
            raise Unsupported("numpy", what="a numpy value constant in a traced numpy call")
        return var
    if isinstance(var, (TupleVariable, ListVariable)):
        items = tuple(_graph_arg(tx, v) for v in var.get_items(tx))
        return TupleVariable(items) if isinstance(var, TupleVariable) else ListVariable.create(tx, list(items))
    return var


def call_numpy(tx, fn, name, args, kwargs, real_fn=None):
    """`fn(*args, **kwargs)` on numpy values, as one graph node running fn's torch._numpy twin. The
    real numpy function first runs on small stand-ins with the same dtypes, ndims and kinds (array
    or scalar): what it returns -- scalar or array, and of which dtype -- is the ground truth the
    traced result must match (torch._numpy differs from numpy in places, e.g. int32 / int is float32
    there): otherwise a graph break, and eager numpy runs it."""
    if "out" in kwargs:
        raise Unsupported("numpy", what="a numpy call with out=")
    if any(_holds_tensor(tx, a) for a in list(args) + list(kwargs.values())):
        args, kwargs = _tensors_as_arrays(tx, real_fn or fn, name, args, kwargs)
    graph_args = [_graph_arg(tx, a) for a in args]
    graph_kwargs = {k: _graph_arg(tx, v) for k, v in kwargs.items()}
    expected = _probe(tx, real_fn or fn, args, kwargs, name)
    if name.strip("_") in _INTEGER_DIVISIONS and \
            any(np.asarray(e).dtype.kind in "iub" for e in pytree.tree_leaves(expected)):
        raise Unsupported("numpy", what=f"integer {name} (numpy gives 0 for a zero divisor where torch raises)")
    result = tx.output.call_function(numpy_op(fn, name), graph_args, graph_kwargs)
    return _wrap_result(tx, result, expected, name)


# integer division by zero: numpy warns and gives 0, torch raises
_INTEGER_DIVISIONS = {"floordiv", "rfloordiv", "ifloordiv", "mod", "rmod", "imod", "divmod", "rdivmod", "floor_divide",
                      "remainder", "fmod"}
_PROBE_FULL_SIZE = 4096   # stand-ins up to this many elements keep the real shape (else size-1 dims)


def _holds_tensor(tx, var) -> bool:
    if isinstance(var, (TupleVariable, ListVariable)):
        return any(_holds_tensor(tx, v) for v in var.get_items(tx))
    return isinstance(var, TensorVariable)


def _tensors_as_arrays(tx, fn, name, args, kwargs):
    """`args` and `kwargs` of a numpy call with each torch tensor among them replaced by its array
    (`t.numpy()`, what `Tensor.__array__` gives), when the function takes a tensor as numpy takes its
    array: the real function on tensor stand-ins returns what it returns on their arrays (numpy's
    `*_like` and array constructors do). A ufunc wraps its result back into a tensor, a reduction
    calls the tensor's own method: those differ, and are not traced."""
    as_tensors = _probe(tx, fn, args, kwargs, name, tensors=True)
    if not _same_result(as_tensors, _probe(tx, fn, args, kwargs, name)):
        raise Unsupported("numpy", what=f"passing a torch tensor to numpy {name} (not taken as its array)")

    def convert(var):
        if isinstance(var, TensorVariable):
            return tensor_as_ndarray(tx, var)
        if isinstance(var, (TupleVariable, ListVariable)) and _holds_tensor(tx, var):
            items = [convert(v) for v in var.get_items(tx)]
            return TupleVariable(tuple(items)) if isinstance(var, TupleVariable) else ListVariable.create(tx, items)
        return var
    return [convert(a) for a in args], {k: convert(v) for k, v in kwargs.items()}


def _same_result(a, b) -> bool:
    """Results of one numpy call on two kinds of stand-ins: of the same types, dtypes and shapes."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_result(x, y) for x, y in zip(a, b))
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and a.shape == b.shape
    return is_constant_value(a) and a == b


def _probe_value(tx, var, full, tensors=False):
    if isinstance(var, (NumpyNdarrayVariable, TensorVariable)):   # (a tensor: itself, or its array)
        e = var.example
        shape = tuple(int(d) for d in e.shape) if full else tuple(1 for _ in e.shape)
        value = np.zeros(shape, dtype=numpy_dtype(e.dtype))
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            value[..., range(shape[-1]), range(shape[-1])] = 1   # identities: linalg.inv's stand-ins invert
        if isinstance(var, TensorVariable):
            return torch.from_numpy(value) if tensors else value
        return value[()] if var.scalar else value
    if isinstance(var, NumpyFunctionVariable):
        return var.fn
    if isinstance(var, (TupleVariable, ListVariable)):
        items = [_probe_value(tx, v, full, tensors) for v in var.get_items(tx)]
        return tuple(items) if isinstance(var, TupleVariable) else items
    if var.is_python_constant():
        return var.as_python_constant()
    if isinstance(var, SymNodeVariable):
        return var.python_type()(var.value.node.hint) if var.value.node.has_hint() else var.evaluate()
    raise Unsupported("numpy", what=f"passing {var.describe()} to a numpy function")


def _probe(tx, fn, args, kwargs, name, tensors=False):
    """The real numpy function on stand-ins (`tensors`: torch tensors for the tensor arguments)."""
    arrays = [a for a in list(args) + list(kwargs.values()) if isinstance(a, (NumpyNdarrayVariable, TensorVariable))]
    full = all(a.example.numel() <= _PROBE_FULL_SIZE for a in arrays)
    try:
        with filters_set_to("ignore"), np.errstate(all="ignore"):
            return fn(*[_probe_value(tx, a, full, tensors) for a in args],
                      **{k: _probe_value(tx, v, full, tensors) for k, v in kwargs.items()})
    except Unsupported:
        raise
    except Exception as e:  # noqa: BLE001 - eager numpy gets to raise it (or not, with the real values)
        raise Unsupported("unsupported_call", fn=f"numpy {name}", detail=f" (raises {type(e).__name__} on stand-ins)")


def _wrap_result(tx, result, expected, what):
    if isinstance(result, TensorVariable):
        e = result.example
        if isinstance(expected, (np.ndarray, np.generic)) and np.ndim(expected) == e.dim() and \
                expected.dtype == numpy_dtype(e.dtype):
            return NumpyNdarrayVariable(tensor=result, scalar=isinstance(expected, np.generic))
    elif (type(result) is TupleVariable or isinstance(result, ListVariable)) and type(expected) in (tuple, list):
        # a new sequence of new arrays either way: built as numpy's (`meshgrid` gives a tuple, its twin a list)
        items = result.get_items(tx)
        if len(items) == len(expected):
            items = [_wrap_result(tx, r, x, what) for r, x in zip(items, expected)]
            return TupleVariable(tuple(items)) if type(expected) is tuple else ListVariable.create(tx, items)
    elif isinstance(result, ConstantVariable) and type(result.value) is type(expected) and \
            type(expected) in (int, bool, type(None)):
        return result
    raise Unsupported("numpy", what=f"numpy {what}: torch._numpy's result differs from numpy's "
                      f"({result.describe()} vs {type(expected).__name__})")


def wrap_ndarray_input(tx, value, source, guard):
    """An ndarray read from the frame: the graph reads `torch.from_numpy(a)`, a tensor over the same
    memory (so in-place numpy ops write into the array, and a tensor sharing its memory is seen as
    sharing it), guarded like any tensor input. None (the array stays an opaque object) for arrays
    `torch.from_numpy` refuses or would warn about: subclasses, read-only arrays, negative strides,
    dtypes torch lacks, non-native byte order."""
    if np is None or type(value) is not np.ndarray or not value.flags.writeable:
        return None
    try:
        with torch.inference_mode(False):   # (inside inference mode it would be an inference tensor,
            tensor = torch.from_numpy(value)   # whose version the trace cannot read)
    except (TypeError, ValueError, RuntimeError):
        return None
    guard(Guard.type_match(source, np.ndarray))
    # checked before the tensor guards (cheaper kinds first), so `from_numpy` never warns in a guard
    guard(Guard.constant(AttrSource(AttrSource(source, "flags"), "writeable"), True))
    return NumpyNdarrayVariable(tensor=tx.output.add_graph_input(tensor, NdarrayTensorSource(source)), source=source)


def tensor_as_ndarray(tx, tensor_var):
    """`t.numpy()`: the same memory, seen as numpy (eager refuses grad, non-CPU and lazy-conj
    tensors: those are left to run eagerly)."""
    e = tensor_var.example
    if np is None or e.device.type != "cpu" or e.requires_grad or e.is_conj() or e.is_neg() or \
            tensor_var.cls is not torch.Tensor:
        raise Unsupported("data_dependent", what="Tensor.numpy()")
    numpy_dtype(e.dtype)
    return NumpyNdarrayVariable(tensor=tensor_var)


def ndarray_as_tensor(tx, var):
    """`torch.from_numpy(a)` / `torch.as_tensor(a)`: a new tensor object over the same memory."""
    if var.scalar:
        raise Unsupported("numpy", what="torch.from_numpy of a numpy scalar")
    return tx.output.call_method(var.tensor, "view_as", [var.tensor], {})


families.register(tensor_as_ndarray)
