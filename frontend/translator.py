"""The symbolic bytecode interpreter: runs a frame's CPython 3.11 bytecode over VariableTrackers.

Compile time only. `InstructionTranslator` traces a whole frame; `InliningTranslator` traces a
called user function inside it. Opcode handlers live in `frontend/opcodes.py` and are dispatched
through one table built once per Python version.
"""
from __future__ import annotations

import collections
import logging
import operator
import sys
import traceback
import types


from ..guards.guard import Guard
from ..guards.source import (BuiltinSource, ConstSource, GlobalSource, ItemSource, ModuleGlobalSource,
                             NamespaceSource)
from ..logs import enabled, log
from ..probe import is_heap_type
from . import exception_state, lifetimes, reads
from .builder import wrap
from .graph_break import Unsupported, fold, user_error
from .instructions import instructions_of
from .lifetimes import frame_returns
from .opcodes import DISPATCH
from .operators import binary, rich_compare
from .signals import ReturnValue, UserException
from .variables.base import NotConstant, VariableTracker, compare_equal
from .variables.builtins import is_tensorish
from .variables.constant import FOLDABLE, NEVER_ITERABLE, ConstantVariable, const
from .variables.function_mode import tensor_getitem
from .variables.torch_function import dispatch as torch_function_dispatch
from .variables.torch_function import method_func
from .variables.torch_function import needs_dispatch as needs_torch_function
from .variables.iterators import GeneratorVariable, ListIteratorVariable, StopIterationSignal, next_of
from .variables.dicts import DictVariable
from .variables.lists import TupleVariable
from .variables.functions import NestedFunctionVariable
from .variables.warning import is_warnings_state, refuse_in_catch_warnings
from .variables.misc import CellVariable, ExceptionVariable, SuperVariable, UnreadArgument
from .variables.tensor import SymNodeVariable, TensorVariable, set_tensor_attr
from .variables.user_defined import EnumVariable, InstanceDictVariable, UserDefinedClassVariable, \
    UserDefinedObjectVariable

# Python exceptions that the traced program itself raises (a failed dict lookup, a bad call...):
# they follow the program's own try/except, or end tracing so the frame raises them eagerly.
USER_EXCEPTIONS = (KeyError, IndexError, AttributeError, TypeError, ValueError, StopIteration, NameError,
                   ZeroDivisionError, AssertionError, RuntimeError, NotImplementedError, LookupError,
                   ArithmeticError)


def _folds(var) -> bool:
    """Whether an operator on this constant may be folded, run once at compile time: the value's type
    is written in C, so the operator runs no code of the program's. A class made by a class statement
    may define it in Python (a metaclass's `__or__`, an enum's `__lt__`), which runs on every call,
    with its effects, its exceptions and a new result each time: such operands go through the
    operator protocol (operators.py), which traces a Python method and folds a C one. (Constants
    proper are builtins; typing's annotations are folded by design, see builder.py.)"""
    if isinstance(var, ConstantVariable):
        return True
    return not is_heap_type(type(var.as_python_constant()))


