"""One handler per CPython opcode, registered with its facts, and the dispatch table built from them.

Compile time only. Each handler is registered next to its code with `@opcode(...)`: the facts the
translator needs about it (when the root translator takes a checkpoint before it, how many operands
a value op consumes, whether it jumps) live there and nowhere else. An entry may name the Python
versions it applies to (`since`/`until`), so a later Python adds entries instead of editing them.
Registration is checked against `dis.opmap` and `dis.hasjrel`/`dis.hasjabs` when this module is
imported: a name this Python does not know, or a jump fact that disagrees with `dis`, fails loudly.
An opcode with no entry is a structured graph break ("no handler for opcode X").
"""
from __future__ import annotations

import dataclasses
import dis
import enum
import operator
import sys
from typing import Callable

from ..guards.source import AttrSource
from . import exception_state, lifetimes, reads
from .graph_break import Unsupported, user_error
from .resume import RESUME_CALLABLES, cell_is_empty, original_code
from .signals import GeneratorYield, ReturnValue, UserException
from .variables.constant import NEVER_ITERABLE, ConstantVariable, const
from .variables.builtins import checked_text, container_text, format_object, isinstance_of
from .variables.ctx import enter_context
from .variables.dicts import DictVariable, SetVariable, is_other_mapping, mapping_as_dict
from .variables.functions import NestedFunctionVariable, UserFunctionVariable
from .variables.iterators import StopIterationSignal
from .variables.lists import ListVariable, SliceVariable, TupleVariable
from .variables.misc import (
    NULL,
    CellIsEmptyFunction,
    CellVariable,
    ExceptionVariable,
    NullVariable,
    PythonModuleVariable,
    TracebackVariable,
)
from .variables.tensor import SymNodeVariable
from .variables.user_defined import UserDefinedClassVariable, UserDefinedObjectVariable


class Checkpoint(enum.Enum):
    """When the root translator snapshots its state before an opcode, so that the opcode can break.
    OPERANDS: the opcode pops `operands` values and pushes `results`; it breaks (and then runs
    natively) only on an operand that is not a tensor, a symbolic number or a constant."""
    NEVER = "never"
    ALWAYS = "always"        # CALL, CALL_FUNCTION_EX, BEFORE_WITH: may break whatever its operands
    BRANCH = "branch"        # a conditional jump: breaks when the condition is not a constant
    ITERATOR = "iterator"    # FOR_ITER: breaks when the trace does not step the iterator itself
    OPERANDS = "operands"


@dataclasses.dataclass(frozen=True)
class Opcode:
    """One opcode's handler and the facts the translator needs about it."""
    name: str
    handler: Callable
    checkpoint: Checkpoint = Checkpoint.NEVER
    # values a Checkpoint.OPERANDS opcode consumes: a count, or the count as a function of the
    # instruction's argument (BUILD_SET's items, FORMAT_VALUE's value and spec)
    operands: int | Callable = 0
    results: int = 1         # and pushes (LOAD_METHOD, UNPACK_SEQUENCE: see break_codegen._pushed)
    # a Checkpoint.OPERANDS opcode that breaks on a symbolic number too (IS_OP: which object the
    # number will be is unknown)
    symbolic_breaks: bool = False
    jump: bool = False       # has a jump target (agrees with dis.hasjrel/dis.hasjabs)
    since: tuple = (3, 11)   # first Python version the entry applies to
    until: tuple | None = None   # first Python version it no longer applies to

    def operand_count(self, arg) -> int:
        return self.operands(arg) if callable(self.operands) else self.operands


_ENTRIES: list[Opcode] = []


def register(name, handler, **facts) -> Opcode:
    entry = Opcode(name, handler, **facts)
    _ENTRIES.append(entry)
    return entry


def opcode(*names, **facts):
    """Register the decorated function as the handler of `names`, with the facts given."""
    def deco(fn):
        for name in names:
            register(name, fn, **facts)
        return fn
    return deco


def build_table(entries, version=sys.version_info[:2], opmap=None, jumps=None) -> dict[str, Opcode]:
    """The entries that apply to `version`, by name. A name `dis` does not know for this version, two
    entries for one opcode, or a jump fact that disagrees with `dis` is an error."""
    opmap = dis.opmap if opmap is None else opmap
    jumps = set(dis.hasjrel) | set(dis.hasjabs) if jumps is None else jumps
    table: dict[str, Opcode] = {}
    for e in entries:
        if version < e.since or (e.until is not None and version >= e.until):
            continue
        if e.name not in opmap:
            raise ImportError(f"opcode {e.name} is registered for Python {version[0]}.{version[1]}, "
                              "which has no such opcode (give the entry an `until` version)")
        if e.name in table:
            raise ImportError(f"opcode {e.name} is registered twice for Python {version[0]}.{version[1]}")
        if e.jump != (opmap[e.name] in jumps):
            raise ImportError(f"opcode {e.name}: jump={e.jump} disagrees with dis")
        if (e.checkpoint in (Checkpoint.BRANCH, Checkpoint.ITERATOR) and not e.jump) or \
                ((e.checkpoint is Checkpoint.OPERANDS) != (e.operands != 0)):
            raise ImportError(f"opcode {e.name}: inconsistent checkpoint facts")
        table[e.name] = e
    return table


