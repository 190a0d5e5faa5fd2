"""The symbolic interpreter: opcode coverage, checkpoint/rollback of fake-tensor metadata, and
families of Python constructs captured into exactly one graph."""
import dataclasses
import dis

import pytest
import torch

import bytegraph
from bytegraph.frontend.opcodes import DELIBERATE_BREAKS, DISPATCH
from bytegraph.testing import CompileCounter
from bytegraph.guards.guard import TENSOR_MATCH
from helpers import assert_same, compiled


def test_every_opcode_has_a_handler_or_a_deliberate_break():
    missing = [name for name in dis.opmap if name not in DISPATCH]
    assert missing == [], f"opcodes with neither a handler nor a deliberate break: {missing}"
    assert all(reason for name, reason in DELIBERATE_BREAKS.items() if name in dis.opmap)


def test_opcode_registration_is_checked_against_dis():
    from bytegraph.frontend.opcodes import OPCODES, Checkpoint, Opcode, build_table

    def nop(tx, ins):
        pass
    with pytest.raises(ImportError, match="JUMP_ABSOLUTE"):     # gone since 3.11: fails, not dropped
        build_table([Opcode("JUMP_ABSOLUTE", nop)], version=(3, 11))
    with pytest.raises(ImportError, match="jump"):
        build_table([Opcode("JUMP_FORWARD", nop)], version=(3, 11))
    with pytest.raises(ImportError, match="twice"):
        build_table([Opcode("NOP", nop), Opcode("NOP", nop)], version=(3, 11))
    # version-ranged entries: a later Python adds its own without touching the 3.11 one
    entries = [Opcode("NOP", nop, until=(3, 12)), Opcode("NOP", print, since=(3, 12))]
    assert build_table(entries, version=(3, 11))["NOP"].handler is nop
    assert build_table(entries, version=(3, 12))["NOP"].handler is print
    assert OPCODES["CALL"].checkpoint is Checkpoint.ALWAYS and OPCODES["BINARY_OP"].operands == 2
    assert all(e.jump == (dis.opmap[n] in dis.hasjrel + dis.hasjabs) for n, e in OPCODES.items())


def test_rollback_restores_fake_tensor_metadata():
    from bytegraph.frontend.frame_translator import InstructionTranslator
    from bytegraph.frontend.variables.constant import const

    def f(x):
        return x

    x = torch.randn(2, 3)
    tx = InstructionTranslator(f.__code__, f, (x,), bytegraph.config, lambda gm, ex: gm.forward)
    xv = tx.read_local("x")
    before = (tuple(xv.example.shape), tuple(xv.example.stride()))
    state = tx.output.checkpoint()
    n_guards = len(tx.output.guards)
    tx.output.call_method(xv, "t_", [], {})
    tx.output.call_method(xv, "unsqueeze_", [const(0)], {})
    assert tuple(xv.example.shape) == (1, 3, 2)
    tx.output.restore(state)
    assert (tuple(xv.example.shape), tuple(xv.example.stride())) == before
    assert len(tx.output.guards) == n_guards
    tensor_guard = next(g for g in tx.output.guards if g.kind is TENSOR_MATCH)
    assert tensor_guard.expected.shape == (2, 3) and tensor_guard.expected.stride == (3, 1)
    assert sum(1 for n in tx.output.graph.nodes if n.op == "call_method") == 0


def _check_one_graph(fn, *args, ops=None):
    opt, cnt = compiled(fn)
    expected = fn(*args)
    assert_same(opt(*args), expected)
    assert cnt.frame_count == 1, f"expected one graph, got {cnt.frame_count}"
    assert not bytegraph.stats.break_records
    if ops is not None:
        assert cnt.op_count == ops
    return cnt


@dataclasses.dataclass
class Config:
    scale: float
    shift: float = 1.0


def test_dataclass_is_one_graph():
    def f(x):
        cfg = Config(scale=2.0)
        return x * cfg.scale + cfg.shift

    _check_one_graph(f, torch.randn(3), ops=2)


def test_module_list_loop_is_one_graph():
    layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3))

    def f(x):
        for layer in layers:
            x = torch.relu(layer(x))
        return x

    _check_one_graph(f, torch.randn(2, 4), ops=6)


def test_closure_is_one_graph():
    def f(x):
        factor = 3

        def inner(t):
            return t * factor

        return inner(x) + 1

    _check_one_graph(f, torch.randn(3), ops=2)


def test_kwargs_forwarding_is_one_graph():
    def target(x, *, alpha=1.0, beta=0.0):
        return x * alpha + beta

    def forward_all(x, **kwargs):
        return target(x, **kwargs)

    def f(x):
        return forward_all(x, alpha=2.0, beta=3.0)

    _check_one_graph(f, torch.randn(3), ops=2)


