"""A loop over a list, a ModuleList, Sequential or ModuleDict that breaks the graph in its body: the
resumed loop walks the live container, as eager's iterator does. A change of the container made in the
rest of the loop (in a later graph, or by the code run at the break) is seen by the next step: an item
replaced is the one called, an item appended is reached, a dict's size change raises eager's
RuntimeError. The resume function still serves every position (no compile per item)."""
from __future__ import annotations

import torch
from torch import nn

import bytegraph
from bytegraph.testing import CompileCounter

from helpers import assert_same, outcome


def opaque(x):
    """Not traceable: a graph break at each call (runs eagerly)."""
    return x


opaque = bytegraph.disable(opaque)


def replace_in_eager(layers):
    layers[2] = nn.Identity()


replace_in_eager = bytegraph.disable(replace_in_eager)


class Stack(nn.Module):
    def __init__(self, n=4, body=None):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(n)])
        self.body = body

    def forward(self, x):
        return self.body(self, x)


def run_both(body, n=4, calls=1):
    """The outcome of `calls` calls on a fresh model eagerly and compiled, the compiled model's state
    after them, and the counter."""
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(1))
    eager_model, compiled_model = Stack(n, body), Stack(n, body)
    want = [outcome(eager_model, x) for _ in range(calls)]
    bytegraph.reset()
    cnt = CompileCounter()
    opt = bytegraph.compile(compiled_model, backend=cnt)
    got = [outcome(opt, x) for _ in range(calls)]
    assert_same(got, want)
    assert [type(m) for m in compiled_model.layers] == [type(m) for m in eager_model.layers]
    return cnt


def loop_replacing_later_layer(self, x):
    for i, layer in enumerate(self.layers):
        x = layer(opaque(x))
        if i == 0:
            self.layers[2] = nn.Identity()
    return x


def loop_growing_container(self, x):
    for layer in self.layers:
        x = opaque(layer(x))
        if len(self.layers) < 6:
            self.layers.append(nn.Identity())
    return x


def loop_replacing_in_traced_body(self, x):
    for layer in self.layers:
        x = opaque(layer(x))
        if isinstance(layer, nn.Linear):
            self.layers[3] = nn.Identity()
    return x


def loop_changed_by_code_run_at_break(self, x):
    for layer in self.layers:
        x = layer(x)
        if isinstance(self.layers[2], nn.Linear):
            replace_in_eager(self.layers)
    return x


def plain_loop(self, x):
    for layer in self.layers:
        x = opaque(layer(x)).relu()
    return x


def test_item_replaced_after_break_is_the_one_called():
    cnt = run_both(loop_replacing_later_layer)
    assert cnt.frame_count >= 2


def test_container_grown_after_break_raises_as_eager():
    cnt = run_both(loop_growing_container)
    assert cnt.frame_count >= 1


def test_item_replaced_in_resumed_trace_is_seen():
    cnt = run_both(loop_replacing_in_traced_body)
    assert cnt.frame_count >= 2


def test_item_replaced_by_code_run_at_the_break_is_seen():
    cnt = run_both(loop_changed_by_code_run_at_break)
    assert cnt.frame_count >= 1


def test_resume_function_serves_every_layer():
    # the frame's graph, the resume functions' graphs for a layer with more to come and for the last
    # one: as many for 3 layers as for 8 (the items are read from the live table, not guarded by count)
    counts = [run_both(plain_loop, n=n, calls=2).frame_count for n in (3, 8)]
    assert counts == [4, 4], counts


def test_iterator_held_by_the_program_travels_as_itself():
    def body(self, x):
        it = iter(self.layers)
        x = next(it)(x)
        x = opaque(x)
        for layer in it:
            x = layer(x)
        return x, next(it, "done")
    cnt = run_both(body)
    # the first layer; then each step of `it` runs natively (the trace does not step a dict's value
    # iterator) and one resume function's graph serves each later layer
    assert cnt.frame_count == 3