# -- no-ops -------------------------------------------------------------------
@opcode("NOP", "RESUME", "CACHE", "EXTENDED_ARG", "PRECALL", "MAKE_CELL", "COPY_FREE_VARS")
def nop(tx, ins):
    pass  # cells are set up when the translator starts; PRECALL is folded into CALL


# -- stack ----------------------------------------------------------------------
@opcode("POP_TOP")
def pop_top(tx, ins):
    lifetimes.dropped(tx, tx.pop())


@opcode("PUSH_NULL")
def push_null(tx, ins):
    tx.push(NULL)


@opcode("COPY")
def copy(tx, ins):
    tx.push(tx.stack[-ins.arg])


@opcode("SWAP")
def swap(tx, ins):
    tx.stack[-1], tx.stack[-ins.arg] = tx.stack[-ins.arg], tx.stack[-1]


# -- names ----------------------------------------------------------------------
@opcode("LOAD_CONST")
def load_const(tx, ins):
    value = ins.argval
    if tx.parent is None and any(value is c for c in RESUME_CALLABLES):
        # what resume code calls: see resume.RESUME_CALLABLES
        tx.push(CellIsEmptyFunction() if value is cell_is_empty else tx.wrap(value, None, trusted=True))
    else:
        tx.push(const(value))


@opcode("LOAD_FAST")
def load_fast(tx, ins):
    try:
        tx.push(tx.read_local(ins.argval))
    except KeyError:
        raise user_error(UnboundLocalError(f"cannot access local variable '{ins.argval}' where it is not "
                                           "associated with a value")) from None


@opcode("STORE_FAST")
def store_fast(tx, ins):
    old = tx.symbolic_locals.get(ins.argval)
    tx.symbolic_locals[ins.argval] = tx.pop()
    lifetimes.dropped(tx, old)


@opcode("DELETE_FAST")
def delete_fast(tx, ins):
    lifetimes.dropped(tx, tx.symbolic_locals.pop(ins.argval, None))


@opcode("LOAD_GLOBAL")
def load_global(tx, ins):
    if ins.arg & 1:
        tx.push(NULL)
    tx.push(tx.load_global(ins.argval))


@opcode("STORE_GLOBAL")
def store_global(tx, ins):
    tx.store_global(ins.argval, tx.pop())


@opcode("DELETE_GLOBAL")
def delete_global(tx, ins):
    tx.output.side_effects.delete_global(ins.argval)


@opcode("LOAD_DEREF", "LOAD_CLASSDEREF")
def load_deref(tx, ins):
    try:
        tx.push(tx.cells[ins.argval].load(tx))
    except NameError:
        raise_unbound_cell(tx, ins.argval)


def raise_unbound_cell(tx, name):
    """CPython's error for an empty cell: UnboundLocalError for the frame's own cells (a resume
    function's are free variables of its code), NameError for free variables."""
    if name in original_code(tx.code).co_cellvars:
        raise user_error(UnboundLocalError(
            f"cannot access local variable '{name}' where it is not associated with a value")) from None
    raise user_error(NameError(f"cannot access free variable '{name}' where it is not associated "
                               "with a value in enclosing scope")) from None


@opcode("STORE_DEREF")
def store_deref(tx, ins):
    tx.cells[ins.argval].store(tx, tx.pop())


@opcode("DELETE_DEREF")
def delete_deref(tx, ins):
    cell = tx.cells[ins.argval]
    if type(cell) is not CellVariable:   # a cell that existed before the frame: its deletion is not replayed
        raise Unsupported("untracked_mutation", what=f"deleting the enclosing function's variable {ins.argval!r}")
    if cell not in tx.output.side_effects.cells:
        raise_unbound_cell(tx, ins.argval)
    del tx.output.side_effects.cells[cell]


@opcode("LOAD_CLOSURE")
def load_closure(tx, ins):
    tx.push(tx.cells[ins.argval])


@opcode("LOAD_ATTR", checkpoint=Checkpoint.OPERANDS, operands=1)
def load_attr(tx, ins):
    tx.push(tx.getattr(tx.pop(), ins.argval))


@opcode("LOAD_METHOD", checkpoint=Checkpoint.OPERANDS, operands=1)
def load_method(tx, ins):
    obj = tx.pop()
    tx.push(NULL)
    tx.push(tx.getattr(obj, ins.argval))