class Scaled:
    def __init__(self, value):
        self.value = value
        self.entered = 0

    def __enter__(self):
        self.entered += 1
        return self.value

    def __exit__(self, *exc):
        return False


def test_user_context_manager_is_one_graph():
    def f(x):
        with Scaled(2.0) as s:
            y = x * s
        return y + 1

    _check_one_graph(f, torch.randn(3), ops=2)


def test_no_grad_block_is_one_graph():
    def f(x):
        with torch.no_grad():
            y = x * 2
        return y + x

    x = torch.randn(3, requires_grad=True)
    cnt = CompileCounter()
    out = bytegraph.compile(f, backend=cnt)(x)
    torch.testing.assert_close(out, f(x))
    assert out.requires_grad and cnt.frame_count == 1


def test_list_and_dict_side_effects_replayed():
    log = []
    table = {"a": 1}

    def f(x):
        log.append(x.shape[0])
        table["b"] = 2
        return x + len(log)

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    out = opt(x)
    torch.testing.assert_close(out, x + 1)
    assert log == [3] and table == {"a": 1, "b": 2}
    assert cnt.frame_count == 1


def test_exception_handled_inside_traced_code():
    def f(x):
        d = {"a": 1}
        try:
            v = d["missing"]
        except KeyError:
            v = 5
        return x * v

    _check_one_graph(f, torch.randn(3), ops=1)


def test_user_error_type_and_message_reach_the_caller():
    def f(x):
        raise ValueError(f"bad size {x.shape[0]}")

    opt = bytegraph.compile(f)
    try:
        opt(torch.randn(4))
    except ValueError as e:
        assert str(e) == "bad size 4"
    else:
        raise AssertionError("no error")


# -- Python protocols that real model code leans on ----------------------------------------------
class LazyAttrs:
    def __init__(self):
        self.base = 3

    def __getattr__(self, name):
        if name.startswith("times_"):
            return self.base * int(name[len("times_"):])
        raise AttributeError(name)


def test_hasattr_and_getattr_default_see_attribute_error_raised_by_user_code():
    def f(x):
        obj = LazyAttrs()
        return x * obj.times_4 + getattr(obj, "missing", 1), hasattr(obj, "nothing"), hasattr(x, "jax")

    _check_one_graph(f, torch.randn(2))


class Remapped:
    """A class with a Python __getattribute__ (like transformers' PretrainedConfig)."""
    attribute_map = {"width": "hidden"}

    def __init__(self):
        self.hidden = 4

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


def test_python_getattribute_is_inlined():
    cfg = Remapped()

    def f(x):
        return x * cfg.width + getattr(cfg, "depth", 2), cfg.__dict__.get("hidden")

    _check_one_graph(f, torch.randn(2))


