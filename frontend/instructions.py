"""A code object's instructions, decoded once (with jump targets and the exception table) and cached.

Compile time only.
"""
from __future__ import annotations

import dis
import types
import weakref


class Instruction:
    __slots__ = ("opname", "opcode", "arg", "argval", "offset", "lineno", "target", "index", "positions")

    def __init__(self, ins: dis.Instruction, index: int, lineno):
        self.opname = ins.opname
        self.opcode = ins.opcode
        self.arg = ins.arg
        self.argval = ins.argval
        self.offset = ins.offset
        self.lineno = lineno
        self.index = index
        self.target = None
        self.positions = ins.positions

    def __repr__(self):
        return f"{self.offset} {self.opname} {self.argval!r}"


_INSTRUCTION_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # code -> decoded


def instructions_of(code: types.CodeType):
    cached = _INSTRUCTION_CACHE.get(code)
    if cached is None:
        insts, lineno = [], code.co_firstlineno
        for i, ins in enumerate(dis.get_instructions(code)):
            if ins.starts_line is not None:
                lineno = ins.starts_line
            insts.append(Instruction(ins, i, lineno))
        by_offset = {ins.offset: ins.index for ins in insts}
        for ins in insts:
            if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
                ins.target = by_offset[ins.argval]
        table = dis._parse_exception_table(code)
        cached = (insts, by_offset, table)
        _INSTRUCTION_CACHE[code] = cached
    return cached