@opcode("STORE_ATTR", checkpoint=Checkpoint.OPERANDS, operands=2, results=0)
def store_attr(tx, ins):
    obj = tx.pop()
    value = tx.pop()
    tx.setattr(obj, ins.argval, value)


@opcode("DELETE_ATTR", checkpoint=Checkpoint.OPERANDS, operands=1, results=0)
def delete_attr(tx, ins):
    tx.delattr(tx.pop(), ins.argval)


@opcode("LOAD_ASSERTION_ERROR")
def load_assertion_error(tx, ins):
    tx.push(tx.wrap(AssertionError, None, trusted=True))


@opcode("IMPORT_NAME")
def import_name(tx, ins):
    fromlist = tx.pop().as_python_constant()
    level = tx.pop().as_python_constant()
    name = ins.argval
    if level != 0 or name not in sys.modules:
        raise Unsupported("unsupported_syntax", what=f"importing {name!r} (not imported yet, or relative)")
    module = sys.modules[name] if fromlist else sys.modules[name.partition(".")[0]]
    tx.push(PythonModuleVariable(value=module))


@opcode("IMPORT_FROM")
def import_from(tx, ins):
    tx.push(tx.getattr(tx.stack[-1], ins.argval))


# -- calls ----------------------------------------------------------------------
@opcode("KW_NAMES")
def kw_names(tx, ins):
    tx.kw_names = tx.code.co_consts[ins.arg]  # dis does not resolve this constant


@opcode("CALL", checkpoint=Checkpoint.ALWAYS)
def call(tx, ins):
    argc = ins.arg
    args = tx.popn(argc)
    second = tx.pop()
    first = tx.pop()
    if isinstance(first, NullVariable):
        fn = second
    else:
        fn, args = first, [second] + args
    names = tx.kw_names
    tx.kw_names = ()
    kwargs = {}
    if names:
        kwargs = dict(zip(names, args[len(args) - len(names):]))
        args = args[:len(args) - len(names)]
    tx.push(tx.call(fn, args, kwargs))


@opcode("CALL_FUNCTION_EX", checkpoint=Checkpoint.ALWAYS)
def call_function_ex(tx, ins):
    kwargs_var = tx.pop() if ins.arg & 1 else None
    args_var = tx.pop()
    fn = tx.pop()
    tx.pop()  # NULL
    args = tx.unpack_iterable(args_var)
    kwargs = {}
    if kwargs_var is not None:
        if not isinstance(kwargs_var, DictVariable):
            raise Unsupported("unsupported_syntax", what="** with a non-dict")
        kwargs = {k.as_python_constant(): v for k, v in kwargs_var.pairs(tx)}
    tx.push(tx.call(fn, args, kwargs))


@opcode("MAKE_FUNCTION")
def make_function(tx, ins):
    code = tx.pop().as_python_constant()
    flags = ins.arg
    closure = tx.pop().items if flags & 0x08 else ()
    annotations = tx.pop() if flags & 0x04 else None   # a tuple (name, value, name, value...)
    kwdefaults = tuple((k.as_python_constant(), v) for k, v in tx.pop().pairs(tx)) if flags & 0x02 else ()
    defaults = tuple(tx.pop().unpack(tx)) if flags & 0x01 else ()   # a constant tuple, or a built one
    tx.push(NestedFunctionVariable(code=code, f_globals=tx.f_globals, qualname=code.co_qualname,
                                   defaults=defaults, kwdefaults=kwdefaults, closure=tuple(closure),
                                   annotations=annotations))


@opcode("RETURN_VALUE")
def return_value(tx, ins):
    raise ReturnValue(tx.pop())


# -- containers -------------------------------------------------------------------
@opcode("BUILD_TUPLE")
def build_tuple(tx, ins):
    tx.push(TupleVariable(tuple(tx.popn(ins.arg))))


@opcode("BUILD_LIST")
def build_list(tx, ins):
    tx.push(ListVariable.create(tx, tx.popn(ins.arg)))


@opcode("BUILD_SET", checkpoint=Checkpoint.OPERANDS, operands=lambda n: n)
def build_set(tx, ins):
    tx.push(SetVariable.create(tx, tx.popn(ins.arg)))


@opcode("BUILD_MAP", checkpoint=Checkpoint.OPERANDS, operands=lambda n: 2 * n)
def build_map(tx, ins):
    items = tx.popn(2 * ins.arg)
    d = DictVariable.create(tx, [])
    for k, v in zip(items[::2], items[1::2]):
        d.setitem(tx, k, v)
    tx.output.side_effects.track(d, d.pairs(tx))
    tx.push(d)


@opcode("BUILD_CONST_KEY_MAP")
def build_const_key_map(tx, ins):
    keys = tx.pop().as_python_constant()
    values = tx.popn(ins.arg)
    if len(set(keys)) == len(keys):
        tx.push(DictVariable.create(tx, [(const(k), v) for k, v in zip(keys, values)]))
        return
    # keys equal to each other (`{1: a, True: b, 1.0: c}`): inserted one by one as CPython does (the
    # first key object stays, with the last value)
    d = DictVariable.create(tx, [])
    for k, v in zip(keys, values):
        d.setitem(tx, const(k), v)
    tx.output.side_effects.track(d, d.pairs(tx))
    tx.push(d)


