"""The `aot_eager` backend: training through AOTAutograd's forward and backward graphs, compared step
by step with eager; input mutation, aliasing outputs, inference; the min-cut partitioner."""
import copy
import functools
import logging

import bytegraph
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from bytegraph.testing import CompileCounterWithBackend

PARTITIONERS = ["default", "min_cut"]


class AotGraphs:
    """A `graph_hook` for aot_eager: records every (kind, ATen graph) AOTAutograd produced."""

    def __init__(self):
        self.graphs = []

    def __call__(self, kind, gm):
        self.graphs.append((kind, gm))

    @property
    def kinds(self):
        return [kind for kind, _ in self.graphs]

    def only(self, kind):
        found = [gm for k, gm in self.graphs if k == kind]
        assert len(found) == 1, self.kinds
        return found[0]


def aten_targets(gm):
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}


def saved_for_backward(fw_gm, n_user_outputs):
    """How many values the forward graph hands to the backward: its outputs past the user's."""
    (outputs,) = fw_gm.graph.find_nodes(op="output")[0].args
    return len(outputs) - n_user_outputs


# -- models ----------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 32)
        self.fc2 = nn.Linear(32, 32)
        self.drop = nn.Dropout(p=0.0)
        self.out = nn.Linear(32, 5)

    def forward(self, x):
        x = self.drop(F.relu(self.fc1(x)))
        x = torch.tanh(self.fc2(x))
        return self.out(x)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 4 * 4, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class TransformerBlock(nn.Module):
    """Pre-norm block: causal multi-head self-attention and a GELU MLP, with residuals."""

    def __init__(self, dim=16, heads=2, seq=8):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.heads) ** 0.5)
        att = att.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


def train_side_by_side(model, make_batch, loss_fn, make_optimizer, partitioner, steps=5):
    """Train `model` compiled with aot_eager and an eager copy on the same batches; compare losses,
    gradients, parameters and buffers after every step. Returns the recorded AOT graphs."""
    reference = copy.deepcopy(model)
    graphs = AotGraphs()
    compiled = bytegraph.compile(model, backend="aot_eager",
                                 options={"partitioner": partitioner, "graph_hook": graphs})
    opt, ref_opt = make_optimizer(model.parameters()), make_optimizer(reference.parameters())
    for step in range(steps):
        x, target = make_batch()
        loss = loss_fn(compiled(x), target)
        ref_loss = loss_fn(reference(x), target)
        assert_close(loss, ref_loss, rtol=1e-5, atol=1e-5, msg=f"loss at step {step}")
        loss.backward()
        ref_loss.backward()
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            assert p.grad is not None, f"no gradient for {name} at step {step}"
            assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=f"grad of {name} at step {step}")
        opt.step()
        ref_opt.step()
        opt.zero_grad()
        ref_opt.zero_grad()
        for (name, a), b in zip(model.state_dict().items(), reference.state_dict().values()):
            assert_close(a, b, rtol=1e-4, atol=1e-5, msg=f"{name} after step {step}")
    # one frame, one graph, no breaks; AOTAutograd built exactly one forward and one backward
    assert bytegraph.stats.frames_compiled == 1
    assert bytegraph.stats.graphs == 1
    assert not bytegraph.stats.graph_breaks
    assert graphs.kinds == ["forward", "backward"]
    return graphs


# -- training ----------------------------------------------------------------------
@pytest.mark.parametrize("partitioner", PARTITIONERS)
def test_mlp_training_matches_eager(partitioner):
    torch.manual_seed(0)
    graphs = train_side_by_side(
        MLP(), lambda: (torch.randn(16, 12), torch.randint(0, 5, (16,))), F.cross_entropy,
        lambda params: torch.optim.SGD(params, lr=0.1), partitioner)
    assert "aten.addmm.default" in aten_targets(graphs.only("forward"))
    assert "aten.mm.default" in aten_targets(graphs.only("backward"))


