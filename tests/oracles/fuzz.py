"""Oracle: a differential fuzzer. From a seed it writes a small Python program mixing Python constructs
(containers and their methods, closures and nonlocal, small classes with properties and dunders, exceptions,
generators, comprehensions, globals, string formatting, builtins with keywords, mixed arithmetic, with
blocks, match; graph breaks inside try/with/loops with generators live across them, dict and set keys
computed from the inputs, in-place writes through views and aliases, tensor metadata steering Python,
dataclasses, slots and __getattr__, autograd, dtypes, seeded RNG; then nn.Modules with buffers, hooks and
train/eval changed between calls, grad-mode and autocast managers, functools/operator helpers, user
iterators and descriptors, tensor values steering Python, numpy interop, the random/math/itertools/str
library, torch's global state changed between calls) with tensor ops; runs it eagerly and
compiled by bytegraph (backend "eager", counted) over several calls with the inputs and the globals
mutated between calls, and compares return values (type and
value), exceptions (type and args) and side effects (globals, mutated arguments). Programs where
bytegraph hit an internal error (sound: that instruction ran as Python, but a bug) are counted apart.

    python -m tests.oracles.fuzz --seeds 0:500 [--json fuzz.json] [--out-dir fuzz_failures]
                                 [--backend aot_eager] [--shared-inputs] [--hoist] [--dynamic] [--narrow]
                                 [--families all|first|second|new|new2|third|raises|raises_meta|held]

Each failing program is written out as a standalone script that prints OK or MISMATCH.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import os
import random
import signal
import sys
import time
import traceback
import types
import warnings

import torch

import bytegraph
from bytegraph import logs as bytegraph_logs
from bytegraph.testing import CompileCounterWithBackend

bytegraph.config.strict = True      # an internal error is a finding, not a silent eager run
bytegraph_logs.enabled("frontend")  # (makes bytegraph's log handler now, on the real stderr: see _run_capturing_output)
# programs raise on purpose (shapes that do not broadcast): fake tensor propagation logs each such error
logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)

HEADER = """import collections, contextlib, dataclasses, functools, io, itertools, math, operator
import torch
import bytegraph
"""


# ------------------------------------------------------------------------------------------------ generator
# Every snippet works on the same variables of `f(x, y, n, s, lst, d)`: x and y are float tensors of one
# shape (kept: snippets never change their shape), n an int, s a str, lst a list of ints, d a dict of str to
# int; `out` collects what the snippets compute and is returned. Each snippet returns (prelude, body): module
# level definitions (named with the suffix k, so snippets never collide) and lines of the function body.

def _containers_list(r, k):
    op = r.choice([
        "lst.append(n)\nout.append(len(lst))",
        "lst.extend([n, n + 1])\nout.append(lst[-2:])",
        "lst.insert(0, n * 2)\nout.append(lst.pop())",
        "out.append(sorted(lst, key=lambda v: (v % 3, -v), reverse=True))",
        "lst.sort()\nout.append(lst.index(lst[0]))",
        "out.append(lst.count(n))\nout.append(n in lst)",
        "lst[1:2] = [n, n, n]\nout.append(list(reversed(lst)))",
        "out.append(lst[::-1][:3] + [x.shape[0]])",
        "del lst[0]\nout.append(lst.copy())",
        "tmp = lst * 2\ntmp.remove(tmp[0])\nout.append(tmp)",
        "out.append(x * len(lst))",
        "out.append([x[i % x.shape[0]] * v for i, v in enumerate(lst[:3])])",
        "lst += [len(d)]\nout.append(max(lst, default=-1) - min(lst, default=0))",
        "out.append(sum(lst, start=n) * y)",
    ])
    return "", op


def _containers_tuple(r, k):
    op = r.choice([
        "tp = (n, x.sum(), s)\na, *rest = tp\nout.append((a, len(rest), rest[-1]))",
        "tp = tuple(lst) + (n,)\nout.append((tp.count(n), tp.index(n), tp[1:]))",
        "a, (b, c) = n, (x, y)\nout.append(b - c * a)",
        "tp = (1, 2) < (1, n)\nout.append((tp, (n, s) == (n, s), (x.shape[0],) + (n,)))",
        "out.append(tuple(v * 2 for v in lst) + tuple(x.shape))",
        "first, *mid, last = [n, *lst, n + 1]\nout.append((first, mid, last))",
    ])
    return "", op


def _containers_dict(r, k):
    op = r.choice([
        "d['k%d' % n] = x.shape[0]\nout.append(sorted(d.items()))",
        "out.append(d.get('missing', n) + d.setdefault('a', 7))",
        "out.append(d.pop('zz', None))\nd.update(b=n, c=len(s))\nout.append(sorted(d))",
        "dd = {**d, 'q': n}\nout.append((len(dd), 'q' in dd, sorted(dd.values())))",
        "out.append({kk: vv * 2 for kk, vv in d.items() if vv % 2 == 0})",
        "out.append(sorted(dict.fromkeys(lst, 0).items()))",
        "out.append(list(d.keys())[:2] == list(d)[:2])",
        "d['t'] = n\nout.append(x * d['t'])",
        "dd = collections.defaultdict(list)\nfor v in lst:\n    dd[v % 3].append(v)\nout.append(sorted(dd.items()))",
        "od = collections.OrderedDict(a=1, b=n)\nod.move_to_end('a')\nout.append(list(od.items()))",
        "c = collections.Counter(s)\nout.append(c.most_common(2))",
        "out.append(d == dict(d) and d is not dict(d))",
        "for kk in list(d):\n    if d[kk] > n:\n        del d[kk]\nout.append(sorted(d))",
    ])
    return "", op


def _containers_set(r, k):
    op = r.choice([
        "st = {n, n + 1, len(lst)}\nst.add(3)\nout.append(sorted(st | {1}))",
        "st = set(lst)\nst.discard(n)\nout.append((len(st), sorted(st & {1, 2, 3, n})))",
        "fs = frozenset(s)\nout.append((len(fs), 'a' in fs, sorted(fs - {'a'})))",
        "out.append({v % 4 for v in lst} >= {0} or n)",
        "st = set()\nst.update(lst, [n])\nout.append(sorted(st)[:4])",
    ])
    return "", op


def _closures(r, k):
    kind = r.randrange(5)
    if kind == 0:
        pre = f"def make_adder{k}(c):\n    def add(v):\n        return v + c\n    return add\n"
        return pre, f"out.append(make_adder{k}(n)(x))"
    if kind == 1:
        pre = (f"def counter{k}():\n    c = 0\n    def inc(step=1):\n        nonlocal c\n        c += step\n"
               f"        return c\n    return inc\n")
        return pre, f"inc = counter{k}()\ninc()\nout.append(inc(step=n) * x)"
    if kind == 2:
        return "", ("acc = 0\ndef bump(v):\n    nonlocal acc\n    acc += v\n    return acc\n"
                    "for v in lst[:3]:\n    bump(v)\nout.append(acc)")
    if kind == 3:
        return "", "scale = n + 1\nfn = lambda t, m=2: t * scale + m\nout.append(fn(x, m=n))"
    return "", "fs = [lambda v, i=i: v + i for i in range(3)]\nout.append([g(n) for g in fs])"


def _classes(r, k):
    pre = (f"class P{k}:\n"
           f"    tag = 'p{k}'\n"
           f"    def __init__(self, v):\n        self.v = v\n"
           f"    @property\n    def double(self):\n        return self.v * 2\n"
           f"    def __add__(self, o):\n        return P{k}(self.v + (o.v if isinstance(o, P{k}) else o))\n"
           f"    def __radd__(self, o):\n        return P{k}(o + self.v)\n"
           f"    def __eq__(self, o):\n        return isinstance(o, P{k}) and self.v == o.v\n"
           f"    def __len__(self):\n        return 3\n"
           f"    def __getitem__(self, i):\n        if i >= 3:\n            raise IndexError(i)\n"
           f"        return self.v * i\n"
           f"    def __repr__(self):\n        return 'P{k}(%r)' % (self.v,)\n"
           f"    @classmethod\n    def make(cls, v):\n        return cls(v + 1)\n"
           f"    @staticmethod\n    def unit():\n        return 1\n"
           f"class Q{k}(P{k}):\n"
           f"    def __init__(self, v):\n        super().__init__(v * 10)\n"
           f"    @property\n    def double(self):\n        return super().double + 1\n")
    op = r.choice([
        f"p = P{k}(n)\nout.append(p.double + (p + 1).v)",
        f"p = P{k}(x)\nq = p + P{k}(y)\nout.append(q.double)",
        f"p = Q{k}(n)\nout.append((p.double, type(p).__name__, isinstance(p, P{k}), p.tag))",
        f"p = P{k}.make(n)\nout.append((p == P{k}(n + 1), len(p), list(p), P{k}.unit()))",
        f"p = 1 + P{k}(n)\nout.append((repr(p), str(p), f'{{p!r}}'))",
        f"p = P{k}(n)\np.extra = s\nout.append((p.extra, getattr(p, 'nope', 5), hasattr(p, 'v')))",
        f"p = P{k}(x)\nout.append(sum(P{k}(n)) + p.double.sum())",
        f"p = P{k}(n)\nsetattr(p, 'v', n + 2)\nout.append(vars(p))",
    ])
    return pre, op


def _exceptions(r, k):
    pre = f"class E{k}(ValueError):\n    pass\n"
    op = r.choice([
        "try:\n    if n > 2:\n        raise ValueError('big', n)\n    out.append(x + 1)\nexcept ValueError as e:\n"
        "    out.append(e.args)",
        "try:\n    out.append(d['nope%d' % n])\nexcept KeyError as e:\n    out.append(('key', e.args))",
        "try:\n    out.append(lst[n * 10])\nexcept IndexError:\n    out.append('idx')\nelse:\n    out.append('ok')\n"
        "finally:\n    out.append('fin')",
        "try:\n    out.append(10 // (n - n))\nexcept ZeroDivisionError as e:\n    out.append(str(e))",
        f"try:\n    raise E{k}(n)\nexcept ValueError as e:\n"
        f"    out.append((type(e).__name__, e.args, isinstance(e, E{k})))",
        "try:\n    try:\n        raise KeyError(s)\n    except KeyError as e:\n"
        "        raise RuntimeError('wrapped') from e\n"
        "except RuntimeError as e:\n    out.append((e.args, type(e.__cause__).__name__))",
        "if n == 7:\n    raise RuntimeError('seven', n)",
        f"if n % 5 == 4:\n    raise E{k}('mod', x.shape[0])",
        "try:\n    int(s)\nexcept (TypeError, ValueError) as e:\n    out.append(type(e).__name__)",
        "try:\n    x.view(-1, 7)\nexcept RuntimeError:\n    out.append('bad view')",
        "try:\n    out.append(x + 1)\n    out.append(n)\nfinally:\n    d['fin'] = n",
    ])
    return pre, op


def _generators(r, k):
    kind = r.randrange(6)
    if kind == 0:
        pre = f"def gen{k}(t, m):\n    for i in range(m):\n        yield t * i\n"
        return pre, f"out.append(sum(gen{k}(x, 3)))"
    if kind == 1:
        pre = f"def gen{k}(m):\n    yield from range(m)\n    yield -1\n"
        return pre, f"out.append(list(gen{k}(n % 4)))"
    if kind == 2:
        return "", "it = iter(lst)\nout.append((next(it, None), next(it, 'end'), list(it)))"
    if kind == 3:
        return "", "out.append(sum(v * 2 for v in lst if v % 2))"
    if kind == 4:
        pre = f"def gen{k}():\n    got = yield 1\n    yield got * 2\n"
        return pre, f"g = gen{k}()\nout.append((next(g), g.send(n)))"
    return "", "out.append(list(zip(lst, s, strict=False)) + list(enumerate(lst[:2], start=n)))"


def _comprehensions(r, k):
    op = r.choice([
        "out.append([v * w for v in lst[:3] for w in range(2) if v != w])",
        "out.append({c: s.count(c) for c in s})",
        "out.append([[x[i, j] for j in range(2)] for i in range(2)])",
        "out.append(sorted({v // 2 for v in lst}))",
        "out.append(torch.stack([x[i] * i for i in range(x.shape[0])]))",
        "out.append([t.sum() for t in (x, y) if t.dim() == 2])",
        "out.append([(i, c) for i, c in enumerate(s) if i < n])",
    ])
    return "", op


def _globals(r, k):
    pre = f"G_I{k} = 3\nG_L{k} = [1]\nG_T{k} = torch.ones(2)\nG_D{k} = {{'a': 1}}\n"
    op = r.choice([
        f"global G_I{k}\nG_I{k} = G_I{k} + n\nout.append(G_I{k} * x)",
        f"G_L{k}.append(n)\nout.append(len(G_L{k}))",
        f"out.append(G_T{k} * n)",
        f"G_D{k}[s] = n\nout.append(sorted(G_D{k}))",
        f"global G_T{k}\nG_T{k} = G_T{k} + 1\nout.append(G_T{k}.sum())",
        f"out.append(x + G_I{k} if G_I{k} > 4 else x - G_I{k})",
    ])
    return pre, op


def _strings(r, k):
    op = r.choice([
        "out.append(f'{n}-{s!r}-{n:03d}-{n / 3:.2f}')",
        "out.append('%s/%d/%5.1f' % (s, n, n * 1.5))",
        "out.append('{}:{k}'.format(n, k=s))",
        "out.append((s.upper(), s.split('a'), s.replace('b', 'B', 1), s.startswith(('a', 'b'))))",
        "out.append(', '.join(map(str, lst)))",
        "out.append(f'{tuple(x.shape)} {x.dtype} {x.dim()}')",
        "out.append((s * 2)[1:n] + str(n).zfill(4) + s.center(7, '*'))",
        "out.append((s.find('b'), s.encode(), ord(s[0]) if s else 0, chr(65 + n % 26)))",
        "out.append(str(lst) + repr(d.get('a')) + format(n, 'x'))",
    ])
    return "", op


def _builtins(r, k):
    op = r.choice([
        "out.append((round(n / 3, ndigits=2), int('12', base=8), divmod(n, 3), pow(n, 2, 5)))",
        "out.append((min(lst, key=abs, default=0), max(n, 2, 7), abs(-n), any(v > n for v in lst)))",
        "out.append((isinstance(x, (list, torch.Tensor)), isinstance(n, bool), type(s) is str, callable(len)))",
        "out.append(dict(zip('abc', lst)))",
        "out.append(list(map(lambda v: v * n, filter(None, lst))))",
        "out.append(functools.reduce(operator.add, lst, n))",
        "out.append(list(itertools.accumulate(lst[:4])) + list(itertools.chain([n], lst[:1])))",
        "out.append(sorted(lst, key=functools.partial(operator.mod, 7)))",
        "out.append((len(range(0, n, 2)), list(range(n, 0, -3)), range(5)[n % 5]))",
        "out.append((bool(lst), bool(''), int(3.9), float(n), complex(n, 1).real, hash((1, n)) == hash((1, n))))",
        "out.append(getattr(x, 'shape')[0] + getattr(d, 'get')('a', 0))",
        "out.append(sorted(set(lst), reverse=n % 2 == 0))",
        "out.append(list(itertools.product(range(2), repeat=2)) + list(itertools.islice(lst, 1, None, 2)))",
        "out.append((math.floor(n / 2), math.sqrt(n * n), math.isclose(0.1 + 0.2, 0.3), math.pi * n))",
        "out.append(all(isinstance(v, int) for v in lst) and operator.itemgetter(0)(lst or [n]))",
    ])
    return "", op


def _arith(r, k):
    op = r.choice([
        "out.append(n / 2 + x)",
        "out.append((x * True, (n > 2) + x, x ** 2 - n // -3))",
        "out.append((-n % 4, 1.5 ** n, n // 2.0, n % 2.5, 7 & n, n | 8, n ^ 3, ~n, n << 2, n >> 1))",
        "out.append((n < 3.5, 3 == 3.0, 'a' < s, [1] * n, 0 < n <= 5, n != None))",
        "out.append((x.shape[0] == 3, x.size(1) * n, x.numel() + len(lst), x.shape[-1] / 2))",
        "out.append(x.sum() + n)",
        "out.append((True + 2, False * 3.5, n * 1.0 is not None, int(True) + n))",
        "v = n\nv += 2\nv *= 3\nv //= 2\nv **= 2\nv -= n\nout.append(v)",
        "out.append(x.dim() * 2.0 + y)",
        "out.append((x > 0) & (y < 1))",
    ])
    return "", op


def _tensors(r, k):
    op = r.choice([
        "x = x * 2 + y",
        "x = torch.relu(x - 0.5)",
        "y = torch.sin(y) * torch.cos(x)",
        "x.add_(1)",
        "y.mul_(n)",
        "out.append(x.view(-1)[:3])",
        "out.append(torch.cat([x, y], dim=1))",
        "out.append(x.sum(dim=0, keepdim=True))",
        "out.append(torch.where(x > 0, x, y))",
        "out.append((x.mean(), x.max(dim=1).values, x.argmax()))",
        "out.append(x.to(torch.float64) + 1)",
        "out.append((x.shape, x.dtype, x.requires_grad, x.device.type))",
        "out.append(x[0].clone())",
        "x = x.clone()\nx[0] = n",
        "out.append(x.t() @ y)",
        "out.append(torch.clamp(x, min=-1, max=n))",
        "out.append(list(torch.split(x, 2, dim=1)))",
        "out.append(torch.nn.functional.softmax(x, dim=-1))",
        "a, b = x.chunk(2, dim=1)\nout.append(a * b)",
        "out.append(torch.tensor([n, len(lst)]) + 1)",
        "out.append(x.new_zeros(2) + torch.full((2,), n))",
        "out.append(x.float().int().tolist()[:1])",
    ])
    return "", op


def _tensor_control(r, k):
    op = r.choice([
        "if x.sum() > 0:\n    out.append(x + 1)\nelse:\n    out.append(x - 1)",
        "out.append(float(x.sum()) > 0)",
        "out.append(x.sum().item() + n)",
        "out.append(bool((x > 100).any()))",
        "for row in x:\n    out.append(row.sum())",
        "out.append(int(x.shape[0]) * x.max())",
    ])
    return "", op


def _tensor_numbers(r, k):
    """0-d tensors that torch calls read as numbers (`torch.arange(t)`): a global the environment
    changes between calls (its value, or to a 1-d tensor: then eager raises too)."""
    pre = (f"G_T{k} = torch.tensor({r.randint(0, 5)})\n"
           f"G_F{k} = torch.tensor({r.choice([0.5, 2.0, 3.25])}, dtype=torch.float64)\n")
    op = r.choice([
        f"out.append(torch.arange(G_T{k}) * 1.5 + len(lst))",
        f"out.append(torch.zeros(G_T{k}, 2).sum(1) + n)",
        f"G_T{k}.add_(1)\nout.append(torch.ones(G_T{k}))",
        f"out.append(x + 1 if torch.arange(G_T{k}).shape[0] > 2 else y)",
        f"out.append(torch.arange(G_F{k}))",
        f"out.append(torch.arange(0, G_F{k}, 0.5).sum() * x)",
        f"out.append(torch.linspace(0, 1, G_T{k}) if G_T{k}.dim() == 0 else None)",
        f"out.append(torch.full((2,), G_T{k}) + torch.arange(G_T{k}).sum())",
    ])
    return pre, op


def _with_blocks(r, k):
    pre = (f"LOG{k} = []\n"
           f"class CM{k}:\n"
           f"    def __init__(self, tag, swallow=False):\n        self.tag = tag\n        self.swallow = swallow\n"
           f"    def __enter__(self):\n        LOG{k}.append(('enter', self.tag))\n        return self\n"
           f"    def __exit__(self, et, ev, tb):\n"
           f"        LOG{k}.append(('exit', self.tag, et.__name__ if et else None))\n"
           f"        return self.swallow\n"
           f"@contextlib.contextmanager\n"
           f"def cmgen{k}(v):\n    LOG{k}.append(('gen-in', v))\n    try:\n        yield v * 2\n    finally:\n"
           f"        LOG{k}.append(('gen-out', v))\n")
    op = r.choice([
        f"with CM{k}(n) as c:\n    out.append(c.tag * x)\nout.append(list(LOG{k}))",
        f"with CM{k}(s, swallow=True):\n    if n > 1:\n        raise ValueError(n)\n    out.append(1)\n"
        f"out.append(LOG{k}[-1])",
        f"with cmgen{k}(n) as v:\n    out.append(v + x)\nout.append(LOG{k}[-2:])",
        "with torch.no_grad():\n    out.append(x * 2)",
        f"with CM{k}('a'), CM{k}('b'):\n    out.append(len(LOG{k}))",
        "with contextlib.suppress(KeyError):\n    out.append(d['missing'])\nout.append('after')",
    ])
    return pre, op


def _control(r, k):
    op = r.choice([
        "for v in lst:\n    if v > n:\n        out.append(v)\n        break\nelse:\n    out.append('nobreak')",
        "i = 0\nwhile i < n and i < 5:\n    i += 1\n    if i == 2:\n        continue\n    out.append(i)",
        "out.append(x if n % 2 else y)",
        "if (m := len(lst)) > 2:\n    out.append(m)",
        "match lst:\n    case []:\n        out.append('empty')\n    case [a]:\n        out.append(('one', a))\n"
        "    case [a, b, *rest]:\n        out.append((a, b, len(rest)))",
        "match d:\n    case {'a': int(v)}:\n        out.append(v)\n    case _:\n        out.append(None)",
        "match n:\n    case 0 | 1:\n        out.append('small')\n    case int(v) if v > 5:\n        out.append('big')\n"
        "    case _:\n        out.append('mid')",
        "del_me = [n]\ndel del_me[0]\nout.append(del_me)",
    ])
    return "", op


# ---- families added for issue #14's second pass: breaks inside try/with/loops, keys that are not constants,
# views and aliases written in place, tensor metadata steering Python, richer classes and closures.

def _globals_more(r, k):
    """Globals the environment changes between calls in ways `_globals` does not: a flag, a swapped
    function, a class attribute, a config dict's entries."""
    pre = (f"G_FLAG{k} = True\nG_FN{k} = abs\nG_CFG{k} = {{'scale': 3, 'on': True}}\n"
           f"class G_CLS{k}:\n    scale = 2\n    items = []\n")
    op = r.choice([
        f"if G_FLAG{k}:\n    out.append(x + 1)\nelse:\n    out.append(x - 1)",
        f"out.append(G_FN{k}(x - 0.5))",
        f"out.append(x * G_CLS{k}.scale + len(G_CLS{k}.items))",
        f"out.append(x * G_CFG{k}['scale'] if G_CFG{k}.get('on') else x)",
        f"G_CLS{k}.scale += n\nout.append(G_CLS{k}.scale)",
        f"G_CFG{k}[s] = n\nout.append(sorted(G_CFG{k}))",
        f"global G_FLAG{k}\nG_FLAG{k} = n > 3\nout.append(G_FLAG{k})",
        f"fn = G_FN{k}\nout.append(fn(n - 5))",
        f"out.append([G_FN{k}(v) for v in lst[:2]])",
        f"G_CLS{k}.items.append(x.shape[0])\nout.append(sum(G_CLS{k}.items) * x)",
    ])
    return pre, op