class InstructionTranslatorBase:
    def __init__(self, code, f_globals, symbolic_locals, cells, output, config, parent=None):
        self.code = code
        self.f_globals = f_globals
        self.f_builtins = f_globals.get("__builtins__", __builtins__)
        if isinstance(self.f_builtins, types.ModuleType):
            self.f_builtins = vars(self.f_builtins)
        self.instructions, self.offset_to_index, self.exception_table = instructions_of(code)
        self.symbolic_locals: dict = symbolic_locals
        self.cells: dict = cells        # cell/free var name -> CellVariable
        self.stack: list = []
        self.ip = 0
        self.current = None
        self.kw_names = ()
        self.output = output
        self.config = config
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        # the exception being handled (what a bare `raise` re-raises), None when not known: the
        # caller's, at the root frame
        self.handled_exception = None if parent is None else parent.handled_exception
        self.is_generator = False    # tracing a generator's body (see GeneratorVariable)
        self.own_exception = None    # in a generator's body: the exception its own except block handles
        self.dispatch = DISPATCH

    # -- stack helpers -------------------------------------------------------
    def push(self, var):
        assert isinstance(var, VariableTracker), var
        self.stack.append(var)

    def pop(self):
        return self.stack.pop()

    def popn(self, n):
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    # -- the loop ------------------------------------------------------------
    def run(self):
        budget = self.config.max_instructions
        output, without_tensors = self.output, self.config.max_instructions_without_tensors
        trace = enabled("frontend", logging.DEBUG)   # BYTEGRAPH_LOGS=+frontend
        while True:
            if self.ip >= len(self.instructions):
                raise Unsupported("internal_error", what="falling off the end of the code")
            ins = self.instructions[self.ip]
            self.current = ins
            self.ip += 1
            budget -= 1
            if budget < 0:
                raise Unsupported("instruction_budget", what="too many instructions (unrolled loop)")
            output.instructions_traced += 1
            if output.instructions_traced > without_tensors and output.gives_up_without_tensors and \
                    not output.tensor_by_example:
                raise Unsupported("no_tensor_work", what=f"{without_tensors} instructions traced without a "
                                                         "tensor (pure Python)")
            handler = self.dispatch.get(ins.opname)
            if handler is None:
                raise Unsupported("unsupported_opcode", opname=ins.opname)
            if trace:
                log("frontend", f"{'  ' * self.depth}{self.code.co_name}:{ins.lineno} {ins.opname} "
                                f"{ins.argval if ins.arg is not None else ''}  stack={self.describe_stack()}",
                    logging.DEBUG)
            self.maybe_checkpoint(ins)
            n_nodes = len(output.graph.nodes)
            try:
                handler(self, ins)
            except ReturnValue:
                raise
            except Unsupported as e:
                if not e.user_stack:
                    e.user_stack = self.user_stack()   # innermost frame first to see it: the full stack
                raise
            except UserException as e:
                self.handle_exception(e.exc_var)
            except NotConstant as e:
                # a handler needed a constant (a sort key, a flag) and got a symbolic or tensor value:
                # the instruction runs as Python instead
                brk = Unsupported("non_constant_value", what=f"{e} where a constant is needed")
                brk.user_stack = self.user_stack()
                raise brk from e
            except USER_EXCEPTIONS as e:
                if isinstance(e, RecursionError) and output.started_deep and \
                        not getattr(e, "bytegraph_user_exception", False):
                    raise       # the program's stack left the compiler no room: this call runs as is
                if not getattr(e, "bytegraph_user_exception", False):
                    # not raised on purpose (see graph_break.user_error): it may be bytegraph's own bug,
                    # so it must never steer the program's except blocks. Running the code eagerly
                    # gives the right answer, raising the real error if there is one.
                    if trace:
                        log("frontend", "unexpected exception while tracing:\n" +
                            "".join(traceback.format_exception(e)), logging.DEBUG)
                    raise Unsupported("internal_error", what=f"{type(e).__name__} while tracing ({e})") from e
                self.handle_exception(self.new_raised(e))
            except Exception as e:
                if not getattr(e, "bytegraph_user_exception", False):
                    raise
                # the program's own, of a kind not listed above (MemoryError from a folded `[0] * n`)
                self.handle_exception(self.new_raised(e))
            if len(output.graph.nodes) != n_nodes and not output.ops_under_handler and self.in_try_block(ins):
                output.ops_under_handler = True

    def new_raised(self, e):
        """The tracker of a real exception the program raises here (a builtin's error), chained to
        the handled exception as CPython chains it."""
        exc_var = ExceptionVariable(cls=type(e), args=tuple(const(a) for a in e.args))
        exception_state.chain(self, exc_var)
        return exc_var

    def maybe_checkpoint(self, ins):
        """Hook: the root translator snapshots its state before instructions it can break at."""

    def describe_stack(self) -> str:
        return "[" + ", ".join(v.describe() for v in self.stack) + "]"

    def in_try_block(self, ins) -> bool:
        """Whether an exception raised at `ins` goes to a handler of this frame (an except, finally
        or with block)."""
        return any(entry.start <= ins.offset < entry.end for entry in self.exception_table)

    def handle_exception(self, exc_var):
        """Jump to this frame's handler for an exception raised at the current instruction,
        or propagate it to the caller."""
        offset = self.current.offset
        self.output.raised_exceptions[id(exc_var)] = exc_var
        for entry in self.exception_table:
            if entry.start <= offset < entry.end:
                del self.stack[entry.depth:]
                if entry.lasti:
                    self.push(const(offset))
                self.push(exc_var)
                self.ip = self.offset_to_index[entry.target]
                return
        raise UserException(exc_var)

    def user_stack(self) -> list:
        frames = []
        tx = self
        while tx is not None:
            ins = tx.current
            frames.append(traceback.FrameSummary(tx.code.co_filename, ins.lineno if ins else tx.code.co_firstlineno,
                                                 tx.code.co_name, lookup_line=False))   # (read when shown)
            tx = tx.parent
        return frames[::-1]

    # -- semantics shared by handlers and variables ---------------------------
    def read_local(self, name):
        """The tracker of local `name` (KeyError if unbound); an argument is wrapped on its first read."""
        var = self.symbolic_locals[name]
        if isinstance(var, UnreadArgument):
            var = self.symbolic_locals[name] = var.read(self)
        return var

    def wrap(self, value, source, trusted=False):
        """The tracker for a real value, guarded through `source` (see builder.wrap); `trusted`: a
        value computed while tracing, or read where nothing needs guarding (no guard)."""
        return wrap(self, value, source, trusted)

    def getattr(self, obj, name):
        return obj.var_getattr(self, name)

    def setattr(self, obj, name, value):
        if isinstance(obj, (UserDefinedObjectVariable, ExceptionVariable, UserDefinedClassVariable)):
            return obj.setattr(self, name, value)
        if isinstance(obj, TensorVariable):
            return set_tensor_attr(self, obj, name, value)
        if isinstance(obj, (DictVariable, NestedFunctionVariable)):
            return obj.setattr(self, name, value)
        raise Unsupported("attribute_write", what=f"setting attribute {name!r} on {obj.describe()}")

    def delattr(self, obj, name):
        if isinstance(obj, UserDefinedObjectVariable):
            return obj.delattr(self, name)
        raise Unsupported("attribute_write", what=f"deleting attribute {name!r} on {obj.describe()}")

    def call_method_on(self, obj, name, args, kwargs):
        return obj.call_method(self, name, list(args), dict(kwargs))

    def call(self, fn, args, kwargs):
        return fn.call_function(self, list(args), dict(kwargs))

    def unpack_iterable(self, var):
        items = list(var.unpack(self))
        self.count_iteration(len(items))
        return items

    def count_iteration(self, n: int = 1) -> None:
        """Items taken from an iterator within one instruction (`any(it)`, `list(it)`) are traced work
        as instructions are: a trace that meets no tensor gives up on them as on instructions, so a
        builtin over millions of items runs as written."""
        output = self.output
        output.instructions_traced += n
        if output.instructions_traced > self.config.max_instructions_without_tensors and \
                output.gives_up_without_tensors and not output.tensor_by_example:
            raise Unsupported("no_tensor_work", what=f"{self.config.max_instructions_without_tensors} "
                                                     "instructions and items traced without a tensor (pure Python)")

    def iterate_all(self, var):
        """The items of `iter(var)`, taken to the end, as builtins that take any iterable read them
        (`list(x)`, `sorted(x)`, `set.issubset(x)`): a number raises their "'int' object is not iterable"."""
        return self.unpack_iterable(self.get_iter(var))

    def get_iter(self, obj):
        if obj.is_iterator:
            return obj
        if isinstance(obj, ConstantVariable) and type(obj.value) in NEVER_ITERABLE:
            # `iter(None)`, `for x in 3`: the program's TypeError, which its `except` may expect
            raise user_error(TypeError(f"'{type(obj.value).__name__}' object is not iterable"))
        it = obj.iterate(self)
        return it if it is not None else ListIteratorVariable.create(self, obj.unpack(self))

    def getitem(self, obj, index):
        if isinstance(obj, TensorVariable):
            dispatched = torch_function_dispatch(self, method_func("__getitem__"), [obj, index], {})
            if dispatched is not None:
                return dispatched      # the __torch_function__ of the tensor's class answered
            moded = tensor_getitem(self, obj, index)   # an open TorchFunctionMode that changes indexing
            return moded if moded is not None else obj.getitem(self, index)
        if isinstance(obj, UserDefinedClassVariable):
            return obj.subscript(self, index)
        if obj.is_python_constant() and index.is_python_constant() and not obj.is_sequence and _folds(obj):
            return const(fold(operator.getitem, obj.as_python_constant(), index.as_python_constant()))
        return obj.call_method(self, "__getitem__", [index], {})

    def binary_op(self, op, a, b):
        if a.owns_operators or b.owns_operators:
            return self._owned_operator(op, a, b)
        if self._dispatches(a, b):
            return self._dispatched_operator(op, a, b)
        a, b = _symbolic_with_foreign_number(_INPLACE_TO_BINARY.get(op, op), a, b)
        if is_tensorish(a) or is_tensorish(b):
            base = _INPLACE_TO_BINARY.get(op, op)
            self._guard_tensor_operator(a, b, _DUNDER.get(op), _DUNDER.get(base), _RDUNDER.get(base))
            if op in _INPLACE_TO_BINARY and not isinstance(a, TensorVariable):
                op = _INPLACE_TO_BINARY[op]   # `n += t` on a number: numbers have no in-place operators
            return self.output.call_function(op, [a, b], {})
        if a.is_python_constant() and b.is_python_constant() and not a.is_sequence and not b.is_sequence and \
                _folds(a) and _folds(b):
            base = _INPLACE_TO_BINARY.get(op, op)
            if base in FOLDABLE:
                return const(fold(base, a.as_python_constant(), b.as_python_constant()))
        base = _INPLACE_TO_BINARY.get(op, op)
        return binary(self, _DUNDER[base], _RDUNDER.get(base), _DUNDER[op] if op in _INPLACE_TO_BINARY else None, a, b)

    def compare(self, op, a, b):
        if op in (operator.is_, operator.is_not):
            same = self.is_same(a, b)
            return const(same if op is operator.is_ else not same)
        if op is operator.contains:
            if isinstance(b, ConstantVariable) and type(b.value) in NEVER_ITERABLE:
                raise user_error(TypeError(f"argument of type '{type(b.value).__name__}' is not iterable"))
            if b.is_iterator:
                # iterators have no __contains__: `in` walks one and stops at the first item equal to
                # `a` (CPython's iteration search), leaving the rest unread
                while True:
                    try:
                        item = next_of(self, b)
                    except StopIterationSignal:
                        return const(False)
                    if compare_equal(self, item, a):
                        return const(True)
            result = b.call_method(self, "__contains__", [a], {})
            if isinstance(b, TensorVariable) or isinstance(result, ConstantVariable) and type(result.value) is bool:
                return result
            # `in` answers a bool whatever a program's `__contains__` returned: its truth
            return const(result.truth(self))
        if a.owns_operators or b.owns_operators:
            return self._owned_operator(op, a, b)
        if self._dispatches(a, b):
            return self._dispatched_operator(op, a, b)
        a, b = _symbolic_with_foreign_number(op, a, b)
        if is_tensorish(a) or is_tensorish(b):
            self._guard_tensor_operator(a, b, _DUNDER.get(op), _DUNDER.get(_REFLECTED_COMPARE.get(op)))
            return self.output.call_function(op, [_plain_int(a), _plain_int(b)], {})
        if a.is_python_constant() and b.is_python_constant() and _folds(a) and _folds(b):
            return const(fold(op, a.as_python_constant(), b.as_python_constant()))
        a, b = _constant_tuple_as_sequence(a), _constant_tuple_as_sequence(b)
        family = _sequence_family(self, a, b, op)
        if op in (operator.eq, operator.ne) and family is not None:
            ia, ib = a.get_items(self), b.get_items(self)
            equal = len(ia) == len(ib) and all(compare_equal(self, x, y) for x, y in zip(ia, ib))
            return const(equal if op is operator.eq else not equal)
        if op in (operator.lt, operator.le, operator.gt, operator.ge) and family in (list, tuple):
            ia, ib = a.get_items(self), b.get_items(self)
            if all(i.is_python_constant() for i in ia + ib):
                # (items that do not order, `[1] < ["a"]`: the program's TypeError)
                return const(fold(op, tuple(i.as_python_constant() for i in ia),
                                  tuple(i.as_python_constant() for i in ib)))
            if all(i.is_python_constant() or i.python_type() in (list, tuple) for i in ia + ib):
                # CPython's walk: the first pair of items not equal decides (their own `op`, answered
                # as it is), else the lengths; items are constants or lists/tuples (no program code)
                for x, y in zip(ia, ib):
                    if not compare_equal(self, x, y):
                        return self.compare(op, x, y)
                return const(op(len(ia), len(ib)))
        if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
            return self.output.call_function(op, [a, b], {})
        return rich_compare(self, _DUNDER[op], _DUNDER[_REFLECTED_COMPARE[op]], a, b)

    def _guard_tensor_operator(self, a, b, *names):
        """The graph applies the operator itself: torch.Tensor's methods for it (which a library may
        replace between calls) must stay what they were."""
        if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
            for name in names:
                if name is not None:
                    reads.tensor_class_entry(self, name)

    def is_same(self, a, b) -> bool:
        if a is b:
            return True
        if isinstance(a, TensorVariable) and isinstance(b, TensorVariable):
            return a.proxy.node is b.proxy.node
        if isinstance(a, InstanceDictVariable) or isinstance(b, InstanceDictVariable):
            # `obj.__dict__` read twice is one dict: the same object's
            if isinstance(a, InstanceDictVariable) and isinstance(b, InstanceDictVariable):
                return self.is_same(a.obj, b.obj)
            other = b if isinstance(a, InstanceDictVariable) else a
            if getattr(other, "source", None) is not None and other.python_type() is dict:
                raise Unsupported("python_protocol", what="`is` between an instance's __dict__ and a dict read "
                                                          "from the program")
            return False
        if a.is_python_constant() and b.is_python_constant():
            return a.as_python_constant() is b.as_python_constant()
        va, vb = getattr(a, "value", None), getattr(b, "value", None)
        if va is not None and vb is not None:
            a.guard_identity(self)
            b.guard_identity(self)
            return va is vb
        sa, sb = getattr(a, "source", None), getattr(b, "source", None)
        if sa is not None and sb is not None:
            # two trackers read from the frame are two objects (one object read twice is one tracker,
            # guarded SAME_OBJECT): they must stay two
            self.output.guards.add(Guard.distinct_objects(sa, sb))
        return False

    def _dispatches(self, *operands) -> bool:
        """An operand is a tensor whose class has its own `__torch_function__` (and dispatch is on)."""
        return any(isinstance(v, TensorVariable) for v in operands) and needs_torch_function(self, operands, {})

    def _dispatched_operator(self, op, a, b):
        """`a OP b` with a tensor of a class with its own `__torch_function__`: the tensor's dunder (which
        dispatches with it as `func`): a's, or b's reflected one when a is not a tensor (a tensor
        subclass replacing a dunder is refused, so a's answers whenever a is a tensor)."""
        if isinstance(a, TensorVariable):
            return a.call_method(self, _DUNDER[op], [b], {})
        base = _INPLACE_TO_BINARY.get(op, op)
        reflected = _RDUNDER.get(base) or _DUNDER.get(_REFLECTED_COMPARE.get(base))
        if reflected is None:
            raise Unsupported("python_protocol", what=f"{getattr(op, '__name__', op)} on {b.describe()}")
        return b.call_method(self, reflected, [a], {})

    def _owned_operator(self, op, a, b):
        """An operator with an operand whose tracker implements the whole operator protocol itself
        (a traced numpy array): its dunders answer, with no fallback to another meaning."""
        if not a.owns_operators:
            base = _INPLACE_TO_BINARY.get(op, op)
            reflected = _RDUNDER.get(base) or _DUNDER.get(_REFLECTED_COMPARE.get(base))
            if reflected is None:
                raise Unsupported("python_protocol", what=f"{getattr(op, '__name__', op)} on {b.describe()}")
            return b.call_method(self, reflected, [a], {})
        if op in _INPLACE_TO_BINARY and not a.has_inplace_operators:
            op = _INPLACE_TO_BINARY[op]     # immutable (a numpy scalar): `s += 1` is `s = s + 1`
        return a.call_method(self, _DUNDER[op], [b], {})

    def unary_op(self, op, a):
        if op in (operator.not_, operator.truth):
            return const(op(a.truth(self)))
        if self._dispatches(a) and op in (operator.neg, operator.pos, operator.invert):
            return a.call_method(self, {operator.neg: "__neg__", operator.pos: "__pos__",
                                        operator.invert: "__invert__"}[op], [], {})
        if is_tensorish(a):
            return self.output.call_function(op, [a], {})
        if a.is_python_constant() and _folds(a):
            return const(fold(op, a.as_python_constant()))
        return a.call_method(self, {operator.neg: "__neg__", operator.pos: "__pos__",
                                    operator.invert: "__invert__"}[op], [], {})

    # -- globals --------------------------------------------------------------
    def global_source(self, name):
        root = self.root()
        if self.f_globals is root.f_globals:
            return GlobalSource(name)
        module = self.f_globals.get("__name__")
        if module in sys.modules and vars(sys.modules[module]) is self.f_globals:
            return ModuleGlobalSource(module, name)
        # globals of no imported module (exec'd code): the dict is fixed for the inlined function
        return ItemSource(ConstSource(self.f_globals), name)

    def load_global(self, name):
        root = self.root()
        is_root = self.f_globals is root.f_globals
        if is_root:
            effects = self.output.side_effects
            if name in effects.globals:
                return effects.globals[name]
            if name in effects.deleted_globals:
                raise user_error(NameError(f"name '{name}' is not defined"))
        value = reads.mapping_lookup(self, self.f_globals, NamespaceSource("G") if is_root else None, name)
        if value is not reads.MISSING:
            return wrap(self, value, self.global_source(name))
        value = reads.mapping_lookup(self, self.f_builtins, NamespaceSource("B") if is_root else None, name)
        if value is not reads.MISSING:
            # `builtins.len = ...` rebinds the name for every module: the same object must be found
            source = BuiltinSource(name) if is_root else ItemSource(ConstSource(self.f_builtins), name)
            reads.record(self, Guard.id_match(source, value))
            return wrap(self, value, None, trusted=True)
        raise user_error(NameError(f"name '{name}' is not defined"))

    def store_global(self, name, value):
        if self.f_globals is not self.root().f_globals:
            raise Unsupported("untracked_mutation", what="assigning a global of another module")
        self.output.side_effects.store_global(name, value)

    def root(self):
        tx = self
        while tx.parent is not None:
            tx = tx.parent
        return tx

    # -- calls ----------------------------------------------------------------
    def inline_user_function(self, fn_var, args, kwargs):
        code = fn_var.get_code()
        if self.depth >= self.config.max_inline_depth:
            raise Unsupported("too_deep", fn=fn_var.describe())
        if code.co_flags & (0x80 | 0x200 | 0x100):  # coroutine, async
            raise Unsupported("generator", fn=fn_var.describe())
        if is_warnings_state(fn_var.get_globals()):   # (its namespace: see warning.py)
            refuse_in_catch_warnings(self, fn_var.describe())
        bound = fn_var.bind(self, args, kwargs)
        cells = dict(fn_var.closure_cells(self))
        for name in code.co_cellvars:
            cells[name] = CellVariable.new(self, bound.get(name))
        if code.co_flags & 0x20:  # a generator: its body runs lazily, one `next()` at a time
            return GeneratorVariable.create(self, code, fn_var.get_globals(), bound, cells, fn_var.describe(), fn_var)
        tx = InliningTranslator(code, fn_var.get_globals(), bound, cells, self.output, self.config, parent=self)
        return tx.run_inline()

    def returned(self, value):
        """This frame returned `value`: what it made and did not hand back ends its life here
        (generators closed, see lifetimes.py)."""
        frame_returns(self, value)

    def close_generator(self, gen):
        """`gen.close()` called by the program (lifetimes.py closes dying ones itself)."""
        if lifetimes.close_is_observable(self, gen):
            lifetimes.close(self, gen, explicit=True)
        else:
            self.output.side_effects.track(gen, None)

    def close_delegate(self, gen, state, delegate):
        """`gen.throw(GeneratorExit)` while `gen` is paused in a `yield from`: the delegate closed (what
        that raised, or None) and dropped from the paused stack (the state without it): lifetimes.py."""
        error = lifetimes.close_delegate(self, delegate)
        return error, lifetimes.drop_delegate(self, gen, state, delegate)

    def resume_generator(self, gen, state):
        """A translator for the body of generator `gen`, paused at `state` (see GeneratorVariable)."""
        gtx = InliningTranslator(gen.code, gen.f_globals, dict(state.symbolic_locals), dict(state.cells),
                                 self.output, self.config, parent=self)
        gtx.is_generator = True
        gtx.ip = state.ip
        gtx.stack = list(state.stack)
        # a generator keeps the exception its own except block handles across a `yield`; without
        # one, the exception handled is its consumer's (CPython's stack of exception states)
        gtx.own_exception = state.exception
        if state.exception is not None:
            gtx.handled_exception = state.exception
        return gtx

    def make_super(self, args):
        """super(...) as CPython's super_init builds it, with its errors."""
        if args:
            if len(args) != 2:   # super(type) is an unbound super object: not modelled
                if len(args) > 2:
                    fold(super, *[int] * len(args))
                raise Unsupported("unsupported_call", fn="super", detail=" with one argument")
            return SuperVariable.create(self, args[0], args[1])
        code = self.code
        if code.co_argcount == 0:
            raise user_error(RuntimeError("super(): no arguments"))
        first = code.co_varnames[0]
        if first in self.cells:
            if self.cells[first].is_empty(self):
                raise user_error(RuntimeError("super(): arg[0] deleted"))
            obj = self.cells[first].load(self)
        elif first in self.symbolic_locals:
            obj = self.read_local(first)
        else:
            raise user_error(RuntimeError("super(): arg[0] deleted"))
        if "__class__" not in code.co_freevars:
            raise user_error(RuntimeError("super(): __class__ cell not found"))
        if self.cells["__class__"].is_empty(self):
            raise user_error(RuntimeError("super(): empty __class__ cell"))
        cls = self.cells["__class__"].load(self)
        if not isinstance(cls.as_python_constant_or_none(), type):
            raise user_error(RuntimeError(f"super(): __class__ is not a type ({cls.python_type().__name__})"))
        return SuperVariable.create(self, cls, obj)