@pytest.mark.parametrize("partitioner", PARTITIONERS)
def test_cnn_with_batchnorm_training_matches_eager(partitioner):
    torch.manual_seed(0)
    model = SmallCNN()
    graphs = train_side_by_side(
        model, lambda: (torch.randn(4, 3, 8, 8), torch.randint(0, 4, (4,))), F.cross_entropy,
        lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9), partitioner)
    # running statistics were updated in the real buffers, once per step (compared with eager above)
    assert model.bn1.num_batches_tracked.item() == 5
    assert not torch.equal(model.bn2.running_var, torch.ones(8))
    # batch norm was functionalized: the forward computes new statistics and ends by copying them
    # (and num_batches_tracked + 1) into the buffers, which were graph inputs
    fw, bw = graphs.only("forward"), graphs.only("backward")
    assert "aten._native_batch_norm_legit_functional.default" in aten_targets(fw)
    assert sum(n.target is torch.ops.aten.copy_.default for n in fw.graph.nodes) == 6
    assert "aten.native_batch_norm_backward.default" in aten_targets(bw)
    assert "aten.convolution_backward.default" in aten_targets(bw)


@pytest.mark.parametrize("partitioner", PARTITIONERS)
def test_transformer_block_training_matches_eager(partitioner):
    torch.manual_seed(0)
    graphs = train_side_by_side(
        TransformerBlock(), lambda: (torch.randn(2, 8, 16), torch.randn(2, 8, 16)), F.mse_loss,
        lambda params: torch.optim.Adam(params, lr=1e-2), partitioner)
    assert "aten._softmax_backward_data.default" in aten_targets(graphs.only("backward"))


# -- what AOTAutograd's runtime handles ---------------------------------------------------
def test_inference_under_no_grad_builds_no_backward():
    torch.manual_seed(0)
    model = SmallCNN()             # train mode: batch norm still updates its running statistics
    reference = copy.deepcopy(model)
    graphs = AotGraphs()
    compiled = bytegraph.compile(model, backend="aot_eager", options={"graph_hook": graphs})
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 3, 8, 8)
            out = compiled(x)
            assert_close(out, reference(x), rtol=1e-5, atol=1e-5)
            assert not out.requires_grad
    assert graphs.kinds == ["inference"]
    for (name, a), b in zip(model.state_dict().items(), reference.state_dict().values()):
        assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)
    # the buffer updates stay in the inference graph as copy_ into the inputs
    assert "aten.copy_.default" in aten_targets(graphs.only("inference"))


def test_input_mutation_is_applied_to_the_real_tensors():
    graphs = AotGraphs()

    def step(x, w, counter, stats):
        counter.add_(1)
        y = x @ w
        stats.mul_(0.9).add_(y.detach().mean(0), alpha=0.1)
        return y.relu().sum()

    compiled = bytegraph.compile(step, backend="aot_eager", options={"graph_hook": graphs})
    w = torch.randn(3, 4, requires_grad=True)
    counter, stats = torch.zeros((), dtype=torch.long), torch.zeros(4)
    ref_w, ref_counter, ref_stats = w.detach().clone().requires_grad_(), counter.clone(), stats.clone()
    for _ in range(3):
        x = torch.randn(5, 3)
        compiled(x, w, counter, stats).backward()
        step(x, ref_w, ref_counter, ref_stats).backward()
    assert counter.item() == 3
    assert_close(stats, ref_stats)
    assert_close(w.grad, ref_w.grad)
    assert graphs.kinds == ["forward", "backward"]


def test_mutating_an_input_that_requires_grad():
    def f(a, b):
        a.mul_(b)               # a is a non-leaf that requires grad
        return (a * 2).sum()

    graphs = AotGraphs()
    compiled = bytegraph.compile(f, backend="aot_eager", options={"graph_hook": graphs})
    x, y = torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True)
    a = x * 1
    compiled(a, y).backward()
    ref_x, ref_y = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    ref_a = ref_x * 1
    f(ref_a, ref_y).backward()
    assert_close(a, ref_a)
    assert_close(x.grad, ref_x.grad)
    assert_close(y.grad, ref_y.grad)
    assert graphs.kinds == ["forward", "backward"]