def _grad_dtype_rng(r, k):
    """Autograd inside the program (requires_grad, backward, grad modes), dtype promotion and in-place
    casts that raise, and seeded random numbers (the RNG's state is the program's too)."""
    op = r.choice([
        "w = x.detach().requires_grad_()\nloss = (w * w).sum()\nloss.backward()\nout.append(w.grad)",
        "with torch.enable_grad():\n    w = y.detach().requires_grad_(True)\n    out.append((w * 3).requires_grad)",
        "w = x.detach().requires_grad_()\ng, = torch.autograd.grad(w.sin().sum(), [w])\nout.append(g)",
        "w = x.detach().requires_grad_()\nwith torch.no_grad():\n    t = w * 2\n"
        "out.append((t.requires_grad, (w * 2).requires_grad))",
        "w = x.detach().requires_grad_()\nv = w * 2\n"
        "out.append((v.requires_grad, v.grad_fn is not None, v.is_leaf, w.is_leaf))",
        "prev = torch.is_grad_enabled()\ntorch.set_grad_enabled(n % 2 == 0)\nw = x.detach().requires_grad_()\n"
        "out.append((w * 2).requires_grad)\ntorch.set_grad_enabled(prev)",
        "out.append((torch.arange(n) / 2, torch.arange(n) // 2, (x > 0).sum(), x.long() // 2))",
        "out.append((x.to(torch.int32) * 1.5, torch.tensor(n) + 1.5, torch.tensor(n) * True, x.half().float()))",
        "t = x.long()\ntry:\n    t.add_(1.5)\nexcept RuntimeError as e:\n    out.append(type(e).__name__)\n"
        "out.append(t)",
        "out.append(((x > 0) + (y > 0), (x > 0) * 2, torch.tensor([True, False]) | (n > 2)))",
        "out.append((x.int() / x.int().clamp(min=1), (x * 10).to(torch.uint8), x.double().sum().dtype))",
        "torch.manual_seed(n)\nout.append(torch.rand(2) + x[0, :2])",
        "g = torch.Generator().manual_seed(n)\nout.append(torch.randn(3, generator=g))",
        "torch.manual_seed(7)\na = torch.rand(2)\nbytegraph.graph_break()\nb = torch.rand(2)\nout.append((a, b))",
        "torch.manual_seed(n)\nout.append(torch.nn.functional.dropout(x, p=0.5, training=True))",
        "out.append(torch.result_type(x, n) == x.dtype and torch.promote_types(x.dtype, torch.int64) == x.dtype)",
    ])
    return "", op


def _breaks(r, k):
    """Graph breaks (an explicit `bytegraph.graph_break()`, `print` into a buffer) inside try/except/finally,
    with blocks, loops, nested calls, and with generators/iterators live across them."""
    pre = (f"LOGB{k} = []\n"
           f"class CMB{k}:\n"
           f"    def __init__(self, tag):\n        self.tag = tag\n"
           f"    def __enter__(self):\n        LOGB{k}.append(('in', self.tag))\n        return self.tag\n"
           f"    def __exit__(self, et, ev, tb):\n"
           f"        LOGB{k}.append(('out', self.tag, et.__name__ if et else None))\n"
           f"        return et is KeyError\n"
           f"def genb{k}(t, m):\n    for i in range(m):\n        yield t * i\n        bytegraph.graph_break()\n"
           f"def innerb{k}(v, t):\n    bytegraph.graph_break()\n    if v > 3:\n        raise ValueError('inner', v)\n"
           f"    return t * v\n")
    op = r.choice([
        "try:\n    t = x + 1\n    bytegraph.graph_break()\n    out.append(t * n)\nfinally:\n    d['fin'] = n",
        "buf = io.StringIO()\ntry:\n    print(n, s, file=buf)\n    if n > 3:\n        raise KeyError(n)\n"
        "    out.append(x * 2)\nexcept KeyError as e:\n    out.append(e.args)\nfinally:\n"
        "    out.append(buf.getvalue())",
        "try:\n    bytegraph.graph_break()\n    out.append(lst[n])\nexcept IndexError as e:\n    out.append(str(e))\n"
        "else:\n    out.append(y.sum())\nfinally:\n    out.append(x.mean())",
        f"with CMB{k}(n) as tag:\n    t = x * tag\n    bytegraph.graph_break()\n    out.append(t + 1)\n"
        f"out.append(list(LOGB{k}))",
        f"with CMB{k}(s):\n    bytegraph.graph_break()\n    out.append(d['nope' + s])\nout.append(LOGB{k}[-1])",
        f"g = genb{k}(x, 3)\nout.append(next(g))\nbytegraph.graph_break()\nout.append(next(g))\nout.append(list(g))",
        "it = iter(lst)\nfirst = next(it, None)\nbytegraph.graph_break()\nout.append((first, list(it)))",
        "tot = 0\ndef addb(v):\n    nonlocal tot\n    tot += v\n    bytegraph.graph_break()\n    return tot\n"
        "out.append(addb(n) + addb(1))\nout.append(tot * x)",
        "for i, v in enumerate(lst[:3]):\n    bytegraph.graph_break()\n    x = x + v\nout.append(x)",
        f"try:\n    out.append(innerb{k}(n, x))\nexcept ValueError as e:\n    out.append(e.args)",
        "i = 0\nwhile i < 3:\n    i += 1\n    if i == n:\n        bytegraph.graph_break()\n        continue\n"
        "    y = y + i\nout.append(y)",
        "buf = io.StringIO()\nfor v in lst[:2]:\n    print(v, x.shape[0], sep='|', file=buf)\n"
        "out.append(buf.getvalue() + s)",
        "gz = (t * 2 for t in (x, y))\nout.append(next(gz))\nbytegraph.graph_break()\nout.append(next(gz, None))",
        "try:\n    try:\n        bytegraph.graph_break()\n        raise KeyError(s)\n    finally:\n"
        "        out.append('inner-fin')\n"
        "except KeyError as e:\n    out.append(('caught', e.args, x.sum()))",
        "z = [x]\nbytegraph.graph_break()\nz.append(z[0] * 2)\nout.append(z)",
    ])
    return pre, op


