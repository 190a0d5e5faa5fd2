"""Graph breaks compared with torch.compile: for each function with graph breaks, bytegraph's result
equals eager, bytegraph makes no more graphs than torch.compile (its `CompileCounter`, measured here,
is the reference), and repeated calls compile nothing new (no recompile storm, every resume
function compiled a fixed number of times).

Where torch.compile gives up on the whole frame — a graph break inside a `for` loop, a `try` block or
a user-defined context manager makes it run the frame eagerly — bytegraph still compiles around the
break; those functions are marked `torch_skips_frame`, and when torch indeed captured nothing the
test checks, live, that bytegraph captured more ops (so the mark cannot hide a regression; if torch
starts capturing them, the graph-count comparison applies again).

Every function here gets the same arguments on every call; Python floats that change from call to
call and cross a break are covered in test_graph_breaks.py and test_dynamic.py.
"""
from __future__ import annotations

import collections
import contextlib
import io
import logging
import os
import random
import time

import bytegraph
import pytest
import torch
import torch._dynamo
from bytegraph import _C
from bytegraph.frontend import resume
from bytegraph.testing import CompileCounter
from helpers import assert_same
from torch._dynamo.testing import CompileCounter as TorchCompileCounter

_logger = logging.getLogger("bytegraph_parity_test")
_SINK = []


@torch._dynamo.disable
@bytegraph.disable
def opaque(t):
    """A call neither compiler traces (an eager-only helper)."""
    _SINK.append(1)
    return t * 3


@torch._dynamo.disable
@bytegraph.disable
def opaque_scale():
    return 0.5


# -- the functions ---------------------------------------------------------------------------------
def print_between(x):
    a = x.sin() * 2
    print("between", a.shape)
    return (a + x).cos()


def disabled_call(x, y):
    a = x + y
    b = opaque(a)
    return (b - y).relu()


def item_in_python_math(x):
    s = x.sum().item()
    return x * (s + 1.0)


def tolist_then_index(x):
    values = x.tolist()
    return x * values[0], len(values)


def data_dependent_if(x):
    y = x.cos()
    if y.sum() > 0:
        y = y + 1
    else:
        y = y - 1
    return y * 2


def ternary_on_tensor(x):
    return x.sin() if x.mean() > 0 else x.cos()


def assert_on_tensor(x):
    y = x.abs() + 1
    assert y.min() > 0, "positive"
    return y.log()


def mid_expression_live_stack(x):
    return x.cos() + opaque(x * 3) * x.sin()


def inside_call_arguments(x):
    return torch.stack([x.sin(), opaque(x.cos()), x.tan()])


def keyword_argument_break(x):
    return torch.clamp(x * 2, min=-opaque_scale(), max=opaque_scale())


def _inner_helper(t):
    t = t.sin()
    print("inner helper")
    return t.cos()


def _outer_helper(t):
    return _inner_helper(t * 2) + 1


def inlined_callee_break(x):
    return _inner_helper(x + 1) * 3


def nested_inlined_break(x):
    return _outer_helper(x) - x


def c_functions(x):
    y = x * 2
    time.sleep(0)             # a C function: not traceable, returns None
    pid = os.getpid()         # a C function returning the same int on every call
    return y + 1, pid > 0


def python_random(x):
    random.seed(0)
    a = random.random()
    return x * a + 1


def logging_call(x):
    y = x + 1
    _logger.info("value %s", y.shape)
    return y * 2


def break_in_no_grad(x):
    y = x * 2
    with torch.no_grad():
        z = y + 1
        print("no grad", torch.is_grad_enabled())
        w = z * 3
    return w + y, w.requires_grad, torch.is_grad_enabled()


def break_in_nested_grad_modes(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
            print("enable grad", torch.is_grad_enabled())
            c = b + a
        d = c * 2
    return d, c.requires_grad, d.requires_grad


def break_in_set_grad_enabled(x):
    with torch.set_grad_enabled(False):
        y = x.exp()
        z = opaque(y)
        w = z + y
    return w, w.requires_grad


def closure_made_in_frame(x):
    scale = x.mean()

    def apply(t):
        return t * scale
    print("closure")
    return apply(x) + 1


def side_effects_before_break(x, items):
    items.append(x.sum())
    total = x.cos() + 1
    print("items", len(items))
    items.append(total.sum())
    return total * 2


_counter = {"n": 0}


def global_mutation_before_break(x):
    _counter["n"] += 1
    y = x + _counter["n"]
    print("count")
    return y * 2


def two_breaks_in_sequence(x):
    a = x + 1
    print("first")
    b = a * 2
    print("second")
    return b - 1


def numpy_roundtrip(x):
    a = x.numpy().sum()
    return x * float(a)


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x).relu()
        print("block")
        return self.lin(h).sigmoid()


_block = _Block()


def module_forward_with_break(x):
    return _block(x) * 2


class _Recorder:
    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, *exc):
        self.events.append("exit")
        return False


def break_in_user_context_manager(x):
    rec = _Recorder()
    with rec:
        y = x * 2
        print("in user context")
        z = y + 1
    return z, rec.events


def break_in_for_loop(x):
    acc = x
    for i in range(3):
        acc = acc * 2
        print("iteration", i)
        acc = acc + i
    return acc.sum()