def test_a_leaf_made_inside_the_function_breaks_the_graph():
    # `x.detach().requires_grad_()` makes a new autograd leaf: a graph derives its outputs from its
    # inputs, so traced through AOTAutograd the loss would have no grad_fn (backward raised). The graph
    # breaks at the call; the loss is computed by the next graph, from the leaf as an input
    def f(x):
        w = x.detach().requires_grad_()
        loss = (w * w).sum()
        loss.backward()
        return w.grad, w.requires_grad_(False) is w
    x = torch.randn(3, 4)
    for backend in ("aot_eager", "inductor"):
        got = bytegraph.compile(f, backend=backend)(x)
        assert_close(got[0], 2 * x)
        assert got[1] is True
    explained = bytegraph.explain(f)(x)
    assert explained.graph_count == 2
    assert "making a new leaf" in explained.break_reasons[0].reason


@pytest.mark.parametrize("grad", [True, False])
def test_a_leaf_made_inside_the_function_stays_in_the_graph_of_a_backend_running_it_as_recorded(grad):
    # the eager backend runs the graph's ops with torch's autograd: the new leaf is a leaf, as in
    # eager, so only backends through AOTAutograd need the break -- and only with grad on: under
    # no_grad nothing records the leaf, which gets its flag back as it leaves the graph (HF mra)
    def f(q):
        z = torch.zeros_like(q).requires_grad_()
        return z * 2 + q, z
    q = torch.randn(3)
    for backend, graphs in (("eager", 1), ("aot_eager", 2 if grad else 1), ("inductor", 2 if grad else 1)):
        cnt = CompileCounterWithBackend(backend)
        with torch.set_grad_enabled(grad):
            expected, got = f(q), bytegraph.compile(f, backend=cnt)(q)
        for e, g in zip(expected, got):
            assert_close(g, e)
            assert (g.requires_grad, g.is_leaf) == (e.requires_grad, e.is_leaf)
        assert cnt.frame_count == graphs


def test_a_leaf_made_by_a_factory_breaks_the_graph_under_aot():
    # `torch.ones(2, requires_grad=True)` is a new leaf as much as `requires_grad_()` makes one:
    # AOTAutograd returned it as a non-leaf (resetting its flag then raised), and no grad reached it
    def f(x):
        leaf = torch.ones(2, requires_grad=True)
        return leaf, leaf * 2 + x.sum()
    for backend, breaks in (("eager", 0), ("aot_eager", 1), ("inductor", 1)):
        bytegraph.reset()
        x, x2 = torch.arange(4.0, requires_grad=True), torch.arange(4.0, requires_grad=True)
        cnt = CompileCounterWithBackend(backend)
        expected, got = f(x), bytegraph.compile(f, backend=cnt)(x2)
        for e, g in zip(expected, got):
            assert_close(g, e)
            assert (g.requires_grad, g.is_leaf) == (e.requires_grad, e.is_leaf)
        (expected[0].sum() + expected[1].sum()).backward()
        (got[0].sum() + got[1].sum()).backward()
        assert_close((got[0].grad, x2.grad), (expected[0].grad, x.grad))
        assert cnt.frame_count == 1
        assert len(bytegraph.stats.break_records) == breaks


def test_grad_enabled_after_a_leaf_made_under_no_grad_breaks_there():
    # with grad on, autograd records the no_grad leaf's uses: AOTAutograd could not link them to it,
    # so the graph breaks at the `with` (whose manager, entered as Python at the break, the resumed
    # code exits: it used to rebuild a new, never entered one)
    def g(q):
        z = torch.zeros_like(q).requires_grad_()
        with torch.enable_grad():
            w = z * 2
        return w, z
    q = torch.randn(3)
    for backend in ("aot_eager", "inductor"):
        cnt = CompileCounterWithBackend(backend)
        with torch.no_grad():
            got, expected = bytegraph.compile(g, backend=cnt)(q), g(q)
        for e, o in zip(expected, got):
            assert (o.requires_grad, o.is_leaf) == (e.requires_grad, e.is_leaf)
        got[0].sum().backward()
        expected[0].sum().backward()
        assert_close(got[1].grad, expected[1].grad)
        assert cnt.frame_count == 2