@opcode("BUILD_SLICE")
def build_slice(tx, ins):
    parts = tx.popn(ins.arg)
    if len(parts) == 2:
        parts.append(const(None))
    tx.push(SliceVariable(*parts))


@opcode("BUILD_STRING")
def build_string(tx, ins):
    parts = tx.popn(ins.arg)
    tx.push(const("".join(p.as_python_constant() for p in parts)))


@opcode("FORMAT_VALUE", checkpoint=Checkpoint.OPERANDS, operands=lambda flags: 2 if flags & 0x04 else 1)
def format_value(tx, ins):
    flags = ins.arg
    spec = tx.pop().as_python_constant() if flags & 0x04 else ""
    value = tx.pop()
    conv = flags & 0x03
    if isinstance(value, SymNodeVariable):
        value = const(value.evaluate())   # formatting needs the number: specialized, with a guard
    if isinstance(value, UserDefinedObjectVariable):
        # an object of the program's, as CPython formats it: `{o}`/`{o:spec}` by its class's __format__,
        # `!s`/`!r`/`!a` by its __str__/__repr__ (each must give a str), then str's own format
        if conv == 0:
            tx.push(format_object(tx, value, spec))
            return
        text = checked_text(tx, value, "__str__" if conv == 1 else "__repr__").as_python_constant()
        if conv == 3:
            text = text.encode("ascii", "backslashreplace").decode("ascii")
        tx.push(const(format(text, spec)))
        return
    text = None if value.is_python_constant() else container_text(tx, value)
    if text is not None:
        # a builtin container: its str is its repr; its __format__ is object's (an empty spec only)
        if conv == 0 and spec:
            raise user_error(TypeError(f"unsupported format string passed to {value.python_type().__name__}"
                                       ".__format__"))
        if conv == 3:
            text = text.encode("ascii", "backslashreplace").decode("ascii")
        tx.push(const(format(text, spec)))
        return
    if not value.is_python_constant():
        if conv in (0, 1) and value.is_sequence:
            raise Unsupported("non_constant_value", what="formatting a container that is not constant")
        if conv == 1 or conv == 0:
            value = tx.call_method_on(value, "__str__", [], {})
        else:
            value = tx.call_method_on(value, "__repr__", [], {})
        conv = 0
    v = value.as_python_constant()
    v = {0: v, 1: str(v) if conv == 1 else v, 2: repr(v), 3: ascii(v)}[conv]
    tx.push(const(format(v, spec)))


def _into_container(method: str):
    """LIST_APPEND, SET_ADD, LIST_EXTEND, SET_UPDATE: the container below the top calls `method`
    with the value popped."""
    def handler(tx, ins):
        value = tx.pop()
        if method == "extend" and value.is_python_constant() and \
                type(value.as_python_constant()) in (type(None), int, float, bool, complex):
            # `[*1]`: CPython words LIST_EXTEND's TypeError its own way (list.extend's is "not iterable")
            raise user_error(TypeError(f"Value after * must be an iterable, not "
                                       f"{type(value.as_python_constant()).__name__}"))
        tx.stack[-ins.arg].call_method(tx, method, [value], {})
    return handler


for _name, _method in (("LIST_APPEND", "append"), ("SET_ADD", "add")):
    opcode(_name)(_into_container(_method))
for _name, _method in (("LIST_EXTEND", "extend"), ("SET_UPDATE", "update")):
    # (`[*it]`, `{*it}`, `f(*it)` on an iterable the trace cannot read: extended natively)
    opcode(_name, checkpoint=Checkpoint.OPERANDS, operands=1, results=0)(_into_container(_method))


@opcode("MAP_ADD")
def map_add(tx, ins):
    value = tx.pop()
    key = tx.pop()
    tx.stack[-ins.arg].setitem(tx, key, value)


@opcode("DICT_UPDATE", "DICT_MERGE", checkpoint=Checkpoint.OPERANDS, operands=1, results=0)
def dict_update(tx, ins):
    value = tx.pop()
    target = tx.stack[-ins.arg]
    if ins.opname == "DICT_MERGE" and is_other_mapping(value):    # `f(**m)`
        value = mapping_as_dict(tx, value)
    if ins.opname == "DICT_MERGE" and isinstance(value, DictVariable):
        for k, _ in value.pairs(tx):
            if target.lookup(tx, k) is not None:
                func = tx.stack[-(2 + ins.arg)]     # below the positional arguments' tuple
                raise user_error(TypeError(f"{_function_str(tx, func)} got multiple values for keyword "
                                           f"argument '{k.as_python_constant()}'"))
    target.call_method(tx, "update", [value], {})