def test_module_dict_keys_loop_with_break():
    class Blocks(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.blocks = nn.ModuleDict({"a": nn.Linear(3, 3), "b": nn.Linear(3, 3), "c": nn.Linear(3, 3)})

        def forward(self, x):
            for key in self.blocks:
                x = opaque(self.blocks[key](x))
                if key == "a":
                    self.blocks["c"] = nn.Identity()
            return x
    x = torch.randn(2, 3)
    want = Blocks()(x)
    bytegraph.reset()
    cnt = CompileCounter()
    model = Blocks()
    assert_same(bytegraph.compile(model, backend=cnt)(x), want)
    assert type(model.blocks["c"]) is nn.Identity
    assert cnt.frame_count >= 2


def loop_reversed_replacing_first_layer(self, x):
    for layer in reversed(self.layers):
        x = opaque(layer(x))
        self.layers[0] = nn.Identity()
    return x


def replace_first_in_eager(layers):
    layers[0] = nn.Identity()


replace_first_in_eager = bytegraph.disable(replace_first_in_eager)


def loop_reversed_changed_by_code_run_at_break(self, x):
    for layer in reversed(self.layers):
        x = layer(x)
        replace_first_in_eager(self.layers)
    return x


def loop_reversed_shrinking(self, x):
    seen = []
    for layer in reversed(self.layers):
        x = opaque(layer(x))
        seen.append(type(layer).__name__)
        if len(self.layers) == 4:
            del self.layers[0]
            del self.layers[0]
    return x, seen


def test_reversed_loop_reads_the_live_container_after_break():
    # CPython's reversed takes container[i] at each step: the layer replaced after the break is the one
    # called, and a container shrunk under the index ends the loop early
    for body in (loop_reversed_replacing_first_layer, loop_reversed_changed_by_code_run_at_break,
                 loop_reversed_shrinking):
        cnt = run_both(body)
        assert 1 <= cnt.frame_count <= 3, (body.__name__, cnt.frame_count)


def test_reversed_loop_graph_count_does_not_grow_with_layers():
    def body(self, x):
        for layer in reversed(self.layers):
            x = opaque(layer(x)).relu()
        return x
    counts = [run_both(body, n=n, calls=2).frame_count for n in (3, 8)]
    assert counts[0] == counts[1] <= 3, counts


class Params(nn.Module):
    def __init__(self, body, as_dict):
        super().__init__()
        torch.manual_seed(0)
        ps = [nn.Parameter(torch.randn(3)) for _ in range(4)]
        self.ps = nn.ParameterDict({f"p{i}": p for i, p in enumerate(ps)}) if as_dict else nn.ParameterList(ps)
        self.body = body

    def forward(self, x):
        return self.body(self, x)


def run_params(body, as_dict, calls=1):
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(1))
    eager_model, compiled_model = Params(body, as_dict), Params(body, as_dict)
    want = [outcome(eager_model, x) for _ in range(calls)]
    bytegraph.reset()
    cnt = CompileCounter()
    opt = bytegraph.compile(compiled_model, backend=cnt)
    assert_same([outcome(opt, x) for _ in range(calls)], want)
    assert_same(dict(compiled_model.named_parameters()), dict(eager_model.named_parameters()))
    return cnt


def param_list_replacing_later(self, x):
    for p in self.ps:
        x = opaque(x * p)
        self.ps[3] = nn.Parameter(torch.zeros(3))
    return x


def param_dict_growing(self, x):
    for k in self.ps:
        x = x * self.ps[k]
        if len(self.ps) < 6:
            self.ps[f"q{len(self.ps)}"] = nn.Parameter(torch.zeros(3))
    return x


def param_dict_growing_after_break(self, x):
    for k in self.ps:
        x = opaque(x * self.ps[k])
        if len(self.ps) < 6:
            self.ps[f"q{len(self.ps)}"] = nn.Parameter(torch.zeros(3))
    return x


def test_parameter_containers_iterate_as_torch_does():
    # ParameterList's __iter__ reads self[i] at each step, ParameterDict's walks its `_keys` dict. (A
    # ParameterList's generator cannot cross a break: that loop runs eagerly, no graph)
    counts = [run_params(param_list_replacing_later, as_dict=False).frame_count,
              run_params(param_dict_growing, as_dict=True).frame_count,
              run_params(param_dict_growing_after_break, as_dict=True).frame_count]
    assert counts == [0, 1, 2], counts