def test_exiting_a_grad_mode_manager_entered_before_the_call():
    # a no_grad object entered outside: its exit inside compiled code restores the mode it found
    def f(x, ctx):
        y = x * 2
        ctx.__exit__(None, None, None)
        return y, torch.is_grad_enabled()
    x = torch.randn(3, requires_grad=True)
    for backend in ("eager", "aot_eager"):
        ctx = torch.no_grad()
        ctx.__enter__()
        got = bytegraph.compile(f, backend=backend)(x, ctx)
        assert torch.is_grad_enabled() and got[1] is True and not got[0].requires_grad
        ctx = torch.no_grad()
        ctx.__enter__()
        expected = f(x, ctx)
        assert expected[1] is True and torch.is_grad_enabled()


def test_outputs_aliasing_inputs():
    def f(x, w):
        return x.t(), x[0], w * 2

    graphs = AotGraphs()
    compiled = bytegraph.compile(f, backend="aot_eager", options={"graph_hook": graphs})
    x, w = torch.randn(3, 4), torch.randn(4, requires_grad=True)
    xt, row, w2 = compiled(x, w)
    assert xt.shape == (4, 3) and xt.data_ptr() == x.data_ptr() and xt._base is x
    assert row.data_ptr() == x.data_ptr()
    xt[0, 0] = 100.0            # a real view: writes through to the input
    assert x[0, 0].item() == 100.0
    w2.sum().backward()
    assert_close(w.grad, torch.full((4,), 2.0))
    assert graphs.kinds == ["forward", "backward"]

    # an alias of an input that requires grad carries the gradient back to it
    y = torch.randn(3, 4, requires_grad=True)
    yt, _, _ = compiled(y, w)
    (yt * torch.arange(12.0).view(4, 3)).sum().backward()
    assert_close(y.grad, torch.arange(12.0).view(4, 3).t())


def test_inputs_that_do_not_require_grad():
    def f(x, w, b):
        return torch.sigmoid(x @ w + b).sum()

    graphs = AotGraphs()
    compiled = bytegraph.compile(f, backend="aot_eager", options={"graph_hook": graphs})
    x, w, b = torch.randn(5, 3), torch.randn(3, 2, requires_grad=True), torch.randn(2)
    compiled(x, w, b).backward()
    ref_w = w.detach().clone().requires_grad_()
    f(x, ref_w, b).backward()
    assert x.grad is None and b.grad is None
    assert_close(w.grad, ref_w.grad)
    # the backward computes only the gradient of w
    bw = graphs.only("backward")
    (grads,) = bw.graph.find_nodes(op="output")[0].args
    assert sum(g is not None for g in grads) == 1


# -- partitioners ----------------------------------------------------------------------
def pointwise_heavy(x, w):
    y = torch.sin(x) * w
    y = torch.cos(y) + torch.exp(y)
    y = torch.tanh(y) * torch.sigmoid(y)
    return (y * y).sum()


def test_min_cut_saves_fewer_tensors_than_default():
    x, w = torch.randn(8, 16, requires_grad=True), torch.randn(16, requires_grad=True)
    saved, grads = {}, {}
    for partitioner in PARTITIONERS:
        bytegraph.reset()
        graphs = AotGraphs()
        compiled = bytegraph.compile(pointwise_heavy, backend="aot_eager",
                                     options={"partitioner": partitioner, "graph_hook": graphs})
        x.grad = w.grad = None
        out = compiled(x, w)
        out.backward()
        assert_close(out, pointwise_heavy(x, w))
        grads[partitioner] = (x.grad, w.grad)
        saved[partitioner] = saved_for_backward(graphs.only("forward"), n_user_outputs=1)
    assert_close(grads["min_cut"], grads["default"])
    # min_cut saves only the inputs and recomputes the pointwise chain in the backward
    assert saved["min_cut"] < saved["default"], saved
    assert saved["min_cut"] == 2, saved