def _function_str(tx, func) -> str:
    """How CPython names the callee in a call's argument errors: `module.qualname()`."""
    if isinstance(func, NestedFunctionVariable) and not func.assigned:
        module, qualname = func.f_globals.get("__name__"), func.qualname
    elif isinstance(func, UserFunctionVariable) and func.source is not None:
        # a function of the program's: both names can be rebound (read through its source, guarded)
        qualname = tx.wrap(func.fn.__qualname__, AttrSource(func.source, "__qualname__")).as_python_constant()
        module = tx.wrap(func.fn.__module__, AttrSource(func.source, "__module__")).as_python_constant()
        if type(qualname) is not str or module is not None and type(module) is not str:
            raise Unsupported("unsupported_builtin", what="naming the callee in a duplicate keyword error")
    else:
        raise Unsupported("unsupported_builtin", what="naming the callee in a duplicate keyword error")
    return f"{qualname}()" if module in (None, "builtins") else f"{module}.{qualname}()"


@opcode("LIST_TO_TUPLE")
def list_to_tuple(tx, ins):
    tx.push(TupleVariable(tuple(tx.pop().get_items(tx))))


def _unpacked(tx, var) -> list:
    if isinstance(var, ConstantVariable) and type(var.value) in NEVER_ITERABLE:
        raise user_error(TypeError(f"cannot unpack non-iterable {type(var.value).__name__} object"))
    return tx.unpack_iterable(var)


@opcode("UNPACK_SEQUENCE", checkpoint=Checkpoint.OPERANDS, operands=1)
def unpack_sequence(tx, ins):
    items = _unpacked(tx, tx.pop())
    if len(items) != ins.arg:
        if len(items) > ins.arg:
            raise user_error(ValueError(f"too many values to unpack (expected {ins.arg})"))
        raise user_error(ValueError(f"not enough values to unpack (expected {ins.arg}, got {len(items)})"))
    for item in reversed(items):
        tx.push(item)


@opcode("UNPACK_EX")
def unpack_ex(tx, ins):
    before, after = ins.arg & 0xFF, ins.arg >> 8
    items = _unpacked(tx, tx.pop())
    if len(items) < before + after:
        raise user_error(ValueError(f"not enough values to unpack (expected at least {before + after}, "
                                    f"got {len(items)})"))
    middle = ListVariable.create(tx, items[before:len(items) - after])
    for item in reversed(items[:before] + [middle] + items[len(items) - after:]):
        tx.push(item)


@opcode("GET_LEN")
def get_len(tx, ins):
    tx.push(const(tx.stack[-1].has_len(tx)))


# -- operators ------------------------------------------------------------------------
_BINARY_OPS = {}
for _index, (_sym, _name) in enumerate(getattr(dis, "_nb_ops", [])):
    _fn = {"NB_ADD": operator.add, "NB_AND": operator.and_, "NB_FLOOR_DIVIDE": operator.floordiv,
           "NB_LSHIFT": operator.lshift, "NB_MATRIX_MULTIPLY": operator.matmul, "NB_MULTIPLY": operator.mul,
           "NB_REMAINDER": operator.mod, "NB_OR": operator.or_, "NB_POWER": operator.pow,
           "NB_RSHIFT": operator.rshift, "NB_SUBTRACT": operator.sub, "NB_TRUE_DIVIDE": operator.truediv,
           "NB_XOR": operator.xor, "NB_INPLACE_ADD": operator.iadd, "NB_INPLACE_AND": operator.iand,
           "NB_INPLACE_FLOOR_DIVIDE": operator.ifloordiv, "NB_INPLACE_LSHIFT": operator.ilshift,
           "NB_INPLACE_MATRIX_MULTIPLY": operator.imatmul, "NB_INPLACE_MULTIPLY": operator.imul,
           "NB_INPLACE_REMAINDER": operator.imod, "NB_INPLACE_OR": operator.ior,
           "NB_INPLACE_POWER": operator.ipow, "NB_INPLACE_RSHIFT": operator.irshift,
           "NB_INPLACE_SUBTRACT": operator.isub, "NB_INPLACE_TRUE_DIVIDE": operator.itruediv,
           "NB_INPLACE_XOR": operator.ixor}[_sym]
    _BINARY_OPS[_index] = _fn


@opcode("BINARY_OP", checkpoint=Checkpoint.OPERANDS, operands=2)
def binary_op(tx, ins):
    b = tx.pop()
    a = tx.pop()
    tx.push(tx.binary_op(_BINARY_OPS[ins.arg], a, b))


_UNARY = {"UNARY_NEGATIVE": operator.neg, "UNARY_POSITIVE": operator.pos, "UNARY_INVERT": operator.invert,
          "UNARY_NOT": operator.not_}


