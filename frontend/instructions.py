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
        insts, lineno = [], code.co_firstlineno
        for i, (opname, op, arg, argval, offset, starts_line, positions) in enumerate(_decode(code)):
            if starts_line is not None:
                lineno = starts_line
            insts.append(Instruction(opname, op, arg, argval, offset, i, lineno, positions))
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


def _decode(code):
    """(opname, opcode, arg, argval, offset, starts_line, positions) of each instruction, as
    `dis.get_instructions` gives them, without the text descriptions it also makes (the repr of
    every constant: most of the time of decoding a long function, which a frame breaking often
    does once per resume function)."""
    co_code = code.co_code
    positions = list(code.co_positions())      # (one per code unit, inline caches included)
    # (a code object made by `replace(co_code=...)` may hold more code than its position table
    # describes: the units past it have no position, as `dis` shows them)
    positions += [()] * (len(co_code) // 2 - len(positions))
    starts = dict(dis.findlinestarts(code))
    consts, names, varname = code.co_consts, code.co_names, code._varname_from_oparg
    for offset, op, arg in dis._unpack_opargs(co_code):
        deop = dis._deoptop(op)
        argval = arg
        if arg is not None:
            if deop in _HASCONST:
                argval = consts[arg] if deop == _LOAD_CONST else dis.UNKNOWN      # (KW_NAMES: as dis)
            elif deop in _HASNAME:
                argval = names[arg // 2] if deop == _LOAD_GLOBAL else names[arg]
            elif deop in _HASJABS:
                argval = arg * 2
            elif deop in _HASJREL:
                argval = offset + 2 + (-arg if "JUMP_BACKWARD" in dis.opname[deop] else arg) * 2
            elif deop in _HASVAR:
                argval = varname(arg)
            elif deop in _HASCOMPARE:
                argval = dis.cmp_op[arg]
            elif deop == _FORMAT_VALUE:
                argval = (dis.FORMAT_VALUE_CONVERTERS[arg & 0x3][0], bool(arg & 0x4))
        yield dis._all_opname[op], op, arg, argval, offset, starts.get(offset), \
            dis.Positions(*positions[offset // 2])