def _dynamic_keys(r, k):
    """Dicts and sets whose keys come from the inputs (so they collide, or not, call by call)."""
    op = r.choice([
        "key = s + str(n)\nd[key] = n\nout.append((key in d, d[key], sorted(d)))",
        "dd = {}\nfor v in lst:\n    dd[v] = dd.get(v, 0) + 1\nout.append(list(dd.items()))",
        "dd = {x.shape[0]: 'rows', n: 'n'}\nout.append(dd)",
        "st = set(lst)\nst.add(n)\nout.append((n in st, len(st), sorted(st)))",
        "dd = {(n, s): x.sum()}\nout.append(dd[(n, s)])",
        "dd = {True: 'a', 1.0: 'b', n: 'c'}\nout.append(list(dd.items()))",
        "d.pop(s, None)\nd[s] = n\nout.append(list(d.items())[-1])",
        "st = {x.shape[0], x.shape[1], n}\nout.append(sorted(st))",
        "dd = {}\ndd[x.ndim] = x\ndd[n % 3] = y\nout.append(sum(v.sum() for v in dd.values()))",
        "kk = 'a' if n % 2 else 'b'\nd[kk] += 1\nout.append(d[kk])",
        "del d[min(d)]\nout.append(list(d.items()))",
        "st = {x, y}\nout.append((len(st), x in st))",
        "out.append(d.get(s, n) + d.get(str(n), -1))",
        "st = {s, s[:1], str(n)}\nst.discard(s)\nout.append(sorted(st))",
        "dd = dict(zip(lst, s))\nout.append((len(dd), dd.get(n, '?')))",
        "dd = {v: v * x.shape[0] for v in lst if v != n}\nout.append(dd)",
        "st = set(s)\nst ^= {s[:1], 'z'}\nout.append(sorted(st))",
        "dd = {}\ndd.setdefault(n, []).append(x.sum())\ndd.setdefault(n, []).append(n)\nout.append(dd)",
        "dd = collections.Counter(lst)\ndd[n] += 2\nout.append(sorted(dd.items()))",
        "dd = {s: 1}\ndd |= {str(n): 2, s: 3}\nout.append(dd)",
    ])
    return "", op


def _views(r, k):
    """In-place tensor ops through views and aliases of the inputs (the caller sees them: x and y are
    compared after every call)."""
    op = r.choice([
        "v = x[0]\nv.add_(n)\nout.append(x.sum())",
        "a = x.view(-1)\na[:2] = 0\nout.append(x.clone())",
        "z = x\nz += 1\nout.append((x is z, z.sum()))",
        "t = x.t()\nt.mul_(2)\nout.append(x[0])",
        "y[:, 0].zero_()\nout.append(y.sum(1))",
        "x.transpose(0, 1)[1].fill_(n)\nout.append(x)",
        "w = x.clone()\nw2 = w.narrow(1, 1, 2)\nw2.copy_(y[:, :2])\nout.append(w)",
        "alias = [x]\nalias[0].sub_(1)\nout.append(x.mean())",
        "out.append(x[0].add_(1).sum())",
        "x[x > 0] = 0\nout.append(x)",
        "v = x.view(x.shape[0], 2, 2)\nv[:, 0].mul_(n)\nout.append(x)",
        "y.copy_(x)\nout.append((x - y).abs().sum())",
        "x.add_(y)\ny.mul_(2)\nout.append(x + y)",
        "t = x[:, 1:]\nx.mul_(2)\nout.append(t)",
        "x.clamp_(min=0)\nout.append(x)",
        "d2 = {'t': x}\nd2['t'].neg_()\nout.append(x.sum())",
        "x.unsqueeze(0).mul_(2)\nout.append(x)",
        "y[1] += x[0]\nout.append(y[1])",
        "t = x.detach()\nt.add_(1)\nout.append(x)",
        "x.data.mul_(n)\nout.append(x)",
    ])
    return "", op


def _metadata(r, k):
    """Tensor metadata (.shape/.dtype/.ndim/.size()) deciding Python control flow and formatted in strings;
    isinstance on tensors, sizes and Python values; size arithmetic (symbolic under --dynamic)."""
    op = r.choice([
        "if x.ndim == 2 and x.shape[0] > 3:\n    out.append(x[:3])\nelse:\n    out.append(x * 2)",
        "if x.dtype == torch.float32:\n    out.append(x.double())\nelse:\n    out.append(x)",
        "rows, cols = x.shape\nout.append(x.reshape(cols, rows) if rows != cols else x)",
        "for i in range(x.shape[0] // 2):\n    out.append(x[2 * i] + x[2 * i + 1])",
        "out.append(f'{x.shape[0]}x{x.shape[1]}:{x.dtype}:{x.ndim}:{x.device}')",
        "out.append('%d rows, %s' % (x.size(0), tuple(x.shape)))",
        "out.append(str(x.shape) + repr(x.dtype))",
        "out.append((isinstance(x.shape[0], int), isinstance(x.shape, tuple), type(x.shape[0]).__name__))",
        "out.append([isinstance(v, (int, float)) for v in (n, s, x, 1.5, True)])",
        "h = x.shape[0] * 2 - n\nout.append(torch.zeros(max(h, 1), 2))",
        "out.append(x.new_ones(x.shape[0] + n, x.size(-1) // 2))",
        "out.append(x.view(x.shape[0] * 2, -1).shape)",
        "out.append(x.numel() // x.shape[-1] == x.shape[0])",
        "out.append(x[: x.shape[0] // 2])",
        "out.append(torch.arange(x.shape[0]) * x.shape[1])",
        "out.append((x.shape[0] % 2 == 0, x.size() == y.size(), math.prod(x.shape) + n))",
        "out.append(x.flatten()[x.numel() - 1])",
        "out.append((divmod(x.shape[0], 2), x.shape[0] / 2, x.shape[0] ** 2, round(x.shape[0] / 3, 2)))",
        "out.append(x.reshape(-1, 2)[x.shape[0]:].sum(0))",
        "m = max(x.shape[0], n)\nout.append(torch.ones(m)[:x.shape[0]] * x[:, 0])",
        "out.append(x.expand(2, *x.shape).sum(0) * len(x))",
        "out.append(torch.cat([x, y[: max(1, x.shape[0] - 2)]]).shape[0])",
        "out.append((x.shape[-2:], list(x.size()), x.stride(), x.is_contiguous()))",
        "out.append(x.shape[0] * 1.5 + x.shape[1])",
        "out.append(bool(x.shape[0] > 4) or x.shape[0] == n)",
        "out.append(x.new_full((x.shape[0],), float(x.shape[1])))",
        "out.append(isinstance(x, torch.Tensor) and not isinstance(x, torch.nn.Parameter))",
        "sz = x.size()\nout.append((sz[0] + sz[1], sz.numel(), len(sz)))",
        "out.append('{:>4}|{}'.format(x.shape[0], x.dtype).strip())",
        "out.append(x.view(*x.shape[::-1]).t().contiguous() - x)",
    ])
    return "", op


def _objects(r, k):
    """Classes with more protocol than P: __getattr__ fallbacks, __contains__/__setitem__/__iter__, __bool__,
    __hash__ (instances as dict keys), class attributes the program changes, dataclasses and slots."""
    pre = (f"class R{k}:\n"
           f"    count = 0\n"
           f"    __slots__ = ('v', 'items')\n"
           f"    def __init__(self, v):\n        self.v = v\n        self.items = {{}}\n        R{k}.count += 1\n"
           f"    def __getitem__(self, key):\n        return self.items[key]\n"
           f"    def __setitem__(self, key, val):\n        self.items[key] = val\n"
           f"    def __contains__(self, key):\n        return key in self.items\n"
           f"    def __iter__(self):\n        yield from sorted(self.items)\n"
           f"    def __bool__(self):\n        return bool(self.items)\n"
           f"    def __hash__(self):\n        return hash(self.v)\n"
           f"    def __eq__(self, o):\n        return isinstance(o, R{k}) and o.v == self.v\n"
           f"class GA{k}:\n"
           f"    real = 1\n"
           f"    def __getattr__(self, name):\n        return name * 2\n"
           f"@dataclasses.dataclass\n"
           f"class DC{k}:\n    a: int\n    b: list = dataclasses.field(default_factory=list)\n"
           f"    def total(self):\n        return self.a + sum(self.b)\n")
    op = r.choice([
        f"o = R{k}(n)\no[s] = x\nout.append((s in o, 'zz' in o, list(o), bool(o), o[s] * 2))",
        f"o = R{k}(n)\nout.append((bool(o), o == R{k}(n), o != R{k}(n + 1), len({{o, R{k}(n)}})))",
        f"dd = {{R{k}(n): 'a'}}\ndd[R{k}(n)] = 'b'\nout.append(list(dd.values()))",
        f"before = R{k}.count\nR{k}(1)\nR{k}(2)\nout.append(R{k}.count - before)",
        f"g = GA{k}()\nout.append((g.ab, g.real, getattr(g, s or 'q'), hasattr(g, 'zz')))",
        f"dc = DC{k}(n)\ndc.b.extend(lst[:2])\ndc.a += 1\nout.append((dc.total(), dc, dc == DC{k}(dc.a, list(dc.b))))",
        f"dc = DC{k}(n, [1])\nout.append((dataclasses.asdict(dc), dataclasses.replace(dc, a=0).a))",
        f"o = R{k}(x)\nfor i, c in enumerate(s):\n    o[c] = i\nout.append(sum(o[c] for c in o) + n)",
        f"try:\n    R{k}(n).w = 1\nexcept AttributeError as e:\n    out.append(type(e).__name__)",
        f"R{k}.count = n\nout.append(R{k}(0).count)",
    ])
    return pre, op


def _closures_more(r, k):
    """Nested functions that rebind or mutate the variables of the functions around them."""
    op = r.choice([
        "c = 1\ng = lambda: c * x\nc = n\nout.append(g())",
        "def outer():\n    v = [n]\n    def inner():\n        v.append(len(v))\n        return v\n    return inner\n"
        "h = outer()\nh()\nout.append(h())",
        "def mk():\n    cnt = 0\n    def inc():\n        nonlocal cnt\n        cnt += 1\n        return cnt\n"
        "    def get():\n        return cnt\n    return inc, get\ninc, get = mk()\ninc()\ninc()\n"
        "out.append((get(), x * get()))",
        "t = x\ndef upd():\n    nonlocal t\n    t = t * 2\nupd()\nupd()\nout.append(t)",
        "def deco(fn):\n    @functools.wraps(fn)\n    def w(*a, **kw):\n        return fn(*a, **kw) + 1\n    return w\n"
        "@deco\ndef base(a, b=2):\n    return a * b\nout.append((base(n), base(x, b=n), base.__name__))",
        "def level1(a):\n    def level2(b):\n        def level3(c):\n            return a + b + c\n"
        "        return level3\n"
        "    return level2\nout.append(level1(x)(n)(y))",
        "fns = {}\nfor name in ('p', 'q'):\n    fns[name] = lambda v, name=name: name + str(v)\n"
        "out.append(fns['q'](n))",
        "stack = []\ndef push(v):\n    stack.append(v)\n    return len(stack)\n"
        "out.append([push(v) for v in (x, n, s)][-1])\n"
        "out.append(stack[1:])",
        "k2 = n\ndef readk():\n    return k2\nk2 += 10\nout.append(readk())",
        "def gen_c():\n    v = 0\n    while True:\n        got = yield v\n        v += got or 1\n"
        "gc = gen_c()\nnext(gc)\ngc.send(n)\nout.append(next(gc))",
    ])
    return "", op


def _exceptions_more(r, k):
    """Exceptions raised and caught across calls, in comprehensions and generators; assert; context chains."""
    pre = (f"def raiser{k}(v):\n    if v % 3 == 0:\n        raise LookupError('three', v)\n    return v\n"
           f"def gen_err{k}(m):\n    yield 1\n    if m > 2:\n        raise ValueError(m)\n    yield 2\n")
    op = r.choice([
        "assert n < 8, ('too big', n)\nout.append(x * n)",
        f"try:\n    out.append([raiser{k}(v) for v in lst])\nexcept LookupError as e:\n    out.append(e.args)",
        f"try:\n    out.append(list(gen_err{k}(n)))\nexcept ValueError as e:\n    out.append(('gen', e.args))",
        "try:\n    try:\n        1 / (n - n)\n    except ZeroDivisionError:\n        raise KeyError(s)\n"
        "except KeyError as e:\n    out.append((type(e.__context__).__name__, e.__suppress_context__))",
        "try:\n    raise ValueError(n) from None\nexcept ValueError as e:\n"
        "    out.append((e.__cause__, e.__suppress_context__))",
        "try:\n    x.reshape(n + 7, 3)\nexcept RuntimeError:\n    out.append('shape')\nout.append(x.sum())",
        "e2 = None\ntry:\n    {}[s]\nexcept KeyError as e:\n    e2 = e\nout.append(repr(e2))",
        "for v in lst:\n    try:\n        if v == n:\n            raise StopIteration(v)\n"
        "    except StopIteration as e:\n"
        "        out.append(e.value)\n        break",
        "try:\n    out.append(x + torch.ones(n + 1))\nexcept RuntimeError as e:\n    out.append(type(e).__name__)",
        "res = []\nfor v in lst[:4]:\n    try:\n        res.append(10 // (v - 1))\n    except ZeroDivisionError:\n"
        "        res.append(None)\n        continue\n    finally:\n        res.append('f')\nout.append(res)",
    ])
    return pre, op