@opcode(*_UNARY, checkpoint=Checkpoint.OPERANDS, operands=1)
def unary(tx, ins):
    tx.push(tx.unary_op(_UNARY[ins.opname], tx.pop()))


_COMPARE = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
            ">=": operator.ge}


@opcode("COMPARE_OP", checkpoint=Checkpoint.OPERANDS, operands=2)
def compare_op(tx, ins):
    b = tx.pop()
    a = tx.pop()
    tx.push(tx.compare(_COMPARE[ins.argval], a, b))


@opcode("IS_OP", checkpoint=Checkpoint.OPERANDS, operands=2, symbolic_breaks=True)
def is_op(tx, ins):
    b = tx.pop()
    a = tx.pop()
    tx.push(tx.compare(operator.is_not if ins.arg else operator.is_, a, b))


@opcode("CONTAINS_OP", checkpoint=Checkpoint.OPERANDS, operands=2)
def contains_op(tx, ins):
    b = tx.pop()
    a = tx.pop()
    result = tx.compare(operator.contains, a, b)
    if ins.arg:
        result = tx.unary_op(operator.not_, result)
    tx.push(result)


@opcode("BINARY_SUBSCR", checkpoint=Checkpoint.OPERANDS, operands=2)
def binary_subscr(tx, ins):
    index = tx.pop()
    obj = tx.pop()
    tx.push(tx.getitem(obj, index))


@opcode("STORE_SUBSCR", checkpoint=Checkpoint.OPERANDS, operands=3, results=0)
def store_subscr(tx, ins):
    key = tx.pop()
    obj = tx.pop()
    value = tx.pop()
    tx.call_method_on(obj, "__setitem__", [key, value], {})


@opcode("DELETE_SUBSCR", checkpoint=Checkpoint.OPERANDS, operands=2, results=0)
def delete_subscr(tx, ins):
    key = tx.pop()
    obj = tx.pop()
    tx.call_method_on(obj, "__delitem__", [key], {})


# -- control flow ------------------------------------------------------------------
@opcode("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", jump=True)
def jump(tx, ins):
    tx.ip = ins.target


def _conditional(pop, when):
    def fn(tx, ins):
        value = tx.stack[-1]
        truth = when(tx, value)
        if pop or not truth:
            tx.pop()
        if truth:
            tx.ip = ins.target
    return fn


def _truthy(tx, v):
    return v.truth(tx)


def _is_none(tx, v):
    return v.is_python_constant() and v.as_python_constant() is None


for _dir in ("FORWARD", "BACKWARD"):
    register(f"POP_JUMP_{_dir}_IF_TRUE", _conditional(True, _truthy), jump=True, checkpoint=Checkpoint.BRANCH)
    register(f"POP_JUMP_{_dir}_IF_FALSE", _conditional(True, lambda tx, v: not _truthy(tx, v)), jump=True,
             checkpoint=Checkpoint.BRANCH)
    register(f"POP_JUMP_{_dir}_IF_NONE", _conditional(True, _is_none), jump=True)
    register(f"POP_JUMP_{_dir}_IF_NOT_NONE", _conditional(True, lambda tx, v: not _is_none(tx, v)), jump=True)


@opcode("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP", jump=True, checkpoint=Checkpoint.BRANCH)
def jump_or_pop(tx, ins):
    value = tx.stack[-1]
    truth = value.truth(tx)
    if truth == (ins.opname == "JUMP_IF_TRUE_OR_POP"):
        tx.ip = ins.target
    else:
        tx.pop()


@opcode("GET_ITER", checkpoint=Checkpoint.OPERANDS, operands=1)
def get_iter(tx, ins):
    tx.push(tx.get_iter(tx.pop()))


@opcode("FOR_ITER", jump=True, checkpoint=Checkpoint.ITERATOR)
def for_iter(tx, ins):
    it = tx.stack[-1]
    if it.is_iterator:  # ListIteratorVariable, GeneratorVariable
        try:
            tx.push(it.next_item(tx))
        except StopIterationSignal:
            _loop_ends(tx, ins)
        return
    try:
        tx.push(tx.call_method_on(it, "__next__", [], {}))
    except StopIteration:
        _loop_ends(tx, ins)
    except UserException as e:
        if issubclass(e.exc_var.cls, StopIteration):
            _loop_ends(tx, ins)
        else:
            raise


def _loop_ends(tx, ins):
    """The iterator is exhausted: FOR_ITER pops it, and with it what only it held (a paused generator
    a `zip` was pulling from is closed right there)."""
    lifetimes.dropped(tx, tx.pop())
    tx.ip = ins.target


# -- generators (only inside a traced generator body; see GeneratorVariable) ------------
def _in_generator(tx, ins):
    if not tx.is_generator:
        raise Unsupported("deliberate_opcode", opname=ins.opname, reason="generators are run as normal Python frames")