def break_in_while_on_tensor(x):
    while x.sum() > 0:
        x = x - 1
    return x


def break_in_try_finally(x):
    y = x + 1
    try:
        print("in try")
        y = y * 3
    finally:
        y = y * 2
    return y


def break_in_try_except(x):
    y = x.sin()
    try:
        y = y * 2
        z = opaque(y)
    except ValueError:
        z = y
    return z + 1


# (function, make args, torch skips the frame?)
CASES = [
    (print_between, lambda: (torch.randn(4),), False),
    (disabled_call, lambda: (torch.randn(3), torch.randn(3)), False),
    (item_in_python_math, lambda: (torch.randn(4),), False),
    (tolist_then_index, lambda: (torch.randn(3),), False),
    (data_dependent_if, lambda: (torch.randn(5),), False),
    (ternary_on_tensor, lambda: (torch.randn(5),), False),
    (assert_on_tensor, lambda: (torch.randn(5),), False),
    (mid_expression_live_stack, lambda: (torch.randn(4),), False),
    (inside_call_arguments, lambda: (torch.randn(4),), False),
    (keyword_argument_break, lambda: (torch.randn(4),), False),
    (inlined_callee_break, lambda: (torch.randn(4),), False),
    (nested_inlined_break, lambda: (torch.randn(4),), False),
    (c_functions, lambda: (torch.randn(4),), False),
    (python_random, lambda: (torch.randn(4),), False),
    (logging_call, lambda: (torch.randn(4),), False),
    (break_in_no_grad, lambda: (torch.randn(4, requires_grad=True),), False),
    (break_in_nested_grad_modes, lambda: (torch.randn(4, requires_grad=True),), False),
    (break_in_set_grad_enabled, lambda: (torch.randn(4, requires_grad=True),), False),
    (closure_made_in_frame, lambda: (torch.randn(4),), False),
    (side_effects_before_break, lambda: (torch.randn(4), []), False),
    (global_mutation_before_break, lambda: (torch.randn(4),), False),
    (two_breaks_in_sequence, lambda: (torch.randn(4),), False),
    (numpy_roundtrip, lambda: (torch.randn(4),), False),
    (module_forward_with_break, lambda: (torch.randn(2, 4),), False),
    (break_in_user_context_manager, lambda: (torch.randn(4),), True),
    (break_in_for_loop, lambda: (torch.randn(4),), True),
    (break_in_while_on_tensor, lambda: (torch.rand(3) + 2,), False),
    (break_in_try_finally, lambda: (torch.randn(4),), True),
    (break_in_try_except, lambda: (torch.randn(4),), True),
]


def _fresh(args):
    return tuple(list(a) if isinstance(a, list) else a for a in args)


def _quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)


def _run(fn, args):
    """One call with fresh copies of the arguments and of the global state the functions touch."""
    _counter["n"] = 0
    return _quiet(fn, *_fresh(args))


def _torch_counts(fn, args):
    torch._dynamo.reset()
    cnt = TorchCompileCounter()
    opt = torch.compile(fn, backend=cnt)
    _run(opt, args)
    torch._dynamo.reset()
    return cnt.frame_count, cnt.op_count


def _resume_cache_sizes(fn):
    codes = [fn.__code__] + [c for code in _codes_reached(fn) for c in resume.resume_codes_of(code)]
    sizes = collections.Counter()
    for code in codes:
        cache = _C.get_cache(code)
        sizes[code.co_name + f"@{id(code)}"] = len(cache) if cache else 0
    return sizes


def _codes_reached(fn):
    """The user code objects whose resume functions matter: the function and the helpers it calls."""
    return [fn.__code__, _inner_helper.__code__, _outer_helper.__code__, _Block.forward.__code__]


@pytest.mark.parametrize("fn, make_args, torch_skips_frame", CASES, ids=[c[0].__name__ for c in CASES])
def test_parity_with_torch_compile(fn, make_args, torch_skips_frame):
    torch.manual_seed(0)
    args = make_args()
    torch_graphs, torch_ops = _torch_counts(fn, args)
    print(f"{fn.__name__}: torch.compile graphs={torch_graphs} ops={torch_ops}")

    bytegraph.reset()
    expected = _run(fn, args)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    assert_same(_run(opt, args), expected)
    graphs_first_call = cnt.frame_count
    assert graphs_first_call > 0, "nothing was captured"

    # repeated calls: same results, no new graphs, no resume function compiled again
    assert_same(_run(opt, args), expected)
    sizes = _resume_cache_sizes(fn)
    for _ in range(3):
        assert_same(_run(opt, args), expected)
    assert cnt.frame_count == graphs_first_call
    assert _resume_cache_sizes(fn) == sizes
    print(f"{fn.__name__}: bytegraph graphs={graphs_first_call} ops={cnt.op_count} resume caches={dict(sizes)}")

    if torch_skips_frame and torch_graphs == 0:
        # torch.compile ran the whole frame eagerly; bytegraph compiled around the break
        assert cnt.op_count > torch_ops
    else:
        assert graphs_first_call <= torch_graphs, \
            f"bytegraph made {graphs_first_call} graphs, torch.compile {torch_graphs}"