def test_min_cut_keeps_random_ops_in_the_forward():
    def f(x):
        y = F.dropout(torch.sin(x), p=0.5, training=True)
        return (y * y.cos()).sum()

    graphs = AotGraphs()
    compiled = bytegraph.compile(f, backend="aot_eager", options={"partitioner": "min_cut", "graph_hook": graphs})
    x = torch.randn(64, requires_grad=True)
    torch.manual_seed(3)
    compiled(x).backward()
    ref_x = x.detach().clone().requires_grad_()
    torch.manual_seed(3)
    f(ref_x).backward()
    assert_close(x.grad, ref_x.grad)
    def random_ops(kind):
        return [n.target for n in graphs.only(kind).graph.nodes
                if isinstance(n.target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in n.target.tags]
    assert random_ops("forward")          # eager's bernoulli noise (backends/eager_random.py)
    assert not random_ops("backward")     # the mask is saved, never drawn again in the backward


@pytest.mark.parametrize("partitioner", PARTITIONERS)
def test_dropout_of_a_value_the_program_drops_still_draws_in_the_forward(partitioner):
    # HF Pegasus-X's last encoder layer computes global-token states nobody reads: the joint graph
    # keeps their dropout (it draws from the generator) with no reader, which torch's default
    # partitioner rejected for a random op with several outputs (native_dropout: output and mask)
    def f(x, w):
        y = x @ w
        unused = torch.native_dropout(y, 0.1, True)[0] + F.dropout(y, p=0.2, training=True)  # noqa: F841
        return y.sum()

    graphs = AotGraphs()
    compiled = bytegraph.compile(f, backend="aot_eager", options={"partitioner": partitioner, "graph_hook": graphs})
    x, w = torch.randn(4, 4), torch.randn(4, 4, requires_grad=True)
    torch.manual_seed(0)
    out = compiled(x, w)
    out.backward()
    after = torch.rand(3)
    ref_w = w.detach().clone().requires_grad_()
    torch.manual_seed(0)
    ref = f(x, ref_w)
    ref.backward()
    assert_close(out, ref)
    assert_close(w.grad, ref_w.grad)
    assert torch.equal(after, torch.rand(3))    # the dropout drew its numbers as eagerly
    assert graphs.kinds == ["forward", "backward"]
    assert "aten.native_dropout.default" in aten_targets(graphs.only("forward"))


def test_min_cut_never_recomputes_from_an_input_mutated_in_the_graph():
    def f(x, buf):
        z = buf.float().exp()    # saving the half-precision buf would be cheaper than saving z...
        buf.add_(1)              # ...but buf holds the new value by the time the backward runs
        return (x * z).sum()

    graphs = AotGraphs()
    compiled = bytegraph.compile(f, backend="aot_eager", options={"partitioner": "min_cut", "graph_hook": graphs})
    x, buf = torch.randn(3, requires_grad=True), torch.ones(3, dtype=torch.half)
    compiled(x, buf).backward()
    assert_close(x.grad, torch.full((3,), 1.0).exp())
    assert_close(buf, torch.full((3,), 2.0, dtype=torch.half))
    assert "aten.copy_.default" in aten_targets(graphs.only("forward"))   # the mutation is in the graph


def test_unknown_partitioner_and_options_are_errors():
    with pytest.raises(TypeError, match="does not accept options"):
        bytegraph.compile(lambda x: x + 1, backend="aot_eager", options={"no_such_option": 1})
    compiled = bytegraph.compile(lambda x: x + 1, backend="aot_eager", options={"partitioner": "nope"})
    with pytest.raises(Exception, match="unknown partitioner 'nope'"):
        compiled(torch.randn(2, requires_grad=True))


def test_aot_graphs_log():
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("bytegraph.aot_graphs")
    logger.addHandler(handler)
    try:
        with bytegraph.config.patch(logs="aot_graphs"):
            compiled = bytegraph.compile(lambda x: torch.sin(x).sum(), backend="aot_eager")
            compiled(torch.randn(3, requires_grad=True)).backward()
    finally:
        logger.removeHandler(handler)
    text = "\n".join(r.getMessage() for r in records)
    assert "aot forward graph" in text and "aot backward graph" in text
    assert "torch.ops.aten.sin.default" in text and "torch.ops.aten.cos.default" in text


@pytest.mark.parametrize("model_cls, feature_shape, partitioner",
                         [(MLP, (12,), "min_cut"), (SmallCNN, (3, 8, 8), "default")])
def test_varying_batch_size_under_dynamic_shapes_compiles_once(model_cls, feature_shape, partitioner):
    torch.manual_seed(0)
    model = model_cls()
    reference = copy.deepcopy(model)
    graphs = AotGraphs()
    with bytegraph.config.patch(dynamic_shapes=True):
        compiled = bytegraph.compile(model, backend="aot_eager",
                                     options={"partitioner": partitioner, "graph_hook": graphs})
        for batch in (4, 7, 2):    # (3 would equal the CNN's channel count: duck sizing ties them)
            x = torch.randn(batch, *feature_shape)
            out, ref_out = compiled(x), reference(x)
            assert_close(out, ref_out, rtol=1e-5, atol=1e-5)
            out.pow(2).mean().backward()
            ref_out.pow(2).mean().backward()
            for (name, p), q in zip(model.named_parameters(), reference.parameters()):
                assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=f"grad of {name}, batch {batch}")
    assert bytegraph.stats.frames_compiled == 1
    assert graphs.kinds == ["forward", "backward"]
    # the ATen graphs are symbolic: the batch size is a SymInt input of the forward
    fw = graphs.only("forward")
    assert any(isinstance(p.meta.get("val"), torch.SymInt) for p in fw.graph.find_nodes(op="placeholder"))