# ---- families added for the third pass: what users of a compiler write around their tensor code. nn.Modules
# (buffers, containers, hooks, train/eval), grad-mode and autocast managers, functools/operator helpers,
# richer user classes (descriptors, iterators, hashing), tensor values steering Python, torch calls that
# answer with non-tensors, numpy interop, and the random/math/itertools/str standard library. A global named
# G_... whose value has `between_calls(call)` is changed by that method between calls (mutate_globals).

def _modules(r, k):
    """A small nn.Module defined at module level: parameters, a buffer written in forward, ModuleList and
    ModuleDict, an attribute set on self in forward, the training flag steering control flow; between calls
    it flips train/eval, changes an attribute and registers (then removes) a forward hook."""
    pre = (f"def hook{k}(mod, inp, res):\n    return res * 2\n"
           f"def prehook{k}(mod, inp):\n    return (inp[0] + 1,) + tuple(inp[1:])\n"
           f"class Small{k}(torch.nn.Module):\n"
           f"    def __init__(self, m):\n        super().__init__()\n"
           f"        self.w = torch.nn.Parameter(torch.linspace(-1, 1, 16).reshape(4, 4) * (m + 1))\n"
           f"        self.register_buffer('seen', torch.zeros(()))\n"
           f"    def forward(self, t):\n        self.seen += 1\n        return t @ self.w\n"
           f"class M{k}(torch.nn.Module):\n"
           f"    def __init__(self):\n        super().__init__()\n"
           f"        self.lin = torch.nn.Linear(4, 4)\n"
           f"        self.layers = torch.nn.ModuleList([Small{k}(1), torch.nn.ReLU()])\n"
           f"        self.heads = torch.nn.ModuleDict({{'a': torch.nn.Linear(4, 2), 'b': torch.nn.Tanh()}})\n"
           f"        self.register_buffer('steps', torch.zeros(()))\n"
           f"        self.register_buffer('running', torch.zeros(4))\n"
           f"        self.scale = 2\n        self.calls = 0\n"
           f"    def forward(self, t, mode='a'):\n"
           f"        self.steps += 1\n        self.calls += 1\n        self.last_mode = mode\n"
           f"        h = self.lin(t)\n"
           f"        for layer in self.layers:\n            h = layer(h)\n"
           f"        if self.training:\n"
           f"            self.running.mul_(0.5).add_(h.mean(0).detach())\n            h = h * self.scale\n"
           f"        else:\n            h = h - self.running\n"
           f"        return self.heads[mode](h) if mode in self.heads else h\n"
           f"    def between_calls(self, call):\n"
           f"        if call == 1:\n            self.eval()\n"
           f"        elif call == 2:\n            self.train()\n            self.scale += 1\n"
           f"            self.handle = self.register_forward_hook(hook{k})\n"
           f"        else:\n            self.handle.remove()\n            self.layers[0].w.data.mul_(0.5)\n"
           f"torch.manual_seed({k})\nG_MOD{k} = M{k}()\n")
    m = f"G_MOD{k}"
    op = r.choice([
        f"out.append({m}(x))",
        f"out.append({m}(y, mode=s[:1] or 'a'))",
        f"out.append(({m}(x), {m}.calls, {m}.training, {m}.last_mode))",
        f"sm = Small{k}(n)\nout.append((sm(x), sm.seen))",
        f"sm = Small{k}(n)\nsm.eval()\nout.append((sm(x) + sm(y), sm.training, sm.seen))",
        f"out.append(sum(p.sum() for p in {m}.parameters()))",
        f"out.append([name for name, _ in {m}.named_buffers()] + [nm for nm, _ in {m}.named_children()])",
        f"{m}.train(n % 2 == 0)\nout.append(({m}(x), {m}.training))",
        f"hd = {m}.register_forward_pre_hook(prehook{k})\nout.append({m}(x))\nhd.remove()\nout.append({m}(x))",
        f"with torch.no_grad():\n    out.append({m}.lin(x))",
        f"{m}.scale = n\nout.append({m}(x))",
        f"seq = torch.nn.Sequential({m}.lin, torch.nn.ReLU(), {m}.layers[0])\nout.append(seq(x))",
        f"out.append((len({m}.layers), len(list({m}.children())), 'a' in {m}.heads, list({m}.heads.keys())))",
        f"if len({m}.layers) < 4:\n    {m}.layers.append(torch.nn.Identity())\nout.append({m}(x))",
        f"out.append(torch.nn.functional.linear(x, {m}.lin.weight, {m}.lin.bias) - {m}.lin(x))",
        f"out.append(({m}.steps, {m}.running.clone(), {m}.state_dict()['steps'].item()))",
        f"{m}.tag = s\nout.append((getattr({m}, 'tag', None), hasattr({m}, 'nope'), {m}.layers[0].w.shape))",
        f"{m}.zero_grad()\nloss = {m}(x).sum()\nloss.backward()\nout.append(({m}.lin.weight.grad, {m}.lin.bias.grad))",
        f"for i, layer in enumerate({m}.layers):\n    x = layer(x) + i\nout.append(x)",
        f"out.append({m}.heads['b'](x) * {m}.heads['a'](y).sum())",
        f"sm = Small{k}(1)\nsm.register_forward_hook(hook{k})\nout.append(sm(x))",
        f"out.append((type({m}.layers[1]).__name__, isinstance({m}.layers[0], torch.nn.Module), "
        f"{m}.lin.in_features * n))",
        f"out.append({m}.apply(lambda mod: None) is {m})",
        f"for p in {m}.lin.parameters():\n    p.requires_grad_(n % 2 == 1)\nout.append({m}.lin(x))",
    ])
    return pre, op


def _grad_modes(r, k):
    """torch.no_grad / enable_grad / set_grad_enabled / inference_mode as `with` blocks and as decorators,
    nested, with a graph break inside; torch.autocast on the CPU (bfloat16)."""
    pre = (f"@torch.no_grad()\ndef ng{k}(t):\n    return t * 2, torch.is_grad_enabled()\n"
           f"@torch.enable_grad()\ndef eg{k}(t):\n    return (t * 3).requires_grad, torch.is_grad_enabled()\n"
           f"@torch.inference_mode()\ndef im{k}(t):\n    return t + 1\n"
           f"@torch.no_grad()\ndef ngb{k}(t):\n    a = t * 2\n    bytegraph.graph_break()\n"
           f"    return a, (t * 2).requires_grad, torch.is_grad_enabled()\n")
    op = r.choice([
        "w = x.detach().requires_grad_()\nwith torch.no_grad():\n    out.append(((w * 2).requires_grad, "
        "torch.is_grad_enabled()))",
        f"w = x.detach().requires_grad_()\nout.append(ng{k}(w))\nout.append((w * 2).requires_grad)",
        f"w = y.detach().requires_grad_()\nwith torch.no_grad():\n    out.append(eg{k}(w))",
        f"out.append((im{k}(x).is_inference(), im{k}(x)))",
        f"w = x.detach().requires_grad_()\nout.append(ngb{k}(w))\nout.append(torch.is_grad_enabled())",
        "w = x.detach().requires_grad_()\nwith torch.set_grad_enabled(n % 2 == 0):\n    a = w * 2\n"
        "out.append((a.requires_grad, torch.is_grad_enabled()))",
        "w = x.detach().requires_grad_()\nwith torch.no_grad():\n    with torch.enable_grad():\n        a = w * 2\n"
        "    b = w * 2\nout.append((a.requires_grad, b.requires_grad, a, b))",
        "w = x.detach().requires_grad_()\nwith torch.no_grad():\n    a = w * 2\n    bytegraph.graph_break()\n"
        "    b = w * 3\nout.append((a.requires_grad, b.requires_grad, torch.is_grad_enabled()))",
        "with torch.inference_mode():\n    t = x * 2\nout.append((t.is_inference(), t, torch.is_infe"
        "rence_mode_enabled()))",
        "with torch.inference_mode(mode=n % 2 == 0):\n    t = y + 1\nout.append((t.is_inference(), t))",
        "with torch.autocast('cpu', dtype=torch.bfloat16):\n    t = x @ y.t()\n    u = x + y\n"
        "out.append((t.dtype, u.dtype, t.float().sum().round()))",
        "with torch.autocast('cpu', dtype=torch.bfloat16, enabled=n % 2 == 0):\n    t = torch.mm(x, y.t())\n"
        "out.append((t.dtype, torch.is_autocast_enabled('cpu')))",
        "w = x.detach().requires_grad_()\nwith torch.no_grad():\n    w.mul_(2)\nout.append((w.requir"
        "es_grad, w.is_leaf, w))",
        "w = x.detach().requires_grad_()\nprev = torch.is_grad_enabled()\ntry:\n    torch.set_grad_enabled(False)\n"
        "    a = w * 2\n    if n > 4:\n        raise ValueError(n)\nexcept ValueError as e:\n    out.append(e.args)\n"
        "finally:\n    torch.set_grad_enabled(prev)\nout.append((a.requires_grad, torch.is_grad_enabled()))",
        "w = x.detach().requires_grad_()\nwith torch.enable_grad():\n    with torch.no_grad():\n"
        "        bytegraph.graph_break()\n        a = w + 1\n    b = w + 1\nout.append((a.requires_g"
        "rad, b.requires_grad))",
        "w = x.detach().requires_grad_()\nctx = torch.no_grad() if n % 2 else contextlib.nullcontext()\nwith ctx:\n"
        "    a = w.sum()\nout.append((a.requires_grad, a))",
        "w = x.detach().requires_grad_()\nwith torch.no_grad():\n    ys = [w * i for i in range(2)]\n"
        "out.append([t.requires_grad for t in ys])",
    ])
    return pre, op


def _functools_operator(r, k):
    """functools.partial (keywords, nested, its attributes), reduce, lru_cache'd pure helpers, decorators
    made with wraps that take arguments, cmp_to_key, cached_property; operator.itemgetter/attrgetter/
    methodcaller."""
    pre = (f"def lin{k}(t, a, b=0.0, *, scale=1):\n    return t * a * scale + b\n"
           f"@functools.lru_cache(maxsize=None)\ndef fib{k}(m):\n    return m if m < 2 else fib{k}(m"
           f" - 1) + fib{k}(m - 2)\n"
           f"def deco{k}(scale):\n    def wrap(fn):\n        @functools.wraps(fn)\n"
           f"        def inner(*a, **kw):\n            return fn(*a, **kw) * scale\n        return inner\n"
           f"    return wrap\n"
           f"@deco{k}(3)\ndef base{k}(t, b=1):\n    '''base doc'''\n    return t + b\n"
           f"class CP{k}:\n    def __init__(self, v):\n        self.v = v\n        self.hits = 0\n"
           f"    @functools.cached_property\n    def heavy(self):\n        self.hits += 1\n        return self.v * 2\n")
    op = r.choice([
        f"p = functools.partial(lin{k}, b=1.0, scale=n)\nout.append(p(x, 2))",
        f"p = functools.partial(functools.partial(lin{k}, x), n)\nout.append((p(b=2.0), p(scale=2)))",
        f"p = functools.partial(lin{k}, scale=2)\nout.append((len(p.args), sorted(p.keywords), p.func is lin{k}, "
        f"p(n, 3)))",
        f"p = functools.partial(lin{k}, scale=2)\nq = functools.partial(p, scale=n)\nout.append(q(y, 1.0))",
        "out.append(functools.reduce(lambda a, b: a * 0.5 + b, [x, y, x], y))",
        "out.append((functools.reduce(operator.mul, lst, 1), functools.reduce(max, lst or [n])))",
        f"out.append(x * fib{k}(n))",
        f"out.append((fib{k}(n + 3), fib{k}.cache_info().currsize > 0))",
        f"out.append((base{k}(x, b=n), base{k}.__name__, base{k}.__doc__, base{k}.__wrapped__(n)))",
        f"out.append(base{k}(n) + base{k}.__wrapped__(y).sum())",
        "out.append(operator.itemgetter(0, -1)(lst + [n]))",
        "out.append(sorted(d.items(), key=operator.itemgetter(1, 0)))",
        "out.append(operator.attrgetter('shape', 'dtype')(x))",
        "out.append(operator.methodcaller('sum', dim=0)(x))",
        "out.append(operator.methodcaller('split', 'b')(s) + [operator.attrgetter('real')(n)])",
        "out.append(list(map(operator.itemgetter(1), [(x, y), (y, x)])))",
        "out.append(sorted(lst, key=functools.cmp_to_key(lambda a, b: b - a)))",
        f"c = CP{k}(x)\nout.append((c.heavy, c.heavy, c.hits, 'heavy' in vars(c)))",
        f"c = CP{k}(n)\nc.heavy\ndel c.heavy\nout.append((c.heavy, c.hits))",
        "out.append((operator.add(x, n), operator.neg(y), operator.truediv(n, 2), operator.getitem(lst + [1], 0)))",
        "f2 = functools.partial(torch.clamp, min=-0.5)\nout.append(f2(x, max=n))",
        "out.append(list(map(functools.partial(operator.mul, n), lst)))",
    ])
    return pre, op


