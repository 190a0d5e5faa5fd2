"""`transformed_source(code)`: the code bytegraph generated for a frame, rendered as approximate
Python for `transformed_code.py` in the debug dir.

Compile time only (debug tooling). Straight-line code reads as Python; jumps become `goto`
comments; every call result gets a temporary, so nothing reads as running twice. The renderer
simulates the value stack with strings: one handler per opcode (family) says what the
instruction pushes, pops and writes; an opcode without a handler is shown as a comment with its
stack effect applied.
"""
from __future__ import annotations

import dis
import itertools
import re

import torch
import torch.fx

# opcodes with nothing to show
_SILENT = frozenset({"RESUME", "NOP", "PRECALL", "CACHE", "EXTENDED_ARG", "MAKE_CELL", "COPY_FREE_VARS"})


def transformed_source(code) -> str:
    header = [f"# {code.co_name}: the code bytegraph runs instead of {code.co_filename}:{code.co_firstlineno}",
              "# (approximate Python rendered from the bytecode; see transformed_bytecode.txt)",
              f"def {code.co_name}({', '.join(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])}):"]
    renderer = _Renderer(code)
    for ins in dis.get_instructions(code):
        renderer.step(ins)
    return "\n".join(header + ["    " + line for line in renderer.lines]) + "\n"


class _Renderer:
    def __init__(self, code):
        self.code = code
        self.lines: list[str] = []
        self.stack: list = []        # expression text per stack slot; None for a NULL
        self.temps = itertools.count()
        self.kw_names: tuple = ()
        self.targets = {i.argval for i in dis.get_instructions(code)
                        if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs}

    def step(self, ins) -> None:
        if ins.offset in self.targets:
            self.lines.append(f"# label L{ins.offset}")
        if ins.opname not in _SILENT:
            _handler(ins.opname)(self, ins)

    # -- the simulated stack ----------------------------------------------------------------------
    def pop(self, n=1) -> list:
        got = [self.stack.pop() if self.stack else "<?>" for _ in range(n)]
        return got[::-1]

    def temp(self, expr: str) -> None:
        """Push `expr` through a temporary (a call must read as running once)."""
        name = f"_t{next(self.temps)}"
        self.lines.append(f"{name} = {expr}")
        self.stack.append(name)

    def consume(self, value, template: str) -> None:
        """Write `template` (with `{}` for `value`); `_t3 = f(x)` followed by a use of `_t3` reads
        as one line using `f(x)`."""
        if value and value.startswith("_t") and self.lines and self.lines[-1].startswith(f"{value} = "):
            self.lines[-1] = template.format(self.lines[-1][len(value) + 3:])
        else:
            self.lines.append(template.format(value))

    # -- handlers: loads -------------------------------------------------------------------------
    def push_null(self, ins):
        self.stack.append(None)

    def load_const(self, ins):
        self.stack.append(_const_text(ins.argval))

    def load_name(self, ins):
        self.stack.append(str(ins.argval))

    def load_global(self, ins):
        if ins.arg & 1:
            self.stack.append(None)
        self.stack.append(str(ins.argval))

    def load_method(self, ins):
        obj = self.pop()[0]
        self.stack += [None, f"{obj}.{ins.argval}"]

    def load_attr(self, ins):
        self.stack.append(f"{self.pop()[0]}.{ins.argval}")

    # -- stores ------------------------------------------------------------------------------------
    def store_name(self, ins):
        self.consume(self.pop()[0], f"{ins.argval} = {{}}")

    def delete_name(self, ins):
        self.lines.append(f"del {ins.argval}")

    def store_attr(self, ins):
        obj, value = self.pop()[0], self.pop()[0]
        self.lines.append(f"{obj}.{ins.argval} = {value}")

    def store_subscr(self, ins):
        value, obj, key = self.pop(3)
        self.lines.append(f"{obj}[{key}] = {value}")

    # -- operators and calls -------------------------------------------------------------------------
    def binary_subscr(self, ins):
        obj, key = self.pop(2)
        self.temp(f"{obj}[{key}]")

    def binary_op(self, ins):
        a, b = self.pop(2)
        self.temp(f"{a} {ins.argrepr} {b}")

    def compare(self, ins):
        a, b = self.pop(2)
        sym = {"IS_OP": ("is", "is not"), "CONTAINS_OP": ("in", "not in")}.get(ins.opname)
        self.temp(f"{a} {sym[ins.argval] if sym else ins.argrepr} {b}")

    def kw_names(self, ins):
        self.kw_names = tuple(self.code.co_consts[ins.arg])   # dis gives no argval for KW_NAMES on 3.11

    def call(self, ins):
        values = self.pop(ins.arg)
        fn, maybe_self = self.pop(2)
        if fn is None:
            fn, maybe_self = maybe_self, None
        elif maybe_self is not None:
            values.insert(0, maybe_self)
        n_kw = len(self.kw_names)
        pos, kws = values[:len(values) - n_kw], values[len(values) - n_kw:]
        args = ", ".join(list(pos) + [f"{k}={v}" for k, v in zip(self.kw_names, kws)])
        self.kw_names = ()
        self.temp(f"{fn}({args})")

    # -- building and unpacking ------------------------------------------------------------------------
    def build_sequence(self, ins):
        items = self.pop(ins.arg)
        if ins.opname == "BUILD_TUPLE":
            self.stack.append(f"({', '.join(items)}{',' if len(items) == 1 else ''})")
        else:
            self.stack.append(("[%s]" if ins.opname == "BUILD_LIST" else "{%s}") % ", ".join(items))

    def build_map(self, ins):
        items = self.pop(2 * ins.arg)
        self.stack.append("{" + ", ".join(f"{k}: {v}" for k, v in zip(items[::2], items[1::2])) + "}")

    def build_const_key_map(self, ins):
        keys, *values = self.pop(ins.arg + 1)[::-1]
        self.stack.append(f"dict(zip({keys}, ({', '.join(values[::-1])},)))")

    def unpack_sequence(self, ins):
        seq = self.pop()[0]
        names = [f"_t{next(self.temps)}" for _ in range(ins.arg)]
        self.lines.append(f"{', '.join(names)}{',' if ins.arg == 1 else ''} = {seq}")
        self.stack += names[::-1]

    # -- stack shuffles ------------------------------------------------------------------------------------
    def pop_top(self, ins):
        value = self.pop()[0]
        if value is not None and not value.startswith("_t"):
            self.lines.append(value)

    def copy(self, ins):
        self.stack.append(self.stack[-ins.arg] if len(self.stack) >= ins.arg else "<?>")

    def swap(self, ins):
        if len(self.stack) >= ins.arg:
            self.stack[-1], self.stack[-ins.arg] = self.stack[-ins.arg], self.stack[-1]

    # -- control flow ------------------------------------------------------------------------------------
    def return_value(self, ins):
        self.consume(self.pop()[0], "return {}")

    def conditional_jump(self, ins):
        cond, op = self.pop()[0], ins.opname
        neg = "not " if "FALSE" in op else ""
        test = f"{cond} is {'not ' if 'NOT_NONE' in op else ''}None" if "NONE" in op else f"{neg}{cond}"
        self.lines.append(f"if {test}: goto L{ins.argval}")

    def jump(self, ins):
        self.lines.append(f"goto L{ins.argval}")

    def unknown(self, ins):
        """Shown as a comment; its stack effect keeps the rest of the rendering aligned."""
        effect = dis.stack_effect(ins.opcode, ins.arg) if ins.opcode >= dis.HAVE_ARGUMENT else \
            dis.stack_effect(ins.opcode)
        self.lines.append(f"# {ins.opname} {ins.argrepr}".rstrip())
        if effect < 0:
            self.pop(-effect)
        self.stack.extend(f"<{ins.opname}>" for _ in range(max(effect, 0)))