def _constant_tuple_as_sequence(var):
    """A constant tuple, item by item (to compare it with a torch.Size of symbolic sizes)."""
    if isinstance(var, ConstantVariable) and type(var.value) is tuple:
        return TupleVariable(tuple(const(v) for v in var.value))
    return var


class InliningTranslator(InstructionTranslatorBase):
    def run_inline(self):
        try:
            self.run()
        except ReturnValue as r:
            self.returned(r.value)
            return r.value
        raise user_error(AssertionError("unreachable"))


def _sequence_family(tx, a, b, op):
    """list, tuple, range or deque when both are sequence trackers of that builtin family whose
    comparison `op` is the family's own (it then compares items), else None: a subclass may define
    it (a NamedTuple class's `__lt__`), and that runs."""
    if not (a.is_sequence and b.is_sequence):
        return None
    ta, tb = a.python_type(), b.python_type()
    for family in (list, tuple, range, collections.deque):
        if issubclass(ta, family) and issubclass(tb, family):
            names = (_DUNDER[op], _DUNDER[_REFLECTED_COMPARE[op]])
            if any(reads.class_lookup(tx, t, n)[0] is not vars(family)[n] for t in {ta, tb} - {family}
                   for n in names):
                return None
            return family
    return None


_REFLECTED_COMPARE = {operator.lt: operator.gt, operator.gt: operator.lt, operator.le: operator.ge,
                      operator.ge: operator.le, operator.eq: operator.eq, operator.ne: operator.ne}