@opcode("YIELD_VALUE")
def yield_value(tx, ins):
    _in_generator(tx, ins)
    raise GeneratorYield(tx.pop())


@opcode("GET_YIELD_FROM_ITER")
def get_yield_from_iter(tx, ins):
    _in_generator(tx, ins)
    tx.push(tx.get_iter(tx.pop()))


@opcode("SEND", jump=True)
def send(tx, ins):
    """TOS1 is the sub-iterator of `yield from`, TOS the value sent in."""
    _in_generator(tx, ins)
    value = tx.pop()
    receiver = tx.stack[-1]
    is_none = value.is_python_constant() and value.as_python_constant() is None
    try:
        if receiver.is_iterator:
            item = receiver.next_item(tx) if is_none else receiver.next_item(tx, value)
        else:
            item = tx.call_method_on(receiver, "__next__" if is_none else "send", [] if is_none else [value], {})
    except StopIterationSignal as done:
        tx.pop()
        tx.push(done.value)  # the sub-generator's return value
        tx.ip = ins.target
        return
    except StopIteration:
        tx.pop()
        tx.push(const(None))
        tx.ip = ins.target
        return
    tx.push(item)


# -- with / try ------------------------------------------------------------------------
@opcode("BEFORE_WITH", checkpoint=Checkpoint.ALWAYS)
def before_with(tx, ins):
    exit_fn, entered = enter_context(tx, tx.pop())
    tx.push(exit_fn)
    tx.push(entered)


@opcode("WITH_EXCEPT_START")
def with_except_start(tx, ins):
    exc = tx.stack[-1]
    exit_fn = tx.stack[-4]
    tx.push(tx.call(exit_fn, [tx.wrap(exc.cls, None, trusted=True), exc, TracebackVariable()], {}))


@opcode("PUSH_EXC_INFO")
def push_exc_info(tx, ins):
    exc = tx.pop()
    # the frame's exception state: a generator has its own (None: it handles none itself)
    previous = tx.own_exception if tx.is_generator else tx.handled_exception
    tx.push(previous if previous is not None else const(None))
    tx.handled_exception = exc if isinstance(exc, ExceptionVariable) else None
    tx.own_exception = tx.handled_exception
    tx.push(exc)


@opcode("POP_EXCEPT")
def pop_except(tx, ins):
    previous = tx.pop()
    tx.handled_exception = tx.own_exception = previous if isinstance(previous, ExceptionVariable) else None
    if tx.is_generator and tx.handled_exception is None:   # its consumer's again
        tx.handled_exception = tx.parent.handled_exception


@opcode("CHECK_EXC_MATCH")
def check_exc_match(tx, ins):
    spec = tx.pop()
    exc = tx.stack[-1]
    classes = spec.as_python_constant_or_none()     # `except obj:` with an instance: TypeError, run natively
    classes = classes if isinstance(classes, tuple) else (classes,)
    if not all(isinstance(c, type) and _mro_has(c, BaseException) for c in classes):
        raise Unsupported("python_protocol", what="an except clause naming something other than exception classes")
    # CPython matches by the MRO (PyType_IsSubtype): a metaclass __subclasscheck__ is never called
    tx.push(const(any(_mro_has(exc.cls, c) for c in classes)))


def _mro_has(cls, klass) -> bool:
    """`klass` is in the MRO of `cls`, by identity (no metaclass `__eq__`/`__subclasscheck__` runs)."""
    return any(k is klass for k in type.__dict__["__mro__"].__get__(cls))


@opcode("RERAISE")
def reraise(tx, ins):
    exc = tx.pop()
    if ins.arg:
        tx.pop()  # lasti
    raise UserException(exc)


@opcode("RAISE_VARARGS")
def raise_varargs(tx, ins):
    if ins.arg == 0:
        if tx.handled_exception is None:    # the caller's exception, or none at all
            if exception_state.caller_handles_nothing(tx):
                raise user_error(RuntimeError("No active exception to reraise"))
            raise Unsupported("unsupported_syntax", what="bare raise outside an except block of the frame")
        raise UserException(tx.handled_exception)
    cause = tx.pop() if ins.arg == 2 else None
    exc = _exception_instance(tx, tx.pop(), "raising", "exceptions")
    if cause is not None:      # `raise exc from cause`: an exception, a class (called) or None
        if not (cause.is_python_constant() and cause.as_python_constant() is None):
            cause = _exception_instance(tx, cause, "an exception cause of", "exception causes")
        exception_state.set_cause(tx, exc, cause if isinstance(cause, ExceptionVariable) else None)
    raise exception_state.raise_new(tx, exc)