def test_transformer_block_with_a_dynamic_batch_dim_compiles_once():
    # only the batch dim is symbolic (mark_dynamic): with BYTEGRAPH_DYNAMIC_SHAPES=1 the frontend
    # currently graph-breaks on `q.view(B, T, heads, C // heads)` when C is symbolic too
    torch.manual_seed(0)
    model = TransformerBlock()
    reference = copy.deepcopy(model)
    graphs = AotGraphs()
    compiled = bytegraph.compile(model, backend="aot_eager", options={"partitioner": "min_cut", "graph_hook": graphs})
    for batch in (2, 3, 5):
        x = torch.randn(batch, 8, 16)
        bytegraph.mark_dynamic(x, 0)
        out, ref_out = compiled(x), reference(x)
        assert_close(out, ref_out, rtol=1e-5, atol=1e-5)
        out.pow(2).mean().backward()
        ref_out.pow(2).mean().backward()
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=f"grad of {name}, batch {batch}")
    assert bytegraph.stats.frames_compiled == 1
    assert not bytegraph.stats.graph_breaks
    assert graphs.kinds == ["forward", "backward"]


def test_value_held_only_by_a_dead_closure_cell_gets_no_gradient():
    # an inlined callee's cell keeps `ln` while tracing; at the end nothing reads it, so it is no graph
    # output (as an unused output its backward would give `w` a zero gradient where eager gives None)
    from bytegraph.testing import CompileCounterWithBackend

    def inner(x, w):
        ln = F.layer_norm(x * 2, (4,), w)

        def last():
            return ln
        return x.sum() + 0 * len(last().shape)

    def f(x, w):
        return inner(x, w) * 2

    x, w = torch.randn(3, 4, requires_grad=True), torch.ones(4, requires_grad=True)
    f(x, w).backward()
    assert w.grad is None
    expected_x = x.grad.clone()
    x.grad = None
    bytegraph.reset()
    cnt = CompileCounterWithBackend("aot_eager")
    bytegraph.compile(f, backend=cnt)(x, w).backward()
    assert cnt.frame_count == 1 and w.grad is None
    assert_close(x.grad, expected_x)
    outputs = next(n for n in cnt.graphs[0].graph.nodes if n.op == "output").args[0]
    assert len(outputs) == 1