class Record(dict):
    """A dict subclass whose Python methods call dict's own (like transformers' ModelOutput)."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


def test_dict_subclass_built_in_traced_code():
    def f(x):
        r = Record()
        r["a"] = x + 1
        r["b"] = x * 2
        return r, r.a, r.to_tuple(), len(r), "b" in r

    cnt = _check_one_graph(f, torch.randn(2))
    out = bytegraph.compile(f, backend=cnt)(torch.ones(2))
    assert type(out[0]) is Record and list(out[0]) == ["a", "b"] and out[0].b is out[0]["b"]


def test_constant_str_methods_with_tracked_arguments():
    def f(x):
        parts = "a,b,c".split(",")
        parts.append("d")
        return x * len("-".join(parts)), "-".join(parts), "".join(str(i) for i in range(3))

    _check_one_graph(f, torch.randn(2))


def test_operator_getters_and_stdlib_collections():
    import collections
    import operator

    def f(xs, d):
        first, last = operator.itemgetter(0, -1)(xs)
        shape = operator.attrgetter("shape")(xs[0])
        od = collections.OrderedDict([("a", 1), ("b", 2)])
        od.move_to_end("a")
        groups = collections.defaultdict(list)
        groups["k"].append(first)
        dq = collections.deque([first, last], maxlen=2)
        dq.appendleft(last * 2)
        return (operator.methodcaller("sum")(first) + last.sum(), shape, list(od), dict(groups), list(dq),
                operator.itemgetter("b")(d), operator.contains(d, "b"))

    _check_one_graph(f, [torch.randn(2), torch.randn(2)], {"b": 4})


def test_module_buffer_assignment_is_written_back():
    class Steps(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.zeros((), dtype=torch.long))

        def forward(self, x):
            self.steps = self.steps + 1
            self.steps += 1            # in place on the new buffer
            return x * self.steps

    m = Steps()
    cnt = CompileCounter()
    opt = bytegraph.compile(m, backend=cnt)
    for expected in (2, 4, 6):
        torch.testing.assert_close(opt(torch.ones(2)), torch.full((2,), float(expected)))
        assert int(m.steps) == expected and list(m._buffers) == ["steps"]
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records


def test_autocast_block_is_one_graph_with_enter_and_exit_nodes():
    def f(a, b):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            c = a @ b
        return c.dtype, c, (a @ b).dtype

    a, b = torch.randn(4, 4), torch.randn(4, 4)
    cnt = _check_one_graph(f, a, b)
    # (stand-ins for `_enter_autocast` / `_exit_autocast` that leave the block if the graph raises)
    targets = [getattr(n.target, "__name__", "") for n in cnt.graphs[0].graph.nodes]
    assert "tracked_enter_autocast" in targets and "tracked_exit_autocast" in targets
    assert not torch.is_autocast_enabled("cpu")   # tracing left the real autocast state as it found it


def test_autocast_state_is_left_when_tracing_breaks_inside_the_block():
    def helper(a):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            c = a @ a
            print("graph break")
            return c

    def f(a):
        return helper(a) + 1

    a = torch.randn(3, 3)
    out = bytegraph.compile(f, backend=CompileCounter())(a)
    assert out.dtype == torch.bfloat16 and not torch.is_autocast_enabled("cpu")


def test_model_code_helpers():
    import inspect

    layers = torch.nn.ModuleList(torch.nn.Linear(3, 3) for _ in range(3))

    @torch.no_grad()
    def rotary(x):
        return x.cos()

    def chunk_fn(t):
        return t * 2

    def f(x, **kwargs):
        scale = kwargs.pop("scale", 1.0)
        n = 0
        n += x                       # a number in-place-added to a tensor
        for layer in layers[: 2]:
            x = layer(x)
        nargs = len(inspect.signature(chunk_fn).parameters)
        return x * scale + torch.finfo(x.dtype).min * 0 + rotary(n) * nargs, sorted(kwargs)

    def g(x):
        return f(x, scale=2.0, other=1)

    _check_one_graph(g, torch.randn(2, 3))


class Defaulting(dict):
    def __missing__(self, key):
        return len(key)


def test_dict_subclass_missing_hook():
    def f(x):
        d = Defaulting(a=1)
        return x * d["a"] + d["four"], "four" in d

    _check_one_graph(f, torch.randn(2))


def test_dict_argument_mutation_replays_values_read_from_it():
    def f(x, d):
        d.pop("a")
        d["c"] = d["b"] * 2
        return x + 1

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    d1, d2 = {"a": 1, "b": torch.ones(1)}, {"a": 1, "b": torch.ones(1)}
    b = d1["b"]
    torch.testing.assert_close(opt(torch.zeros(1), d1), f(torch.zeros(1), d2))
    assert list(d1) == list(d2) == ["b", "c"]
    assert d1["b"] is b
    torch.testing.assert_close(d1["c"], d2["c"])
    assert cnt.frame_count == 1


def test_internal_error_never_runs_the_programs_except_block(monkeypatch):
    """An exception from bytegraph's own code (here a simulated bug) is not the program's: the frame
    runs eagerly instead of taking the user's `except KeyError` branch."""
    from bytegraph.frontend.variables import tensor as tensor_variables
    original = tensor_variables.TensorVariable.call_method

    def buggy(self, tx, name, args, kwargs):
        if name == "relu":
            return {}["internal-bug"]
        return original(self, tx, name, args, kwargs)

    monkeypatch.setattr(tensor_variables.TensorVariable, "call_method", buggy)

    def f(x):
        try:
            y = x.relu()
        except KeyError:
            y = x * 0
        return y + 1

    x = torch.randn(4)
    torch.testing.assert_close(bytegraph.compile(f, backend=CompileCounter())(x), f(x))


def test_deleting_an_enclosing_functions_variable_is_not_lost():
    def outer():
        v = 1

        def inner(x):
            nonlocal v
            del v
            return x + 1

        return inner, lambda: v

    inner, read_v = outer()
    x = torch.randn(2)
    torch.testing.assert_close(bytegraph.compile(inner, backend=CompileCounter())(x), x + 1)
    try:
        read_v()
    except NameError:
        pass
    else:
        raise AssertionError("the deletion was not applied")


def test_stack_size_of_transformed_code_asks_no_constant_for_its_repr():
    # code that jumps into a copy of the frame's own body gets its stack size from its instructions;
    # `dis` asked every constant for its repr -- the program's own objects, whose __repr__ may raise
    # (CPython's test_enum: a flag whose repr fails made the compile fail)
    from bytegraph.frontend.resume import stack_size

    class NoRepr:
        def __repr__(self):
            raise TypeError("no repr")

    code = compile("x = 1\ny = (x, x)", "<test>", "exec")
    code = code.replace(co_consts=tuple(NoRepr() if c == 1 else c for c in code.co_consts))
    assert stack_size(code) >= 2