def _exception_instance(tx, value, what, plural):
    """The exception `raise value` raises: a class is called with no arguments; anything but an
    exception or an exception class is CPython's TypeError."""
    cls = value.value if isinstance(value, UserDefinedClassVariable) else \
        value.as_python_constant() if value.is_python_constant() else None
    if value.is_python_constant() and not isinstance(cls, (type, BaseException)) or \
            isinstance(cls, type) and not issubclass(cls, BaseException):
        raise user_error(TypeError(f"{plural} must derive from BaseException"))
    if isinstance(value, UserDefinedClassVariable) or (value.is_python_constant() and
                                                       isinstance(value.as_python_constant(), type)):
        value = tx.call(value, [], {})
    if not isinstance(value, ExceptionVariable):
        raise Unsupported("unsupported_syntax", what=f"{what} {value.describe()}")
    return value


# -- pattern matching --------------------------------------------------------------------
# CPython matches `case {...}` / `case [...]` by these flags of the subject's type, which
# `collections.abc.Mapping.register(cls)` and subclassing set
_TPFLAGS_SEQUENCE = 1 << 5
_TPFLAGS_MAPPING = 1 << 6
_TPFLAGS_MATCH_SELF = 1 << 22   # `case int(x)` binds the subject itself (bool, int, str, list, dict...)


@opcode("MATCH_MAPPING")
def match_mapping(tx, ins):
    tx.push(const(reads.type_flag(tx, tx.stack[-1].python_type(), _TPFLAGS_MAPPING)))


@opcode("MATCH_SEQUENCE")
def match_sequence(tx, ins):
    tx.push(const(reads.type_flag(tx, tx.stack[-1].python_type(), _TPFLAGS_SEQUENCE)))


@opcode("MATCH_KEYS")
def match_keys(tx, ins):
    keys = tx.stack[-1]
    subject = tx.stack[-2]
    values = []
    for k in keys.unpack(tx):
        found = subject.lookup(tx, k)
        if found is None:
            tx.push(const(None))
            return
        values.append(found)
    tx.push(TupleVariable(tuple(values)))


@opcode("MATCH_CLASS")
def match_class(tx, ins):
    names = tx.pop().as_python_constant()
    cls = tx.pop()
    subject = tx.pop()
    klass = cls.as_python_constant()
    if not isinstance(klass, type):
        raise user_error(TypeError("called match pattern must be a class"))
    if not isinstance_of(tx, subject.python_type(), klass):
        tx.push(const(None))
        return
    if ins.arg and klass.__flags__ & _TPFLAGS_MATCH_SELF:
        if ins.arg > 1:
            raise Unsupported("python_protocol", what=f"{klass.__name__}() with several positional sub-patterns")
        tx.push(TupleVariable((subject,) + tuple(tx.getattr(subject, a) for a in names)))
        return
    match_args = ()
    if ins.arg:
        # the class-dict entry, guarded (a `__match_args__` rebound later recompiles)
        match_args, _ = reads.class_lookup(tx, klass, "__match_args__")
        if match_args is reads.MISSING:
            match_args = ()
        if type(match_args) is not tuple or not all(type(a) is str for a in match_args) or \
                ins.arg > len(match_args):
            raise Unsupported("python_protocol", what=f"{klass.__name__}() with this __match_args__ "
                                                     "(eager raises TypeError)")
    attrs = list(match_args[:ins.arg]) + list(names)
    tx.push(TupleVariable(tuple(tx.getattr(subject, a) for a in attrs)))


# -- opcodes that always break, with the reason --------------------------------------------
DELIBERATE_BREAKS = {
    "RETURN_GENERATOR": "generators are run as normal Python frames",
    "GET_AWAITABLE": "coroutines are run as normal Python frames",
    "GET_AITER": "coroutines are run as normal Python frames",
    "GET_ANEXT": "coroutines are run as normal Python frames",
    "END_ASYNC_FOR": "coroutines are run as normal Python frames",
    "BEFORE_ASYNC_WITH": "coroutines are run as normal Python frames",
    "ASYNC_GEN_WRAP": "coroutines are run as normal Python frames",
    "SETUP_ANNOTATIONS": "class and module bodies are not compiled",
    "LOAD_BUILD_CLASS": "defining a class inside compiled code",
    "LOAD_NAME": "class and module bodies are not compiled",
    "STORE_NAME": "class and module bodies are not compiled",
    "DELETE_NAME": "class and module bodies are not compiled",
    "IMPORT_STAR": "star imports",
    "PRINT_EXPR": "interactive-mode printing",
    "CHECK_EG_MATCH": "exception groups (except*)",
    "PREP_RERAISE_STAR": "exception groups (except*)",
}


def _deliberate(reason):
    def fn(tx, ins):
        raise Unsupported("deliberate_opcode", opname=ins.opname, reason=reason)
    return fn


for _name, _reason in DELIBERATE_BREAKS.items():
    register(_name, _deliberate(_reason))

# The tables: one entry per opcode this Python knows, with its facts; and name -> handler.
OPCODES: dict[str, Opcode] = build_table(_ENTRIES)
DISPATCH = {name: entry.handler for name, entry in OPCODES.items()}