_INPLACE_TO_BINARY = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
                      operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
                      operator.imod: operator.mod, operator.ipow: operator.pow, operator.iand: operator.and_,
                      operator.ior: operator.or_, operator.ixor: operator.xor, operator.imatmul: operator.matmul,
                      operator.ilshift: operator.lshift, operator.irshift: operator.rshift}
_DUNDER = {operator.add: "__add__", operator.sub: "__sub__", operator.mul: "__mul__",
           operator.truediv: "__truediv__", operator.floordiv: "__floordiv__", operator.mod: "__mod__",
           operator.pow: "__pow__", operator.and_: "__and__", operator.or_: "__or__", operator.xor: "__xor__",
           operator.matmul: "__matmul__", operator.lshift: "__lshift__", operator.rshift: "__rshift__",
           operator.iadd: "__iadd__", operator.isub: "__isub__", operator.imul: "__imul__",
           operator.itruediv: "__itruediv__", operator.ifloordiv: "__ifloordiv__", operator.imod: "__imod__",
           operator.ipow: "__ipow__", operator.iand: "__iand__", operator.ior: "__ior__", operator.ixor: "__ixor__",
           operator.imatmul: "__imatmul__", operator.ilshift: "__ilshift__", operator.irshift: "__irshift__",
           operator.lt: "__lt__", operator.le: "__le__", operator.eq: "__eq__", operator.ne: "__ne__",
           operator.gt: "__gt__", operator.ge: "__ge__"}