def test_graphs_with_sparse_values_run_as_traced():
    # AOTAutograd has no sparse support: such a graph runs as traced, still one graph
    from bytegraph.testing import CompileCounterWithBackend

    def fn(x):
        return (x * 2).to_sparse().to_dense() + 1

    cnt = CompileCounterWithBackend("aot_eager")
    x = torch.tensor([[0.0, 1.0], [2.0, 0.0]], requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    got, want = bytegraph.compile(fn, backend=cnt)(x), fn(x_ref)
    got.sum().backward()
    want.sum().backward()
    assert_close(got, want)
    assert_close(x.grad, x_ref.grad)
    assert cnt.frame_count == 1


def test_inputs_over_one_memory_with_symbolic_sizes_run_as_traced():
    # after a break the graph takes `x` and `t = x.detach()` (one memory) and writes both; with dynamic
    # sizes AOTAutograd's merge of the aliased inputs failed inside torch (symbolic storage size)
    def f(x):
        t = x.detach()
        bytegraph.graph_break()
        t.add_(1)
        x.clamp_(min=0)
        return x * 2, t.sum()
    cnt = CompileCounterWithBackend("aot_eager")
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    for n in (3, 5):
        x = torch.randn(n, 4)
        ref_x = x.clone()
        got, ref = opt(x), f(ref_x)
        assert_close(got, ref)
        assert_close(x, ref_x)
    assert cnt.frame_count == 2   # before the break, and after it (one graph serves both sizes)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_input_saved_for_backward_then_written_in_place_runs_as_traced(backend):
    # eager's forward runs (only a backward through `lin` would fail on x's version); AOTAutograd's
    # joint trace refuses: the graph runs as traced, with eager's autograd (fuzzer seed 63366)
    lin = nn.Linear(4, 4)

    def f(x):
        h = lin(x)
        x[x > 0] = 0
        return h, x
    x = torch.randn(3, 4)
    ref_x = x.clone()
    cnt = CompileCounterWithBackend(backend)
    got, want = bytegraph.compile(f, backend=cnt)(x), f(ref_x)
    assert_close(got[0], want[0])
    assert_close(x, ref_x)
    assert got[1] is x and got[0].grad_fn is not None
    assert cnt.frame_count == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        got[0].sum().backward()                      # as eager's would


def test_backward_view_of_a_gradient_whose_fake_strides_disagree_with_the_real_ones():
    # HF MiniCPM-V 4.6: softplus_backward's fake kernel answers contiguous where the real kernel keeps
    # the gradient's transposed layout, so the backward of `p.view(...)` (a reshape in eager's
    # autograd) was traced as a view, which the real strides refuse at run time
    def f(p, w):
        y = F.softplus(p.view(2, 8, 32))
        return (y.transpose(1, 2) * w).sum()

    graphs = AotGraphs()
    cnt = CompileCounterWithBackend("aot_eager")
    cnt.backend = functools.partial(cnt.backend, graph_hook=graphs)
    p, w = torch.randn(16, 32, requires_grad=True), torch.randn(2, 32, 8)
    ref_p = p.detach().clone().requires_grad_()
    out = bytegraph.compile(f, backend=cnt)(p, w)
    out.backward()
    ref = f(ref_p, w)
    ref.backward()
    assert_close(out, ref)
    assert_close(p.grad, ref_p.grad)
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records
    assert graphs.kinds == ["forward", "backward"]
    assert "aten.softplus_backward.default" in aten_targets(graphs.only("backward"))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("noise", [
    lambda w: w + torch.randn(3),                               # a random op reading no input
    lambda w: w + torch.empty(3).normal_(),
    lambda w: F.dropout(w, 0.5) + torch.rand(3),
], ids=["randn", "normal_", "dropout_and_rand"])
def test_backward_draws_no_random_numbers_the_forward_drew(backend, noise):
    # torch's default partitioner copies such an op into the backward graph too, dead but kept (it draws):
    # each backward then moved the generator, and the numbers drawn after it differed from eager's
    def step(fn):
        torch.manual_seed(0)
        w = torch.randn(3, requires_grad=True)
        y = fn(w)
        torch.manual_seed(1)
        y.sum().backward()
        return y, w.grad, torch.rand(4)
    cnt = CompileCounterWithBackend(backend)
    want, got = step(noise), step(bytegraph.compile(noise, backend=cnt, fullgraph=True))
    for g, e in zip(got, want):
        assert_close(g, e)
    assert cnt.frame_count == 1