def test_parameter_containers_plain_loop_is_one_graph():
    def body(self, x):
        for p in (self.ps.values() if isinstance(self.ps, nn.ParameterDict) else self.ps):
            x = x * p + 1
        return x
    for as_dict in (False, True):
        cnt = run_params(body, as_dict, calls=2)
        assert (cnt.frame_count, cnt.op_count) == (1, 8), (as_dict, cnt.frame_count, cnt.op_count)


# -- lists ---------------------------------------------------------------------------------------


def run_list(fn, make_args, calls=2):
    """`fn` eagerly and compiled on fresh arguments, `calls` times: outcomes and arguments after."""
    want = [(outcome(fn, *args), args) for args in (make_args() for _ in range(calls))]
    bytegraph.reset()
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    got = [(outcome(opt, *args), args) for args in (make_args() for _ in range(calls))]
    assert_same(got, want)
    return cnt


def scale_by_each(x, ws):
    for w in ws:
        x = opaque(x * w)
    return x


def test_list_loop_with_a_break_serves_every_position():
    counts = [run_list(scale_by_each, lambda n=n: (torch.ones(2), [float(i + 1) for i in range(n)])).frame_count
              for n in (3, 12)]
    assert counts == [3, 3], counts     # the frame, a resume function for an item with more to come, the last


def appending_to_the_walked_list(x, ws):
    for w in ws:
        x = opaque(x * w)
        if len(ws) < 5:
            ws.append(w + 10)
    return x


def inserting_and_replacing_ahead(x, ws):
    for i, w in enumerate(ws):
        x = opaque(x + w)
        if w == 1.0 and ws[0] != 7.0:
            ws.insert(0, 7.0)       # the iterator's index now points one item back: 1.0 comes again
            ws[-1] = 100.0
    return x


def walking_backwards_while_popping(x, ws):
    for w in reversed(ws):
        x = opaque(x - w)
        if len(ws) > 2:
            ws.pop()
    return x


def appending_to_another_list(x, ws, out):
    for w in ws:
        x = opaque(x * w)
        if len(out) < 6:
            out.append(w)
    return x, out


def test_list_changed_by_the_resumed_trace_is_walked_live():
    make = lambda: (torch.ones(2), [1.0, 2.0, 3.0])      # noqa: E731
    assert run_list(appending_to_the_walked_list, make).frame_count >= 2
    assert run_list(inserting_and_replacing_ahead, make).frame_count >= 1    # (enumerate: lazy, eager after)
    assert run_list(walking_backwards_while_popping, make).frame_count >= 2


def test_other_list_changed_in_the_loop_stays_another_object():
    def tensors(*values):
        return [torch.tensor(v) for v in values]
    cnt = run_list(appending_to_another_list, lambda: (torch.ones(2), tensors(1., 2., 3.), tensors(9., 9., 9.)))
    assert cnt.frame_count == 3
    # then one list of the same length as both arguments: the entries traced with two lists (which read
    # the walked list's items from a copy) must not serve it
    opt = bytegraph.compile(appending_to_another_list, backend=cnt)
    eager_ws, compiled_ws = tensors(1., 2., 3.), tensors(1., 2., 3.)
    assert_same(opt(torch.ones(2), compiled_ws, compiled_ws),
                appending_to_another_list(torch.ones(2), eager_ws, eager_ws))
    assert_same(compiled_ws, eager_ws)


@bytegraph.disable
def pop_two(ws, x):
    del ws[-2:]
    return x


def walking_backwards_while_eager_code_shrinks(x, ws):
    for w in reversed(ws):
        x = pop_two(ws, x * w)      # the list shrinks below the iterator's index: eager's loop ends
    return x


def test_reversed_list_shrunk_by_code_run_at_the_break_ends_as_eager():
    cnt = run_list(walking_backwards_while_eager_code_shrinks,
                   lambda: (torch.ones(2), [torch.tensor(float(i + 1)) for i in range(5)]))
    assert cnt.frame_count >= 1
