"""The symbolic interpreter: opcode coverage, checkpoint/rollback of fake-tensor metadata, and
families of Python constructs captured into exactly one graph."""
import dataclasses
import dis

import torch

import bytegraph
from bytegraph.frontend.opcodes import DELIBERATE_BREAKS, DISPATCH
from bytegraph.testing import CompileCounter


def test_every_opcode_has_a_handler_or_a_deliberate_break():
    missing = [name for name in dis.opmap if name not in DISPATCH]
    assert missing == [], f"opcodes with neither a handler nor a deliberate break: {missing}"
    assert all(reason for name, reason in DELIBERATE_BREAKS.items() if name in dis.opmap)


def test_rollback_restores_fake_tensor_metadata():
    from bytegraph.frontend.frame_translator import InstructionTranslator
    from bytegraph.frontend.variables.constant import const

    def f(x):
        return x

    x = torch.randn(2, 3)
    tx = InstructionTranslator(f.__code__, f, (x,), bytegraph.config, lambda gm, ex: gm.forward)
    xv = tx.symbolic_locals["x"]
    before = (tuple(xv.example.shape), tuple(xv.example.stride()))
    state = tx.output.checkpoint()
    n_guards = len(tx.output.guards)
    tx.output.call_method(xv, "t_", [], {})
    tx.output.call_method(xv, "unsqueeze_", [const(0)], {})
    assert tuple(xv.example.shape) == (1, 3, 2)
    tx.output.restore(state)
    assert (tuple(xv.example.shape), tuple(xv.example.stride())) == before
    assert len(tx.output.guards) == n_guards
    tensor_guard = next(g for g in tx.output.guards if g.kind == "TENSOR_MATCH")
    assert tensor_guard.expected.shape == (2, 3) and tensor_guard.expected.stride == (3, 1)
    assert sum(1 for n in tx.output.graph.nodes if n.op == "call_method") == 0


def _check_one_graph(fn, *args, ops=None):
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    expected = fn(*args)
    got = opt(*args)
    torch.testing.assert_close(got, expected)
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