def _user_classes(r, k):
    """Inheritance with super(), iterator classes, __len__/__bool__/__contains__/__eq__/__hash__ used by
    dicts and sets, a data descriptor, properties with setters, classmethod/staticmethod, class attributes
    mutated by the program and between calls."""
    pre = (f"class Base{k}:\n    registry = []\n"
           f"    def __init__(self, v):\n        self._v = v\n"
           f"    @property\n    def v(self):\n        return self._v\n"
           f"    @v.setter\n    def v(self, val):\n        self._v = val * 2\n"
           f"    def scaled(self, t):\n        return t * self.factor()\n"
           f"    def factor(self):\n        return 1\n"
           f"    @classmethod\n    def create(cls, v):\n        cls.registry.append(v)\n        return cls(v)\n"
           f"    @staticmethod\n    def helper(a, b=2):\n        return a * b\n"
           f"class Child{k}(Base{k}):\n"
           f"    def __init__(self, v, extra=1):\n        super().__init__(v)\n        self.extra = extra\n"
           f"    def factor(self):\n        return super().factor() + self.extra\n"
           f"class Count{k}:\n"
           f"    def __init__(self, m):\n        self.m = m\n        self.i = 0\n"
           f"    def __iter__(self):\n        return self\n"
           f"    def __next__(self):\n        if self.i >= self.m:\n            raise StopIteration\n"
           f"        self.i += 1\n        return self.i * 2\n"
           f"class Key{k}:\n"
           f"    def __init__(self, a):\n        self.a = a\n"
           f"    def __eq__(self, o):\n        return isinstance(o, Key{k}) and self.a % 3 == o.a % 3\n"
           f"    def __hash__(self):\n        return hash(self.a % 3)\n"
           f"    def __len__(self):\n        return self.a % 4\n"
           f"    def __contains__(self, v):\n        return v == self.a\n"
           f"    def __bool__(self):\n        return self.a > 2\n"
           f"class Desc{k}:\n"
           f"    def __set_name__(self, owner, name):\n        self.name = '_' + name\n"
           f"    def __get__(self, obj, objtype=None):\n        if obj is None:\n            return self\n"
           f"        return getattr(obj, self.name, 0) + 100\n"
           f"    def __set__(self, obj, value):\n        setattr(obj, self.name, value * 3)\n"
           f"class HasDesc{k}:\n    d = Desc{k}()\n    shared = 1\n"
           f"class G_KS{k}:\n    level = 1\n    seen = []\n"
           f"    @classmethod\n    def between_calls(cls, call):\n        cls.level += call\n       "
           f" cls.seen.append(call)\n")
    op = r.choice([
        f"c = Child{k}(n, extra=2)\nout.append((c.scaled(x), c.v, c.factor(), isinstance(c, Base{k})))",
        f"c = Base{k}(1)\nc.v = n\nout.append((c.v, c._v))",
        f"c = Child{k}.create(n)\nout.append((type(c).__name__, len(Base{k}.registry), Base{k}.helper(n), "
        f"c.helper(x)))",
        f"out.append(list(Count{k}(n % 4)))",
        f"out.append(sum(Count{k}(3)) * x)",
        f"it = Count{k}(4)\nout.append((next(it), next(it), [v for v in it], next(it, None)))",
        f"for v in Count{k}(2):\n    x = x + v\nout.append(x)",
        f"dd = {{Key{k}(n): 'a', Key{k}(n + 3): 'b'}}\nout.append((len(dd), dd[Key{k}(n)], Key{k}(n + 6) in dd))",
        f"st = {{Key{k}(v) for v in lst}}\nout.append((len(st), Key{k}(n) in st))",
        f"kk = Key{k}(n)\nout.append((len(kk), n in kk, 3 in kk, bool(kk), 'y' if kk else 'n', not kk))",
        f"if Key{k}(len(lst)):\n    out.append(x + 1)\nelse:\n    out.append(y)",
        f"h = HasDesc{k}()\nh.d = n\nout.append((h.d, HasDesc{k}.d.name, vars(h)))",
        f"HasDesc{k}.shared += 1\nout.append(HasDesc{k}.shared * x)",
        f"out.append((G_KS{k}.level * x, list(G_KS{k}.seen)))",
        f"G_KS{k}.level = n\nout.append(G_KS{k}.level + 1)",
        f"out.append((Child{k}.mro()[1].__name__, issubclass(Child{k}, Base{k}), Child{k}.__bases__[0] is Base{k}))",
        f"c = Child{k}(x)\nc.v = y\nout.append(c.scaled(c.v))",
        f"items = sorted([Key{k}(v) for v in lst], key=lambda o: o.a)\nout.append([o.a for o in items])",
        f"out.append(collections.Counter(Key{k}(v) for v in lst + [n]).most_common(1)[0][1])",
        f"out.append(list(zip(Count{k}(3), lst)) + list(enumerate(Count{k}(2))))",
    ])
    return pre, op


def _tensor_python(r, k):
    """Tensor values steering Python: .item(), .tolist(), bool/int/float of tensors, shape/size/dim/numel
    arithmetic, torch.Size operations, dtype promotion with Python int/float/bool/complex scalars."""
    op = r.choice([
        "v = x[0, 0].item()\nout.append(x * 2 if v > 0 else y * 3)",
        "out.append((x[0].tolist(), [round(v, 2) for v in y[:, 0].tolist()]))",
        "out.append((bool(x[0, 0] > 0), int(x[1, 1] * 10), float(y.max()), complex(x[0, 1])))",
        "kk = int((x > 0).sum())\nout.append(x.flatten()[:kk])",
        "out.append((torch.Size([n, 2]) + x.shape, x.shape[::-1], x.shape.numel(), torch.Size((x.shape[0] * 2,))))",
        "out.append(x.new_zeros(x.shape[:1] + (n + 1,)))",
        "out.append(x.dim() + x.ndimension() + x.numel() // 4 + len(x) + x.size(-1))",
        "out.append((x * 2, x + True, x.int() + 2.5, x.int() * True, (x > 0) + 1, (x > 0) * 1.5))",
        "out.append((x * complex(1, n), (x.int() + 1j).dtype))",
        "out.append((x.long() + n, x.int() // 2, x.int() % 3, torch.tensor(n) * 1.5, torch.tensor(True) + n))",
        "out.append(torch.tensor([1, 2], dtype=torch.int8) + 300 + n)",
        "out.append((torch.tensor([250], dtype=torch.uint8) + 10, torch.tensor([n], dtype=torch.int16) * 40000))",
        "out.append(bool(x.sum() > 0) and n > 1)",
        "out.append(x.max().item() > y.max().item())",
        "t = torch.tensor(lst or [n])\nout.append((t.tolist(), t.sum().item(), t.max().item(), t.dtype))",
        "out.append(torch.zeros(int(x.abs().sum() > 5) + 1, 2))",
        "out.append(x.shape[0] * x.new_ones(()).item() + n)",
        "if (x[0] > 0).all():\n    out.append('pos')\nelif (x[0] < 0).any():\n    out.append('some neg')",
        "ids = (x[:, 0] > 0).nonzero().flatten().tolist()\nout.append((ids, [x[i, 0] for i in ids]))",
        "out.append(x[int(x[0, 0] > 0)] + y[-1])",
        "sz = x.size()\nout.append((sz == (x.shape[0], 4), sz[1:] * 2, list(sz), sz.index(4)))",
        "out.append((x.shape[0] // 2 * 2, -x.shape[1], x.shape[0] ** 2 % 7, max(x.shape), min(x.shape) * n))",
        "out.append(range(x.shape[0])[n % x.shape[0]] + x.shape.count(4))",
        "out.append([int(v) for v in x[0] > 0] + [float(v) for v in torch.arange(2)])",
        "out.append(x.sum(0).tolist() == y.sum(0).tolist())",
        "out.append(torch.tensor(x.shape) * 2 + torch.tensor([n, True]))",
        "out.append((x.float() ** 2).sum().item() >= 0 and x.numel() > 0)",
        "out.append((abs(x[0, 0]), -x[0, 0], round(float(x[0, 0]), 3), math.floor(x[0, 0])))",
        "out.append((n + x[0, 0], n * y[1], 2 ** x[0, :2], n // torch.tensor(2), 7 % torch.tensor(n + 1)))",
    ])
    return "", op


def _torch_nontensor(r, k):
    """torch functions that answer with non-tensors (is_tensor, is_floating_point, dtypes, finfo/iinfo,
    default dtype, broadcast_shapes, result_type) and torch calls taking 0-d tensors as scalars."""
    op = r.choice([
        "out.append((torch.is_tensor(x), torch.is_tensor(n), torch.is_floating_point(x), "
        "torch.is_floating_point(x.long()), torch.is_complex(x)))",
        "out.append((x.dtype == torch.float32, x.dtype is torch.float, x.dtype.is_floating_point, x.dtype.itemsize))",
        "out.append((torch.get_default_dtype(), torch.tensor(1.5).dtype == torch.get_default_dtype()))",
        "fi = torch.finfo(x.dtype)\nout.append((fi.eps, fi.max > 1e30, fi.bits, fi.tiny > 0))",
        "out.append((torch.iinfo(torch.int8).max + n, torch.iinfo(torch.int32).min))",
        "out.append(x.clamp(max=torch.finfo(x.dtype).max, min=-torch.finfo(x.dtype).tiny))",
        "out.append(torch.full((2,), torch.iinfo(torch.int16).min) + n)",
        "out.append((torch.broadcast_shapes(x.shape, (1, 4)), torch.broadcast_shapes((n + 1, 1), (1, 3))))",
        "t = torch.tensor(n)\nout.append((x.pow(t), x.clamp(min=torch.tensor(0.0)), x.new_full((2,), t)))",
        "out.append(torch.arange(torch.tensor(n) + 1) * 2)",
        "out.append((x * torch.tensor(2), x.int() * torch.tensor(2.5), x.half() + torch.tensor(1.0, "
        "dtype=torch.float64)))",
        "out.append(x.roll(int(torch.tensor(n)), 0))",
        "out.append((torch.numel(x), torch.result_type(x, 2.5), torch.can_cast(x.dtype, torch.int32), "
        "torch.promote_types(torch.int8, torch.uint8)))",
        "out.append((torch.is_nonzero(x[0, 0]), torch.equal(x, y), torch.equal(x, x.clone()), "
        "torch.allclose(x, x + 1e-9)))",
        "out.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled(), "
        "torch.are_deterministic_algorithms_enabled()))",
        "out.append((x.is_contiguous(), x.t().is_contiguous(), x[1:].storage_offset(), x.element_size(), "
        "x.nbytes))",
        "out.append((torch.typename(x), x.type(), x.int().type(), x.is_floating_point(), x.is_signed()))",
        "out.append(x.to(torch.get_default_dtype()) if x.dtype != torch.get_default_dtype() else -x)",
        "dt = torch.float64 if n % 2 else torch.int32\nout.append((x.to(dt), torch.zeros(2, dtype=dt"
        ").dtype.is_floating_point))",
        "out.append(torch.tensor(3.5, dtype=torch.float64).item() * x if x.dtype.is_floating_point else x)",
        "out.append((x.device, x.device == torch.device('cpu'), str(x.device), x.is_cpu, x.layout))",
        "out.append(x.narrow(0, torch.tensor(1), 2))",
        "out.append((torch.tensor(n).item(), torch.tensor(n).tolist(), torch.tensor([n, 2]).tolist()))",
        "out.append(x.index_select(0, torch.tensor([0, n % x.shape[0]])))",
    ])
    return "", op


def _numpy_interop(r, k):
    """numpy arrays made from tensors (sharing their memory: a write to the array is a write to the tensor)
    and tensors made from arrays; numpy functions and scalars in between."""
    pre = "import numpy as np\n"
    op = r.choice([
        "a = x.numpy()\nout.append(torch.from_numpy(a * 2 + n))",
        "a = x.detach().numpy().copy()\na[0] = n\nout.append((torch.from_numpy(a), x))",
        "a = x.numpy()\na *= 2\nout.append(x.sum())",
        "out.append(float(np.mean(y.numpy())) > 0)",
        "out.append(torch.as_tensor(np.arange(n)) + 1)",
        "out.append(torch.tensor(np.array(lst + [n], dtype=np.int64)) * 2)",
        "out.append(torch.from_numpy(np.where(x.numpy() > 0, 1.0, -1.0)))",
        "out.append(x * np.float32(1.5))",
        "out.append((torch.tensor(np.float64(n)).dtype, torch.tensor(np.int32(n)) + 1))",
        "out.append(x.new_tensor(np.array(lst or [n])))",
        "a = np.asarray(y)\na[:, 0] = n\nout.append(y)",
        "out.append(np.array(x.shape).tolist() + [int(np.prod(x.shape))])",
        "out.append(torch.from_numpy(np.stack([x.numpy(), y.numpy()])).sum(0))",
        "t = torch.from_numpy(np.ones((2, 2), dtype=np.float32))\nt.add_(n)\nout.append(t)",
        "a = (x + 1).numpy()\nout.append(torch.tensor(a.tolist()) - 1)",
        "out.append(np.allclose(x.numpy(), x.numpy() + 1e-9))",
        "out.append(np.float64(x[0, 0].item()) + n)",
        "out.append(torch.from_numpy(np.cumsum(x.numpy(), axis=1)))",
    ])
    return pre, op


