"""Probes restating behaviours torch's dynamo repro tests rely on about side effects around graph breaks and
exceptions: mutations of lists, dicts, objects, globals, closure cells and input tensors made before a
break (or before an exception leaves the compiled code) are all visible after it, in order, and
reads after the break see them."""
import os

import torch

from . import probe
from .probes_misc import StateEq


def _brk():
    """Something neither compiler traces (a graph break)."""
    os.getpid()


def _x():
    return (torch.randn(3),)


class Obj(StateEq):
    def __init__(self):
        self.n = 0
        self.items = []


G = {"count": 0, "log": []}


def _reset_g():
    G["count"] = 0
    G["log"] = []
    return _x()


@probe(lambda: (torch.randn(3), []))
def list_append_across_break(x, lst):
    lst.append(x * 2)
    _brk()
    lst.append(lst[0] + 1)
    return len(lst), lst[-1]


@probe(lambda: (Obj(), torch.randn(3)))
def object_attr_set_before_break_read_after(o, x):
    o.n = 5
    o.items.append(1)
    _brk()
    return x * o.n, len(o.items)


@probe(_reset_g, calls=2)
def global_dict_mutated_across_break(x):
    G["count"] += 1
    G["log"].append("a")
    _brk()
    G["log"].append("b")
    return x * G["count"], list(G["log"])


_N = [0]


def _reset_n():
    _N[0] = 0
    return _x()


@probe(_reset_n, calls=2)
def global_list_then_raise(x):
    _N[0] += 1
    raise ValueError(f"boom {_N[0]}")


@probe(lambda: (torch.zeros(3),), calls=2)
def input_inplace_then_raise(x):
    x.add_(1)
    if x.sum() > -100:
        raise RuntimeError("after the write")
    return x


@probe(lambda: (torch.zeros(3), []), calls=2)
def mutations_then_exception_caught_inside(x, lst):
    try:
        lst.append(1)
        x.add_(2)
        raise KeyError("k")
    except KeyError:
        lst.append(2)
    return x.clone(), list(lst)


@probe(lambda: (Obj(), torch.randn(3)), calls=2)
def attr_writes_then_raise_escape(o, x):
    o.n += 1
    o.items.append(o.n)
    raise IndexError(o.n)


@probe(_x)
def nonlocal_updated_across_break(x):
    n = 0

    def bump():
        nonlocal n
        n += 1
    bump()
    _brk()
    bump()
    return x * n


@probe(_x)
def closure_cell_read_after_break_in_inner(x):
    acc = []

    def inner(t):
        acc.append(t.sum())
        _brk()
        acc.append(t.mean())
        return t * len(acc)
    return inner(x), len(acc)


@probe(lambda: (torch.zeros(4),))
def loop_with_break_mutating_input(x):
    for i in range(3):
        x[i] += i + 1
        _brk()
    return x.clone()


@probe(lambda: (torch.randn(3), {}))
def dict_arg_filled_across_breaks(x, d):
    for i in range(3):
        d[f"k{i}"] = x * i
        _brk()
    return sorted(d), d["k2"]


@probe(lambda: (torch.randn(3, requires_grad=True),))
def no_grad_block_across_break(x):
    with torch.no_grad():
        a = x * 2
        _brk()
        b = x * 3
    c = x * 4
    return a.requires_grad, b.requires_grad, c.requires_grad, torch.is_grad_enabled()


@probe(lambda: (torch.randn(3), []))
def try_finally_across_break(x, log):
    try:
        log.append("try")
        _brk()
        y = x + 1
    finally:
        log.append("finally")
    return y, list(log)


@probe(_x)
def generator_consumed_across_break(x):
    def gen():
        for i in range(4):
            yield x * i
    g = gen()
    a = next(g)
    _brk()
    b = next(g)
    rest = list(g)
    return a, b, len(rest)


@probe(lambda: (torch.randn(3), [1, 2, 3]))
def list_iteration_with_removal_across_break(x, lst):
    out = x
    for v in list(lst):
        lst.remove(v)
        _brk()
        out = out + v + len(lst)
    return out, lst


@probe(lambda: (Obj(), torch.randn(3)), calls=3)
def object_state_accumulates_across_calls_with_break(o, x):
    o.n += 1
    _brk()
    o.items.append(o.n * 10)
    return x * o.n, list(o.items)


@probe(lambda: (torch.randn(3),), calls=2)
def tensor_attr_written_then_break(x):
    x.tag = getattr(x, "tag", 0) + 1
    _brk()
    return x * x.tag


@probe(lambda: (torch.randn(4),))
def view_mutated_after_break(x):
    v = x[:2]
    _brk()
    v.mul_(0)
    return x.clone(), v.clone()


@probe(lambda: (torch.randn(4),))
def alias_created_before_break_mutated_after(x):
    y = x.view(2, 2)
    z = y.t()
    _brk()
    z[0, 0] = 100.0
    return x.clone(), y.clone()


@probe(_reset_g, calls=2)
def global_rebound_across_break(x):
    global G
    old = G
    G = {"count": old["count"] + 5, "log": ["new"]}
    _brk()
    r = x * G["count"]
    G = old
    return r


@probe(lambda: (torch.randn(3), []))
def exception_in_callee_after_mutation(x, lst):
    def callee():
        lst.append("callee")
        raise ValueError("inner")
    try:
        callee()
    except ValueError as e:
        lst.append(str(e))
    return x * len(lst), list(lst)


@probe(lambda: (torch.randn(3), Obj()))
def setattr_then_delattr_across_break(x, o):
    o.extra = 1
    _brk()
    del o.extra
    return x * hasattr(o, "extra"), sorted(vars(o))


@probe(lambda: (torch.randn(3), [0]), calls=3)
def counter_in_list_across_calls(x, box):
    box[0] += 1
    if box[0] % 2:
        _brk()
    return x * box[0]
