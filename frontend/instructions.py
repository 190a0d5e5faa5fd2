"""A code object's instructions, decoded once (with jump targets and the exception table) and cached.

Compile time only.
"""
from __future__ import annotations

import dis
import types
from ..code_keyed import CodeKeyed


class Instruction:
    __slots__ = ("opname", "opcode", "arg", "argval", "offset", "lineno", "target", "index", "positions")

    def __init__(self, opname, opcode, arg, argval, offset, index: int, lineno, positions):
        self.opname = opname
        self.opcode = opcode
        self.arg = arg
        self.argval = argval
        self.offset = offset
        self.lineno = lineno
        self.index = index
        self.target = None
        self.positions = positions

    def __repr__(self):
        return f"{self.offset} {self.opname} {self.argval!r}"


_INSTRUCTION_CACHE = CodeKeyed()  # code -> decoded


def instructions_of(code: types.CodeType):
    cached = _INSTRUCTION_CACHE.get(code)
    if cached is None:
        insts = _decode_fast(code)
        by_offset = {ins.offset: ins.index for ins in insts}
        for ins in insts:
            if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
                ins.target = by_offset[ins.argval]
        table = dis._parse_exception_table(code)
        cached = (insts, by_offset, table)
        _INSTRUCTION_CACHE[code] = cached
    return cached


_HASCONST, _HASNAME, _HASJABS, _HASJREL = (frozenset(dis.hasconst), frozenset(dis.hasname), frozenset(dis.hasjabs),
                                           frozenset(dis.hasjrel))
_HASVAR = frozenset(dis.haslocal) | frozenset(dis.hasfree)
_HASCOMPARE = frozenset(dis.hascompare)
_LOAD_CONST, _LOAD_GLOBAL, _FORMAT_VALUE = dis.opmap["LOAD_CONST"], dis.opmap["LOAD_GLOBAL"], dis.opmap["FORMAT_VALUE"]


# per opcode (deoptimized): how its argument is read, and how many inline cache entries follow it
_NONE, _PLAIN, _CONST, _NAME, _JABS, _JREL, _JBACK, _VAR, _COMPARE, _FORMAT = range(10)


def _arg_kind(op: int) -> int:
    if op < dis.HAVE_ARGUMENT:
        return _NONE
    if op in _HASCONST:
        return _CONST
    if op in _HASNAME:
        return _NAME
    if op in _HASJABS:
        return _JABS
    if op in _HASJREL:
        return _JBACK if "JUMP_BACKWARD" in dis.opname[op] else _JREL
    if op in _HASVAR:
        return _VAR
    if op in _HASCOMPARE:
        return _COMPARE
    return _FORMAT if op == _FORMAT_VALUE else _PLAIN


_DEOPT = [dis._deoptop(op) for op in range(256)]
_ARG_KINDS = [_arg_kind(op) for op in range(256)]
_CACHES = [dis._inline_cache_entries[op] for op in range(256)]
_EXTENDED_ARG = dis.EXTENDED_ARG
_INT_OVERFLOW = dis._INT_OVERFLOW


def _decode_fast(code) -> list:
    """The instructions of `code` as `Instruction`s (EXTENDED_ARG included, inline caches skipped), with
    the argument values `dis.get_instructions` gives, without the text descriptions it also makes (the
    repr of every constant: most of the time of decoding a long function, which a frame breaking often
    does once per resume function). One pass over the bytes, with tables made once."""
    co_code = code.co_code
    positions = list(code.co_positions())      # (one per code unit, inline caches included)
    # (a code object made by `replace(co_code=...)` may hold more code than its position table
    # describes: the units past it have no position, as `dis` shows them)
    positions += [(None, None, None, None)] * (len(co_code) // 2 - len(positions))
    starts = dict(dis.findlinestarts(code))
    consts, names, varname = code.co_consts, code.co_names, code._varname_from_oparg
    deopt, caches_of, kinds, opnames = _DEOPT, _CACHES, _ARG_KINDS, dis._all_opname
    make_positions = dis.Positions._make
    insts = []
    lineno = code.co_firstlineno
    extended_arg = caches = 0
    for i in range(0, len(co_code), 2):
        if caches:
            caches -= 1
            continue
        op = co_code[i]
        deop = deopt[op]
        caches = caches_of[deop]
        kind = kinds[deop]
        if kind:
            arg = co_code[i + 1] | extended_arg
            extended_arg = (arg << 8) if deop == _EXTENDED_ARG else 0
            if extended_arg >= _INT_OVERFLOW:
                extended_arg -= 2 * _INT_OVERFLOW
            if kind == _PLAIN:
                argval = arg
            elif kind == _CONST:
                argval = consts[arg] if deop == _LOAD_CONST else dis.UNKNOWN      # (KW_NAMES: as dis)
            elif kind == _NAME:
                argval = names[arg // 2] if deop == _LOAD_GLOBAL else names[arg]
            elif kind == _JABS:
                argval = arg * 2
            elif kind == _JREL:
                argval = i + 2 + arg * 2
            elif kind == _JBACK:
                argval = i + 2 - arg * 2
            elif kind == _VAR:
                argval = varname(arg)
            elif kind == _COMPARE:
                argval = dis.cmp_op[arg]
            else:
                argval = (dis.FORMAT_VALUE_CONVERTERS[arg & 0x3][0], bool(arg & 0x4))
        else:
            arg = argval = None
            extended_arg = 0
        line = starts.get(i)
        if line is not None:
            lineno = line
        insts.append(Instruction(opnames[op], op, arg, argval, i, len(insts), lineno,
                                 make_positions(positions[i // 2])))
    return insts