_RDUNDER = {operator.add: "__radd__", operator.sub: "__rsub__", operator.mul: "__rmul__",
            operator.truediv: "__rtruediv__", operator.floordiv: "__rfloordiv__", operator.mod: "__rmod__",
            operator.pow: "__rpow__", operator.and_: "__rand__", operator.or_: "__ror__", operator.xor: "__rxor__",
            operator.matmul: "__rmatmul__", operator.lshift: "__rlshift__", operator.rshift: "__rrshift__"}


def _symbolic_with_foreign_number(op, a, b):
    """`n OP c` with n a symbolic int/float and c a constant number whose type has its own operator (a
    numpy scalar, a Fraction): torch's symbolic arithmetic would answer a plain int or float where
    eager answers c's type, so n is specialized (a shape guard) and Python's operator answers on the
    constants. A bool next to a symbolic int or float is the int it stands for (the same answer, and
    torch's symbolic reasoning does not take bools there)."""
    sym, other = (a, b) if isinstance(a, SymNodeVariable) else (b, a)
    if not isinstance(sym, SymNodeVariable) or not other.is_python_constant() or sym.python_type() is bool:
        return a, b
    value = other.as_python_constant()
    if type(value) is bool:
        other = const(int(value))
    elif not isinstance(value, (int, float, complex)) or any(
            getattr(type(value), _DUNDER[op], None) is not getattr(base, _DUNDER[op], None)
            for base in (int, float, complex) if isinstance(value, base)):
        sym = const(sym.evaluate())
    else:
        return a, b
    return (sym, other) if isinstance(a, SymNodeVariable) else (other, sym)


def _plain_int(var):
    """An int-valued enum member (IntEnum, `class C(int, Enum)`) compared with a tensor or a symbolic
    number is the int it stands for (a SymInt compares an int subclass as unequal)."""
    if isinstance(var, EnumVariable) and isinstance(var.value, int) and \
            type(var.value).__eq__ is int.__eq__:
        return const(int.__int__(var.value))
    return var