def _stdlib_mix(r, k):
    """The standard library users reach for next to tensors: seeded `random`, `math`, itertools (chain,
    zip_longest, accumulate, groupby, product...), str methods and format specs of tensor-derived numbers."""
    pre = "import random\n"
    op = r.choice([
        "rng = random.Random(n)\nout.append([rng.randint(0, 9) for _ in range(3)] + [rng.random()])",
        "random.seed(n)\nout.append((random.random(), random.choice(s or 'z'), random.sample(range(10), 2)))",
        "rng = random.Random(s)\nlst2 = list(lst)\nrng.shuffle(lst2)\nout.append(lst2)",
        "out.append((math.gcd(n, 12), math.comb(n + 2, 2), math.factorial(n % 6), math.log2(n + 1), "
        "math.copysign(1.0, -n), math.fsum([0.1] * n)))",
        "out.append(x * math.cos(n) + math.exp(-n))",
        "out.append(math.isfinite(x[0, 0].item()) and math.trunc(x[0, 0].item() * 10))",
        "out.append(list(itertools.chain.from_iterable([lst, [n]])))",
        "out.append(list(itertools.zip_longest(lst, s, fillvalue='-')))",
        "out.append(list(itertools.accumulate(lst, operator.mul, initial=1)))",
        "out.append([(kk, list(g)) for kk, g in itertools.groupby(sorted(lst), key=lambda v: v // 3)])",
        "out.append(list(itertools.product(s[:2], range(2))) + list(itertools.combinations(lst[:4], 2)))",
        "out.append((list(itertools.permutations(range(3), 2))[:n], list(itertools.starmap(pow, [(2, n), (3, 2)]))))",
        "out.append((list(itertools.takewhile(lambda v: v < 5, lst)), list(itertools.pairwise(lst))))",
        "out.append(list(zip(itertools.count(n), s)) + list(itertools.compress(lst, [1, 0, 1])))",
        "out.append(sum(a * b for a, b in itertools.zip_longest([x, y], [n], fillvalue=1)))",
        "out.append(list(itertools.accumulate([x, y, x])))",
        "v = x[0, 0].item()\nout.append(f'{v:.3f}|{v:+.1e}|{int(v * 10):>5}|{x.shape[0]:#x}|{v:.1%}')",
        "out.append('{:08.3f}'.format(float(x[0, 0])) + '%-6.2f|' % y[0, 1].item())",
        "out.append((str(round(x[0, 0].item(), 2)), format(x[0, 1].item(), '.2e'), f'{n:b}{x.shape[0]:03d}'))",
        "out.append('{:.2f}'.format(x[0, 0]) + f'{y[1, 1]:.1f}')",
        "out.append(s.join(str(v) for v in x[0, :2].tolist()))",
        "out.append(repr(x[0, :2]) + str(x.dtype).split('.')[-1])",
        "out.append((s.title().swapcase(), s.partition('b'), s.rjust(n, '.'), s.translate(str.maketrans('ab', 'ba'))))",
        "out.append((s.casefold(), s.isalpha(), '-'.join(reversed(s)), s.removeprefix('a'), s.count('')))",
        "out.append(f'{s!s:>{n + 1}}|{s:^6}|{len(s):<3}|' + '{0}{1}{0}'.format(s, n))",
        "out.append(sorted(s.split(), key=str.lower) + [s[::-1].upper()])",
    ])
    return pre, op


def _modules_more(r, k):
    """nn.Modules the environment changes between calls in ways that must recompile or be read again:
    a parameter rebound or its dtype changed, a bias set to None, a submodule swapped, a buffer added, the
    module's dtype converted, a hook added; and modules used the ways users write them (Sequential
    slicing, named_parameters, functional calls with the module's tensors, methods other than forward)."""
    change = r.choice([
        "self.lin.bias = None",
        "self.lin.weight = torch.nn.Parameter(self.lin.weight.detach() * 2)",
        "self.body[1] = torch.nn.Sigmoid()",
        "self.register_buffer('extra', torch.ones(4))",
        "self.double()",
        "self.lin.weight.requires_grad_(False)",
        "self.body.append(torch.nn.Tanh())",
        "self.register_forward_pre_hook(lambda mod, inp: (inp[0] * 0.5,))",
        "self.gain = torch.tensor(3.0)",
        "self.mode = 'sum' if self.mode == 'mean' else 'mean'",
    ])
    pre = (f"class N{k}(torch.nn.Module):\n"
           f"    def __init__(self):\n        super().__init__()\n"
           f"        self.lin = torch.nn.Linear(4, 4)\n"
           f"        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))\n"
           f"        self.gain = 2.0\n        self.mode = 'mean'\n"
           f"    def forward(self, t):\n"
           f"        h = self.body(self.lin(t.to(self.lin.weight.dtype))) * self.gain\n"
           f"        if getattr(self, 'extra', None) is not None:\n            h = h + self.extra\n"
           f"        return h.mean(0) if self.mode == 'mean' else h.sum(0)\n"
           f"    def score(self, t, k=1):\n        return self(t).topk(k).values\n"
           f"    def between_calls(self, call):\n"
           f"        if call == 2:\n            {change}\n"
           f"torch.manual_seed({k} + 100)\nG_NET{k} = N{k}()\n")
    m = f"G_NET{k}"
    op = r.choice([
        f"out.append({m}(x))",
        f"out.append(({m}(x), {m}.score(y, k=2)))",
        f"out.append({m}.body[:2](x) + {m}.body[-1].bias)",
        f"out.append(sorted(name for name, _ in {m}.named_parameters()))",
        f"out.append(sum(p.numel() for p in {m}.parameters() if p.requires_grad))",
        f"out.append(torch.nn.functional.linear(x.to({m}.lin.weight.dtype), {m}.lin.weight) * {m}.gain)",
        f"h = x\nfor layer in {m}.body:\n    if isinstance(layer, torch.nn.Linear):\n"
        f"        h = layer(h.to(layer.weight.dtype))\n    else:\n        h = layer(h)\nout.append(h)",
        f"out.append(({m}.lin.bias is None, {m}.lin.weight.dtype, len({m}.body), {m}.mode))",
        f"out.append({m}(x) if {m}.training else -{m}(x))",
        f"with torch.no_grad():\n    out.append({m}(x + n))",
        f"out.append(torch.func.functional_call({m}.lin, dict({m}.lin.named_parameters()), "
        f"(x.to({m}.lin.weight.dtype),)))",
        f"out.append([type(c).__name__ for c in {m}.body.children()])",
        f"out.append({m}.state_dict().keys() == dict({m}.named_parameters()).keys() | set(dict({m}.named_buffers())))",
        f"out.append(({m}(x).sum() * 0 + n).item())",
    ])
    return pre, op


def _grad_modes_more(r, k):
    """Grad-mode managers in the less common places: as decorators on methods and generators, set_grad_enabled
    as a decorator, a manager made once at module level and entered on every call, a grad mode the environment
    leaves changed between calls, autograd inside no_grad with enable_grad."""
    pre = (f"NG{k} = torch.no_grad()\n"
           f"class GM{k}:\n"
           f"    @torch.no_grad()\n    def run(self, t):\n        return (t * 2).requires_grad\n"
           f"    @torch.enable_grad()\n    def grad_of(self, t):\n"
           f"        w = t.detach().requires_grad_()\n        (w * w).sum().backward()\n        return w.grad\n"
           f"@torch.set_grad_enabled(False)\ndef sge{k}(t):\n    return (t * 2).requires_grad\n"
           f"@torch.no_grad()\ndef gen{k}(t):\n    for i in range(2):\n        yield (t * i).requires_grad\n")
    op = r.choice([
        f"w = x.detach().requires_grad_()\nout.append((GM{k}().run(w), (w * 2).requires_grad))",
        f"with torch.no_grad():\n    out.append(GM{k}().grad_of(x))",
        f"w = x.detach().requires_grad_()\nout.append((sge{k}(w), (w + 1).requires_grad))",
        f"w = x.detach().requires_grad_()\nout.append(list(gen{k}(w)) + [(w * 3).requires_grad])",
        f"w = y.detach().requires_grad_()\nwith NG{k}:\n    a = w * 2\nwith NG{k}:\n    b = w * 3\n"
        f"out.append((a.requires_grad, b.requires_grad, (w * 4).requires_grad))",
        "w = x.detach().requires_grad_()\nwith torch.no_grad():\n    v = w * 2\nv2 = v * w\n"
        "out.append((v.requires_grad, v2.requires_grad, v2.grad_fn is None))",
        "w = x.detach().requires_grad_()\nwith torch.enable_grad():\n    loss = (w * n).sum()\n"
        "g, = torch.autograd.grad(loss, w)\nout.append(g)",
        "w = x.detach().requires_grad_()\nwith torch.autocast('cpu', dtype=torch.bfloat16):\n"
        "    h = torch.mm(w, y.t())\nout.append((h.dtype, h.requires_grad, h.float()))",
        "w = x.detach().requires_grad_()\nwith torch.no_grad():\n    t = w.clone()\n    t.add_(1)\n"
        "out.append((t.requires_grad, t, w.sum().requires_grad))",
    ])
    return pre, op


def _global_state(r, k):
    """Torch's global state changed by the environment between calls (on call 2, restored on call 3): the
    default dtype, grad mode, an autocast or inference_mode region left open around the call, deterministic
    algorithms, print options; the program's ops read it. (A STATE global: the process has one torch state, so
    it is changed once, through the eager namespace's object, for both runs; see check.)"""
    state = r.choice([
        ("torch.set_default_dtype(torch.float64)", "torch.set_default_dtype(torch.float32)"),
        ("torch.set_grad_enabled(False)", "torch.set_grad_enabled(True)"),
        ("self.ctx = torch.autocast('cpu', dtype=torch.bfloat16)\n            self.ctx.__enter__()",
         "self.ctx.__exit__(None, None, None)"),
        ("self.ctx = torch.inference_mode()\n            self.ctx.__enter__()", "self.ctx.__exit__(None, None, None)"),
        ("torch.use_deterministic_algorithms(True)", "torch.use_deterministic_algorithms(False)"),
        ("torch.set_printoptions(precision=2)", "torch.set_printoptions(precision=4)"),
    ])
    pre = (f"class State{k}:\n"
           f"    active = False\n"
           f"    def between_calls(self, call):\n"
           f"        if call == 2:\n            {state[0]}\n            self.active = True\n"
           f"        elif call == 3:\n            self.restore()\n"
           f"    def restore(self):\n"
           f"        if self.active:\n            self.active = False\n            {state[1]}\n"
           f"STATE{k} = State{k}()\n")
    op = r.choice([
        "out.append(torch.tensor(1.5) * x + torch.ones(2).sum())",
        "out.append((torch.tensor([n, 2.5]).dtype, torch.arange(n) * 0.5, torch.get_default_dtype()))",
        "w = x.detach().requires_grad_()\nout.append(((w * 2).requires_grad, torch.is_grad_enabled()))",
        "out.append((x @ y.t(), torch.mm(x, y.t()).dtype))",
        "t = x * 2\nout.append((t.is_inference(), t))",
        "out.append((repr(x[0, :2]), str(torch.tensor([1 / 3]))))",
        "out.append((torch.are_deterministic_algorithms_enabled(), x.index_add(0, torch.tensor([0, 0]), y[:2])))",
        "out.append(torch.zeros(2, 2) + x[:2, :2].double().float())",
        "out.append(torch.nn.functional.linear(x, y[:2]))",
        "out.append(x.new_tensor([n]) + torch.full((1,), 0.5))",
    ])
    return pre, op



def _value_raises(r, k):
    """Graph ops that raise or not by the values of the inputs (an index out of range, a matrix that is not
    positive definite), inside the program's try / except / finally / with blocks, in a called function, or
    leaving `f` after effects on its arguments. (Indices computed from x: a graph input, unknown when tracing.)"""
    pre = f"def pick{k}(t, j, log):\n    try:\n        return t[j]\n    finally:\n        log.append('picked')\n"
    op = r.choice([
        "j = (x[0].abs() * 4).long()\ntry:\n    out.append(y[j])\nexcept IndexError:\n    out.append('oob')",
        "lst.append(len(out))\nd['last'] = n\nj = (x[0].abs() * 4).long()\nout.append(x.flatten()[j].sum())",
        "m = x[:2, :2] @ x[:2, :2].t() - n * 0.5\ntry:\n    out.append(torch.linalg.cholesky(m))\n"
        "except RuntimeError:\n    out.append('not pd')",
        "j = (x[:, :1].abs() * 3).long()\ntry:\n    with torch.no_grad():\n        out.append(y.gather(1, j))\n"
        "except RuntimeError:\n    out.append(('gather', torch.is_grad_enabled()))",
        "j = (y[0].abs() * 3).long()\ntry:\n    out.append(torch.nn.functional.embedding(j, x))\n"
        "except IndexError:\n    out.append('emb')\nfinally:\n    lst.append('fin')",
        f"try:\n    out.append(pick{k}(y, (x[0].abs() * 4).long(), lst))\nexcept IndexError as e:\n"
        "    out.append(type(e).__name__)",
        "w = x.detach().requires_grad_()\nj = (x[0].abs() * 4).long()\ntry:\n    out.append((w * 2)[j].sum())\n"
        "except IndexError:\n    out.append(torch.is_grad_enabled())",
        "torch.manual_seed(n)\nt = torch.rand(3)\nj = (x[0].abs() * 4).long()\ntry:\n    out.append((t, y[j]))\n"
        "except IndexError:\n    out.append((t, torch.rand(1)))",
    ])
    return pre, op