_HANDLERS = {
    "PUSH_NULL": _Renderer.push_null, "LOAD_CONST": _Renderer.load_const, "LOAD_GLOBAL": _Renderer.load_global,
    "LOAD_METHOD": _Renderer.load_method, "LOAD_ATTR": _Renderer.load_attr,
    **dict.fromkeys(("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_NAME"), _Renderer.load_name),
    **dict.fromkeys(("STORE_FAST", "STORE_DEREF", "STORE_GLOBAL", "STORE_NAME"), _Renderer.store_name),
    **dict.fromkeys(("DELETE_FAST", "DELETE_DEREF", "DELETE_GLOBAL"), _Renderer.delete_name),
    "STORE_ATTR": _Renderer.store_attr, "STORE_SUBSCR": _Renderer.store_subscr,
    "BINARY_SUBSCR": _Renderer.binary_subscr, "BINARY_OP": _Renderer.binary_op,
    **dict.fromkeys(("COMPARE_OP", "IS_OP", "CONTAINS_OP"), _Renderer.compare),
    "KW_NAMES": _Renderer.kw_names, "CALL": _Renderer.call,
    **dict.fromkeys(("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"), _Renderer.build_sequence),
    "BUILD_MAP": _Renderer.build_map, "BUILD_CONST_KEY_MAP": _Renderer.build_const_key_map,
    "UNPACK_SEQUENCE": _Renderer.unpack_sequence, "POP_TOP": _Renderer.pop_top, "COPY": _Renderer.copy,
    "SWAP": _Renderer.swap, "RETURN_VALUE": _Renderer.return_value,
}


def _handler(opname: str):
    if opname in _HANDLERS:
        return _HANDLERS[opname]
    if opname.startswith(("POP_JUMP", "JUMP_IF")):
        return _Renderer.conditional_jump
    if opname.startswith("JUMP"):
        return _Renderer.jump
    return _Renderer.unknown


def _const_text(value) -> str:
    if isinstance(value, torch.fx.GraphModule) or isinstance(getattr(value, "__self__", None), torch.fx.GraphModule):
        return "compiled_graph"
    if callable(value) and getattr(value, "__name__", None):
        name = getattr(value, "__qualname__", value.__name__)
        return name if name.isidentifier() else re.sub(r"\W+", "_", name).strip("_")
    text = repr(value)
    return text if len(text) <= 60 and "\n" not in text else f"<{type(value).__name__}>"