def _metadata_raises(r, k):
    """Graph ops raising by value after an input's sizes or strides were changed in place (`y.t_()`,
    `unsqueeze_`, `as_strided_`, aten's `t_`), put back in a finally block or by a later op, or left changed
    when the raise leaves `f`; with effects before the raise and writes into the input."""
    j = "(x[0, :2].abs() * 4).long()"   # (1-d: a 0-d index tensor is read as a number, a break)
    op = r.choice([
        f"y.t_()\ntry:\n    out.append(y[{j}])\nexcept IndexError:\n    out.append('oob')\nfinally:\n    y.t_()",
        f"lst.append(tuple(y.shape))\ny.unsqueeze_(0)\ntry:\n    out.append(y[0][{j}].sum())\nfinally:\n"
        "    y.squeeze_(0)",
        "x.transpose_(0, 1)\nd['t'] = n\ntry:\n"
        "    out.append(torch.linalg.cholesky(x[:2, :2] @ x[:2, :2].t() - n * 0.5))\n"
        "except RuntimeError:\n    out.append(('not pd', x.shape))\nx.transpose_(0, 1)",
        f"y.swapdims_(0, 1)\ny.mul_(2)\ntry:\n    out.append(y[{j}])\nexcept IndexError:\n    out.append(y.shape)\n"
        "y.swapdims_(0, 1)",
        f"sh, st, off = y.shape, y.stride(), y.storage_offset()\ny.as_strided_((y.numel(),), (1,))\ny.add_(1)\n"
        f"try:\n    out.append(y[{j}])\nexcept IndexError:\n    out.append('oob')\nfinally:\n"
        "    y.as_strided_(sh, st, off)",
        f"lst.append(n)\ny.t_()\nout.append(y[{j}])\ny.t_()",
        f"torch.ops.aten.t_(y)\nlst.append(y.shape[0])\ntry:\n    out.append(y[{j}])\nfinally:\n"
        "    torch.ops.aten.t_(y)",
        f"y.detach_()\nlst.append(n)\nout.append(y[{j}] * 2)",
        f"x.unsqueeze_(1)\nx.add_(0.5)\nd['u'] = x.shape[1]\ntry:\n    out.append(x[:, 0][{j}])\nexcept IndexError:\n"
        "    out.append('oob')\nx.squeeze_(1)",
        # the same class: other changes of an input a graph can make before a raise
        f"y.requires_grad_()\nlst.append(n)\ntry:\n    out.append((y * 2)[{j}].detach())\nfinally:\n"
        "    y.requires_grad_(False)",
        f"torch._foreach_add_([x, y], [y, x], alpha=0.5)\nd['fe'] = n\nout.append(x.flatten()[{j}])",
        f"y.as_strided((2,), (1,), y.storage_offset()).add_(1)\nlst.append(n)\nout.append(y.flatten()[{j}])",
        f"out.append(torch.nn.functional.batch_norm(x, RM{k}[:x.shape[1]], RV{k}[:x.shape[1]], training=True))\n"
        f"lst.append(n)\nout.append((y.flatten()[{j}], RM{k}[:2]))",
    ])
    pre = f"RM{k} = torch.zeros(64)\nRV{k} = torch.ones(64)\n" if "batch_norm" in op else ""
    return pre, op



# containers, the ways `_held_iterators` holds an iterator over each, and the changes it makes to each
_HELD_CONTAINERS = {
    "dict": (["{'a': n, 'b': 2, 'c': 3}", "d", "{1: 'i', 2.0: 'f', 'c': n}", "dict.fromkeys('abcde', n)"],
             ["iter(c)", "reversed(c)", "iter(c.keys())", "iter(c.items())", "iter(c.values())", "enumerate(c)"]),
    "od": (["collections.OrderedDict(a=1, b=n, c=3)", "collections.OrderedDict([(1, 'i'), (2.0, 'f'), ('c', n)])"],
           ["iter(c)", "reversed(c)", "iter(c.keys())", "iter(c.items())", "reversed(c.values())"]),
    "dd": (["collections.defaultdict(int, a=1, b=n, c=3)", "collections.defaultdict(list, {1: [n], 'b': []})"],
           ["iter(c)", "reversed(c)", "iter(c.items())", "zip(c, c.values())"]),
    "set": (["{n, n + 8, 16, 3}", "set(lst)", "{8, 16, 24}", "{1, 2.0, 'a', n}", "set(range(12)) - {n, 3, 5}"],
            ["iter(c)", "enumerate(c)", "zip(c, 'abcdef')"]),
    "list": (["lst", "[n, 1, 2, 3]", "list(d)"], ["iter(c)", "reversed(c)", "enumerate(c)", "zip(c, c)"]),
    "deque": (["collections.deque(lst)", "collections.deque([n, 1, 2], maxlen=4)"], ["iter(c)", "reversed(c)"]),
}
_DICT_CHANGES = ["c['z'] = n", "c['a'] = n + 1", "c.pop('b', None)", "c.popitem() if c else None", "c.update(q=1, a=2)",
                 "c.setdefault('w', 0)", "c.clear()", "c[1.0] = 'f'", "c[True] = 't'", "c['b'] = c.pop('b', 0)",
                 "c.pop(1, None)", "if 'c' in c:\n    del c['c']", "c |= {'c': 9, 'y': n}"]
_HELD_CHANGES = {
    "dict": _DICT_CHANGES,
    "od": _DICT_CHANGES + ["c.move_to_end('a') if 'a' in c else None",
                           "c.move_to_end('c', last=False) if 'c' in c else None",
                           "c.popitem(last=False) if c else None"],
    "dd": _DICT_CHANGES + ["c['m'] = c['m']", "c['b'] if isinstance(c['b'], list) else None"],
    "set": ["c.add(n)", "c.discard(8)", "c.add(24)", "c.discard(n)", "c |= {9, 17}", "c -= {n}",
            "c &= {n, 8, 16, 3, 24, 1, 2}", "c ^= {1, 9}", "c.update([n + 16, 40])", "c.pop() if c else None",
            "c.clear()", "c.update(dict.fromkeys([5, 13]))", "c.add(1.0)", "c.add(True)", "c.discard(1)",
            "c.update({32, 40, 48})", "c.remove(3) if 3 in c else None"],
    "list": ["c.append(n)", "c.insert(0, n)", "c.pop(0) if c else None", "c.sort()", "c.reverse()",
             "c[1:2] = [7, 7]", "c.extend([n, 5])", "c.clear()", "del c[:1]", "c += [n]",
             "c.remove(c[0]) if c else None"],
    "deque": ["c.append(n)", "c.appendleft(n)", "c.pop() if c else None", "c.popleft() if c else None", "c.rotate(1)",
              "c.extend([n, 5])", "c.clear()"],
}


def _held_iterators(r, k):
    """An iterator (or a keys/items/values view's, reversed, enumerate, zip) over a container, made by code
    that runs eagerly (a `bytegraph.disable` function) and partly consumed there; compiled code then changes
    the container (with graph breaks between the changes at times) and eager code reads the rest of the
    iterator: what it sees depends on how the container's table changed (a dict's entries, an OrderedDict's
    linked list, a set's slots), which the write-back after each compiled frame must reproduce; then the
    container's order and the key objects it holds (1, 1.0 and True are one key)."""
    pre = (f"@bytegraph.disable\ndef hold{k}(make, *args):\n    return make(*args)\n"
           f"@bytegraph.disable\ndef drain{k}(it, m):\n    got = []\n    for _ in range(m):\n        try:\n"
           "            got.append(next(it))\n        except StopIteration:\n            got.append('stop')\n"
           "            break\n        except RuntimeError as e:\n            got.append(('RuntimeError', str(e)))\n"
           "            break\n    return got\n")
    kind = r.choice(sorted(_HELD_CONTAINERS))
    makers, holds = _HELD_CONTAINERS[kind]
    lines = [f"c = {r.choice(makers)}"]
    if kind == "set" and r.random() < 0.3:
        lines.append("c.discard(n + 8)")        # a dummy slot in the set's table from before
    if kind in ("dict", "od", "dd") and r.random() < 0.3:
        lines.append("c.pop('a', None)")        # a hole in the dict's entries from before
    hold = r.choice(holds)
    if hold in ("iter(c)", "reversed(c)", "enumerate(c)") and r.random() < 0.5:
        lines.append(f"it = hold{k}({hold[:-3]}, c)")       # made eagerly (c not a closure's cell)
    elif r.random() < 0.8:
        lines.append(f"it = hold{k}(lambda: {hold})")      # made eagerly
    else:
        lines.append(f"it = {hold}")                        # made in compiled code, held across a break
    lines.append(f"out.append(drain{k}(it, {r.randint(0, 2)}))")
    lines.append("out.append(x * len(c))")
    for _ in range(r.randint(1, 3)):
        lines.append(r.choice(_HELD_CHANGES[kind]))
        if r.random() < 0.25:
            lines.append("bytegraph.graph_break()")
    lines.append("out.append(y + len(c))")
    lines.append(f"out.append(drain{k}(it, 8))")
    lines.append("out.append([(kk, type(kk).__name__) for kk in c])")
    return pre, "\n".join(lines)


# the first generation of families (`--narrow`: the programs that seeds made before the families below)
NARROW_SNIPPETS = [_containers_list, _containers_tuple, _containers_dict, _containers_set, _closures, _classes,
                   _exceptions, _generators, _comprehensions, _globals, _strings, _builtins, _arith, _tensors,
                   _tensor_control, _with_blocks, _control, _tensor_numbers]
# tensor-only programs capture in one graph more often: weight them so the capture figure means something
NARROW_WEIGHTS = [3, 2, 3, 2, 2, 3, 3, 2, 2, 3, 2, 3, 3, 6, 1, 2, 2, 2]
# the second generation (`families="second"`: the programs seeds made before the third pass's families)
SECOND_SNIPPETS = NARROW_SNIPPETS + [_breaks, _dynamic_keys, _views, _metadata, _objects, _closures_more,
                                     _exceptions_more, _globals_more, _grad_dtype_rng]
SECOND_WEIGHTS = NARROW_WEIGHTS + [3, 3, 3, 4, 2, 2, 2, 2, 2]
# the third pass's families alone (`families="new"`: programs made only of them)
NEW_SNIPPETS = [_modules, _grad_modes, _functools_operator, _user_classes, _tensor_python, _torch_nontensor,
                _numpy_interop, _stdlib_mix]
NEW_WEIGHTS = [4, 3, 3, 3, 4, 3, 2, 3]
# added later in the third pass (`families="new2"`, and in "all" after the ones above: seeds of "new" keep
# their programs)
NEW2_SNIPPETS = [_modules_more, _grad_modes_more, _global_state]
NEW2_WEIGHTS = [3, 2, 3]
SNIPPETS = SECOND_SNIPPETS + NEW_SNIPPETS + NEW2_SNIPPETS
WEIGHTS = SECOND_WEIGHTS + NEW_WEIGHTS + NEW2_WEIGHTS
FAMILIES = {"first": (NARROW_SNIPPETS, NARROW_WEIGHTS), "second": (SECOND_SNIPPETS, SECOND_WEIGHTS),
            "new": (NEW_SNIPPETS, NEW_WEIGHTS), "new2": (NEW2_SNIPPETS, NEW2_WEIGHTS),
            "third": (NEW_SNIPPETS + NEW2_SNIPPETS, NEW_WEIGHTS + NEW2_WEIGHTS), "all": (SNIPPETS, WEIGHTS),
            # graph ops raising by value among the second generation (`families="raises"`; not in "all", whose
            # seeds keep their programs)
            "raises": (SECOND_SNIPPETS + [_value_raises], SECOND_WEIGHTS + [16]),
            # and after in-place changes of an input's sizes (`families="raises_meta"`; "raises" keeps its programs)
            "raises_meta": (SECOND_SNIPPETS + [_value_raises, _metadata_raises], SECOND_WEIGHTS + [8, 12]),
            # iterators and views held by eager code across compiled code changing their containers
            # (`families="held"`: with the first generation's containers, tensors and breaks)
            "held": (NARROW_SNIPPETS + [_breaks, _held_iterators], NARROW_WEIGHTS + [2, 30])}


def _hoist(op: str) -> str:
    """`out.append(e)` -> `v_ = e; out.append(v_)`: the same program without a call pending on the stack
    while `e` runs (a mode that steps around one failure class to reach the others)."""
    lines = []
    for ln in op.splitlines():
        stripped = ln.lstrip()
        if stripped.startswith("out.append(") and stripped.endswith(")"):
            pad = ln[:len(ln) - len(stripped)]
            lines += [pad + "v_ = " + stripped[len("out.append("):-1], pad + "out.append(v_)"]
        else:
            lines.append(ln)
    return "\n".join(lines)


def generate(seed: int, hoist: bool = False, narrow: bool = False, families: str = "all") -> str:
    """The source of program `seed`: module-level definitions, then `f`, from the snippet families named by
    `families` (see FAMILIES; "first" and "second" make the programs seeds made before later families were
    added; `narrow` is "first")."""
    r = random.Random(seed)
    snippets, weights = FAMILIES["first" if narrow else families]
    preludes, body = [], []
    for k in range(r.randint(2, 6)):
        snippet = r.choices(snippets, weights)[0]
        pre, op = snippet(r, k)
        if pre:
            preludes.append(pre)
        body.append(op)
    ret = r.choice(["out, x, y", "out", "(out, x + y, n)"])
    lines = ["def f(x, y, n, s, lst, d):", "    out = []"]
    for op in body:
        if hoist:
            op = _hoist(op)
        lines += ["    " + ln for ln in op.splitlines()]
    lines.append(f"    return {ret}")
    return HEADER + "\n".join(preludes) + "\n" + "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ inputs
def make_inputs(seed: int, call: int, shared: bool = False, dynamic: bool = False):
    """Arguments of call `call`: values change every call, the shape on the last call (with `dynamic`, on
    every call). With `shared`, x and y may share memory, differently from call to call: y is x seen
    through another view, or x and y are the two halves of one tensor."""
    r = random.Random(seed * 1000 + call)
    g = torch.Generator().manual_seed(seed * 1000 + call)
    rows = (5 if call == CALLS - 1 else 3) if not dynamic else (3, 6, 2, 5)[call]
    x = torch.randn(rows, 4, generator=g)
    y = torch.randn(rows, 4, generator=g)
    if shared:
        how = random.Random(seed * 7919 + call).choice(["apart", "same memory", "halves"])
        if how == "same memory":
            y = x.view(rows, 4)
        elif how == "halves":
            x, y = torch.cat([x, y]).split(rows)
    n = r.choice([0, 1, 2, 3, 4, 5, 7, 9])
    s = r.choice(["ab", "abc", "ba", "a b", "xyz", ""])
    lst = [r.randint(-3, 9) for _ in range(r.randint(0, 5))]
    d = {"a": r.randint(0, 5), "b": 2}
    return [x, y, n, s, lst, d]


def mutate_globals(ns: dict, call: int):
    """What the program's environment does between calls: every global the program owns changes."""
    for name, v in list(ns.items()):
        if not name.startswith(("G_", "LOG")):
            continue
        if callable(getattr(v, "between_calls", None)):   # the program says how it changes
            v.between_calls(call)
            continue
        if name.startswith("G_FLAG"):
            ns[name] = not v
            continue
        if name.startswith("G_FN"):      # a global function swapped for another
            ns[name] = (lambda t, _c=call: t * (_c + 1)) if call % 2 else abs
            continue
        if name.startswith("G_CLS"):     # a class attribute changed and a class-level list grown
            v.scale = v.scale + call
            v.items.append(call)
            continue
        if name.startswith("G_CFG"):     # a config dict's existing entry changed
            v["scale"] = v.get("scale", 0) + call
            v["on"] = not v.get("on")
            continue
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            ns[name] = v + call + 1
        elif isinstance(v, list):
            v.append(call)
        elif isinstance(v, dict):
            v[f"m{call}"] = call
        elif isinstance(v, torch.Tensor):
            ns[name] = v * 2 if call % 2 else torch.zeros(3)


# ------------------------------------------------------------------------------------------------ compare
def same(a, b, path="out", rounding=False) -> str | None:
    """None when `a` (eager) and `b` (compiled) agree in type and value; else where they differ.
    Tensors agree within float tolerance; Python floats exactly, unless `rounding` (a backend that
    reorders float arithmetic: its sums read back as numbers differ in the last bits)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if type(a) is not type(b):
            return f"{path}: type {type(a).__name__} vs {type(b).__name__}"
        if (a.dtype, a.shape, a.requires_grad) != (b.dtype, b.shape, b.requires_grad):
            return f"{path}: tensor meta {(a.dtype, tuple(a.shape), a.requires_grad)} vs " \
                   f"{(b.dtype, tuple(b.shape), b.requires_grad)}"
        wide = torch.complex128 if a.is_complex() else torch.float64    # (a complex one with its imaginary part)
        if not torch.allclose(a.detach().to(wide), b.detach().to(wide), rtol=1e-5, atol=1e-6, equal_nan=True):
            return f"{path}: tensor values differ\n{a}\nvs\n{b}"
        return None
    if type(a).__module__ == "numpy" and type(a).__name__ == "ndarray":
        if type(b) is not type(a) or (a.dtype, a.shape) != (b.dtype, b.shape):
            return f"{path}: array {a!r:.200} vs {b!r:.200}"
        return None if (a == b).all() or same(torch.from_numpy(a), torch.from_numpy(b), path, rounding) is None \
            else f"{path}: array values {a!r:.200} vs {b!r:.200}"
    ta, tb = type(a), type(b)
    if (ta.__module__, ta.__qualname__) != (tb.__module__, tb.__qualname__):
        return f"{path}: type {ta.__qualname__} vs {tb.__qualname__}"
    if isinstance(a, BaseException):
        return same(a.args, b.args, path + ".args", rounding)
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: len {len(a)} vs {len(b)}: {a!r} vs {b!r}"
        for i, (u, v) in enumerate(zip(a, b)):
            why = same(u, v, f"{path}[{i}]", rounding)
            if why:
                return why
        return None
    if isinstance(a, dict):
        if list(a.keys()) != list(b.keys()):
            return f"{path}: keys {list(a)} vs {list(b)}"
        for key in a:
            why = same(a[key], b[key], f"{path}[{key!r}]", rounding)
            if why:
                return why
        return None
    if isinstance(a, float) and isinstance(b, float):
        agree = a == b or (math.isnan(a) and math.isnan(b)) or \
            (rounding and math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6))
        return None if agree else f"{path}: {a!r} vs {b!r}"
    if isinstance(a, (int, str, bytes, bool, complex, type(None), set, frozenset, range, torch.dtype,
                      torch.Size, torch.device)):
        return None if a == b else f"{path}: {a!r} vs {b!r}"
    if hasattr(a, "__dict__") and hasattr(b, "__dict__"):
        return same(vars(a), vars(b), path + ".__dict__", rounding)
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def _owned_globals(ns: dict) -> dict:
    """The globals a program owns, comparable across the two namespaces (a class by its own
    attributes, a function by its name)."""
    def comparable(v):
        if isinstance(v, type):     # its data: not its methods, properties and other descriptors
            return {k: a for k, a in vars(v).items() if not k.startswith("__") and not callable(a)
                    and not hasattr(a, "__get__")}
        if isinstance(v, torch.nn.Module):
            return {"training": [m.training for m in v.modules()], "state": dict(v.state_dict()),
                    "attrs": {k: a for k, a in vars(v).items() if not k.startswith("_")
                              and isinstance(a, (int, float, str, bool, tuple, list))}}
        if callable(v) and hasattr(v, "__qualname__"):
            return ("function", v.__qualname__)
        return v
    return {k: comparable(v) for k, v in ns.items() if k.startswith(("G_", "LOG"))}


def _run(fn, args):
    try:
        return ("value", fn(*args))
    except Exception as e:  # noqa: BLE001 - the program's own exceptions are part of what is compared
        return ("raised", e)


def _run_capturing_output(fn, args):
    """`_run`, and what the call printed to stdout and stderr: compiled code prints what eager prints
    (warnings aside, which print once per place). bytegraph's own log lines go to the stderr its log
    handler was made with, before any capture (see below)."""
    out = io.StringIO()
    with warnings.catch_warnings(record=True), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        kind, value = _run(fn, args)
    return kind, value, out.getvalue()


def _from_bytegraph(exc) -> bool:
    """An exception raised by bytegraph itself (an internal error), not one the program raised."""
    if type(exc).__module__.startswith("bytegraph"):
        return True
    root = os.path.dirname(os.path.dirname(os.path.abspath(bytegraph.__file__)))
    tb = traceback.extract_tb(exc.__traceback__)
    return bool(tb) and os.path.abspath(tb[-1].filename).startswith(
        tuple(os.path.join(root, d) + os.sep for d in ("compiler", "frontend", "guards", "backends")))


CALLS = 4


def _load(code, name: str) -> dict:
    """Run the program's module level in a fresh module named `name` (registered while it runs: a
    dataclass looks its module up in sys.modules); returns the module's namespace."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    finally:
        del sys.modules[name]
    return module.__dict__


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _caused_by_timeout(exc) -> bool:
    while exc is not None:
        if isinstance(exc, _Timeout):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def check(seed: int, src: str | None = None, timeout: float = 30.0, hoist: bool = False, backend: str = "eager",
          shared: bool = False, dynamic: bool = False, narrow: bool = False, families: str = "all") -> dict:
    """Run program `seed` eagerly and compiled with `backend` (`shared`: inputs that may share memory,
    see make_inputs; `dynamic`: compiled with dynamic=True and x, y change size every call); returns its
    record (status, where it differed, capture)."""
    src = src or generate(seed, hoist, narrow, families)
    code = compile(src, f"<fuzz_{seed}>", "exec")
    ns_e, ns_c = _load(code, f"fuzz_{seed}"), _load(code, f"fuzz_{seed}")
    counter = CompileCounterWithBackend(backend)
    fc = bytegraph.compile(ns_c["f"], backend=counter, dynamic=True if dynamic else None)
    args_e, args_c = make_inputs(seed, 0, shared, dynamic), make_inputs(seed, 0, shared, dynamic)
    states = [v for name, v in ns_e.items() if name.startswith("STATE")]   # (see _global_state)
    rec = {"seed": seed, "status": "equal", "detail": "", "graphs_first_call": None, "graphs": 0,
           "backend": backend, "shared": shared, "dynamic": dynamic}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        for call in range(CALLS):
            if call:
                # the caller mutates its lists, dicts and tensors in place, and rebinds the scalars;
                # with `shared` it only passes new tensors that share memory differently (a change
                # elsewhere would recompile, hiding a graph reused for the wrong sharing)
                for args in (args_e, args_c):
                    new = make_inputs(seed, call, shared, dynamic)
                    if not shared:
                        args[2], args[3] = new[2], new[3]
                        args[4].append(new[2])
                        args[5][f"c{call}"] = call
                    if call == CALLS - 1 or shared or dynamic:
                        args[0], args[1] = new[0], new[1]
                    else:
                        args[0].copy_(new[0])
                mutate_globals(ns_e, call)
                mutate_globals(ns_c, call)
                # (once: one torch state for both namespaces; what call 2 opens, call 3 closes, innermost first)
                for v in (states[::-1] if call == CALLS - 1 else states):
                    v.between_calls(call)
            e_kind, e_val, e_out = _run_capturing_output(ns_e["f"], args_e)
            c_kind, c_val, c_out = _run_capturing_output(fc, args_c)
            if c_kind == "raised" and _caused_by_timeout(c_val):
                raise _Timeout()    # (the alarm went off while compiling: bytegraph reported it as its error)
            if call == 0:
                rec["graphs_first_call"] = counter.frame_count
            if c_kind == "raised" and e_kind == "value" or (c_kind == "raised" and _from_bytegraph(c_val)):
                if _from_bytegraph(c_val):
                    rec["status"] = "bytegraph error"
                    rec["detail"] = f"call {call}: {type(c_val).__name__}: {str(c_val)[:600]}"
                    break
            rounding = backend == "inductor"
            why = None
            if e_kind != c_kind:
                why = f"eager {e_kind} {e_val!r:.300} vs compiled {c_kind} {c_val!r:.300}"
            else:
                why = same(e_val, c_val, "exception" if e_kind == "raised" else "return", rounding)
            if not why and e_out != c_out:
                why = f"printed: eager {e_out[-300:]!r} vs compiled {c_out[-300:]!r}"
            why = why or same(args_e, args_c, "args", rounding) or \
                same(_owned_globals(ns_e), _owned_globals(ns_c), "globals", rounding)
            if why:
                rec["status"] = "mismatch"
                rec["detail"] = f"call {call}: {why}"[:1500]
                break
    except _Timeout:
        rec["status"] = "timeout"
        rec["detail"] = f"> {timeout}s"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        for v in reversed(states):   # torch's global state the program changed between calls
            v.restore()
    rec["graphs"] = counter.frame_count
    # sound (the instruction ran as Python) but a bytegraph bug all the same: reported apart
    rec["internal"] = [r.reason for r in bytegraph.stats.break_records if r.kind == "internal_error"][:3]
    return rec


STANDALONE = '''"""Fuzzer program {seed}: {status}.
{detail_line}
Run: python -m tests.oracles.found.{module}  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = {seed}
SRC = {src!r}  # noqa: E501
OPTIONS = dict(backend={backend!r}, shared={shared}, dynamic={dynamic})

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
'''


def write_failure(out_dir: str, rec: dict, src: str):
    os.makedirs(out_dir, exist_ok=True)
    name = f"fuzz_{rec['seed']}.py"
    detail = rec["detail"].splitlines()[0][:110] if rec["detail"] else ""
    with open(os.path.join(out_dir, name), "w") as f:
        f.write(STANDALONE.format(seed=rec["seed"], status=rec["status"], detail_line=detail, src=src,
                                  module=name[:-3],
                                  backend=rec.get("backend", "eager"), shared=rec.get("shared", False),
                                  dynamic=rec.get("dynamic", False)))
    with open(os.path.join(out_dir, f"fuzz_{rec['seed']}_program.py"), "w") as f:
        f.write(src)


def parse_seeds(spec: str) -> list[int]:
    out = []
    for part in spec.split(","):
        if ":" in part:
            a, b = part.split(":")
            out += range(int(a), int(b))
        elif part:
            out.append(int(part))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0:500", help="a:b ranges and single seeds, comma separated")
    ap.add_argument("--json", default="fuzz.json")
    ap.add_argument("--out-dir", default="fuzz_failures")
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--hoist", action="store_true", help="evaluate each appended value before the append")
    ap.add_argument("--backend", default="eager", help="the backend compiled programs use")
    ap.add_argument("--shared-inputs", action="store_true", help="x and y may share memory (changing per call)")
    ap.add_argument("--dynamic", action="store_true", help="compile with dynamic=True; x and y change size every call")
    ap.add_argument("--narrow", action="store_true", help="programs from the first generation of snippet families")
    ap.add_argument("--families", default="all", choices=sorted(FAMILIES),
                    help="which snippet families programs are made of")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    records = []
    start = time.time()
    for seed in parse_seeds(args.seeds):
        src = generate(seed, args.hoist, args.narrow, args.families)
        try:
            rec = check(seed, src, args.timeout, backend=args.backend, shared=args.shared_inputs,
                        dynamic=args.dynamic)
        except Exception as e:  # noqa: BLE001 - a harness-level failure is still a row
            rec = {"seed": seed, "status": "harness error", "detail": f"{type(e).__name__}: {e}",
                   "graphs_first_call": None, "graphs": 0}
        records.append(rec)
        bytegraph.reset()
        if rec["status"] != "equal":
            write_failure(args.out_dir, rec, src)
            if args.verbose:
                print(f"seed {seed}: {rec['status']}: {rec['detail'].splitlines()[0][:200]}", flush=True)
    n = len(records)
    count = {s: sum(r["status"] == s for r in records) for s in ("equal", "mismatch", "bytegraph error", "timeout")}
    one_graph = sum(r["graphs_first_call"] == 1 for r in records)
    internal = [r for r in records if r.get("internal")]
    print(f"{'programs':>9}{'equal':>8}{'mismatch':>10}{'bg error':>10}{'timeout':>9}{'one graph':>11}"
          f"{'internal':>10}{'secs':>7}")
    print(f"{n:>9}{count['equal']:>8}{count['mismatch']:>10}{count['bytegraph error']:>10}{count['timeout']:>9}"
          f"{100.0 * one_graph / max(n, 1):>10.1f}%{len(internal):>10}{time.time() - start:>7.0f}")
    for r in internal[:10]:
        print(f"  internal error break, seed {r['seed']}: {r['internal'][0][:160]}")
    for r in records:
        if r["status"] != "equal":
            print(f"  seed {r['seed']:>5} {r['status']:<16}{r['detail'].splitlines()[0][:150] if r['detail'] else ''}")
    with open(args.json, "w") as f:
        json.dump({"summary": {"programs": n, **count, "one_graph_pct": 100.0 * one_graph / max(n, 1)},
                   "records": records}, f, indent=1)
    return 0 if count["equal"] == n else 1


if __name__ == "__main__":
    sys.exit(main())
