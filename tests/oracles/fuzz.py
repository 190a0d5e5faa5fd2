"""Oracle: a differential fuzzer. From a seed it writes a small Python program mixing Python constructs
(containers and their methods, closures and nonlocal, small classes with properties and dunders, exceptions,
generators, comprehensions, globals, string formatting, builtins with keywords, mixed arithmetic, with
blocks, match) with tensor ops; runs it eagerly and compiled by bytegraph (backend "eager", counted) over
several calls with the inputs and the globals mutated between calls, and compares return values (type and
value), exceptions (type and args) and side effects (globals, mutated arguments). Programs where
bytegraph hit an internal error (sound: that instruction ran as Python, but a bug) are counted apart.

    python -m tests.oracles.fuzz --seeds 0:500 [--json fuzz.json] [--out-dir fuzz_failures]
                                 [--backend aot_eager] [--shared-inputs]

Each failing program is written out as a standalone script that prints OK or MISMATCH.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
import time
import traceback

import torch

import bytegraph
from bytegraph.testing import CompileCounterWithBackend

bytegraph.config.strict = True      # an internal error is a finding, not a silent eager run

HEADER = """import collections, contextlib, functools, itertools, math, operator
import torch
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


SNIPPETS = [_containers_list, _containers_tuple, _containers_dict, _containers_set, _closures, _classes,
            _exceptions, _generators, _comprehensions, _globals, _strings, _builtins, _arith, _tensors,
            _tensor_control, _with_blocks, _control, _tensor_numbers]
# tensor-only programs capture in one graph more often: weight them so the capture figure means something
WEIGHTS = [3, 2, 3, 2, 2, 3, 3, 2, 2, 3, 2, 3, 3, 6, 1, 2, 2, 2]


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


def generate(seed: int, hoist: bool = False) -> str:
    """The source of program `seed`: module-level definitions, then `f`."""
    r = random.Random(seed)
    preludes, body = [], []
    for k in range(r.randint(2, 6)):
        snippet = r.choices(SNIPPETS, WEIGHTS)[0]
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
def make_inputs(seed: int, call: int, shared: bool = False):
    """Arguments of call `call`: values change every call, the shape on the last call. With `shared`,
    x and y may share memory, differently from call to call: y is x seen through another view, or
    x and y are the two halves of one tensor."""
    r = random.Random(seed * 1000 + call)
    g = torch.Generator().manual_seed(seed * 1000 + call)
    rows = 5 if call == CALLS - 1 else 3
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
        if not torch.allclose(a.detach().double(), b.detach().double(), rtol=1e-5, atol=1e-6, equal_nan=True):
            return f"{path}: tensor values differ\n{a}\nvs\n{b}"
        return None
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
    return {k: v for k, v in ns.items() if k.startswith(("G_", "LOG"))}


def _run(fn, args):
    try:
        return ("value", fn(*args))
    except Exception as e:  # noqa: BLE001 - the program's own exceptions are part of what is compared
        return ("raised", e)


def _from_bytegraph(exc) -> bool:
    """An exception raised by bytegraph itself (an internal error), not one the program raised."""
    if type(exc).__module__.startswith("bytegraph"):
        return True
    root = os.path.dirname(os.path.dirname(os.path.abspath(bytegraph.__file__)))
    tb = traceback.extract_tb(exc.__traceback__)
    return bool(tb) and os.path.abspath(tb[-1].filename).startswith(
        tuple(os.path.join(root, d) + os.sep for d in ("compiler", "frontend", "guards", "backends")))


CALLS = 4


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def check(seed: int, src: str | None = None, timeout: float = 30.0, hoist: bool = False, backend: str = "eager",
          shared: bool = False) -> dict:
    """Run program `seed` eagerly and compiled with `backend` (`shared`: inputs that may share memory,
    see make_inputs); returns its record (status, where it differed, capture)."""
    src = src or generate(seed, hoist)
    code = compile(src, f"<fuzz_{seed}>", "exec")
    ns_e, ns_c = {"__name__": f"fuzz_{seed}"}, {"__name__": f"fuzz_{seed}"}
    exec(code, ns_e)
    exec(code, ns_c)
    counter = CompileCounterWithBackend(backend)
    fc = bytegraph.compile(ns_c["f"], backend=counter)
    args_e, args_c = make_inputs(seed, 0, shared), make_inputs(seed, 0, shared)
    rec = {"seed": seed, "status": "equal", "detail": "", "graphs_first_call": None, "graphs": 0,
           "backend": backend, "shared": shared}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        for call in range(CALLS):
            if call:
                # the caller mutates its lists, dicts and tensors in place, and rebinds the scalars;
                # with `shared` it only passes new tensors that share memory differently (a change
                # elsewhere would recompile, hiding a graph reused for the wrong sharing)
                for args in (args_e, args_c):
                    new = make_inputs(seed, call, shared)
                    if not shared:
                        args[2], args[3] = new[2], new[3]
                        args[4].append(new[2])
                        args[5][f"c{call}"] = call
                    if call == CALLS - 1 or shared:
                        args[0], args[1] = new[0], new[1]
                    else:
                        args[0].copy_(new[0])
                mutate_globals(ns_e, call)
                mutate_globals(ns_c, call)
            e_kind, e_val = _run(ns_e["f"], args_e)
            try:
                c_kind, c_val = _run(fc, args_c)
            except _Timeout:
                raise
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
    rec["graphs"] = counter.frame_count
    # sound (the instruction ran as Python) but a bytegraph bug all the same: reported apart
    rec["internal"] = [r.reason for r in bytegraph.stats.break_records if r.kind == "internal_error"][:3]
    return rec


STANDALONE = '''"""Fuzzer program {seed}: {status}. {detail_line}
Run: python {name}  (prints OK or MISMATCH)"""
import sys

from tests.oracles.fuzz import check

SRC = {src!r}

if __name__ == "__main__":
    rec = check({seed}, SRC, backend={backend!r}, shared={shared})
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
'''


def write_failure(out_dir: str, rec: dict, src: str):
    os.makedirs(out_dir, exist_ok=True)
    name = f"fuzz_{rec['seed']}.py"
    detail = rec["detail"].splitlines()[0][:200] if rec["detail"] else ""
    with open(os.path.join(out_dir, name), "w") as f:
        f.write(STANDALONE.format(seed=rec["seed"], status=rec["status"], detail_line=detail, src=src, name=name,
                                  backend=rec.get("backend", "eager"), shared=rec.get("shared", False)))
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
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    records = []
    start = time.time()
    for seed in parse_seeds(args.seeds):
        src = generate(seed, args.hoist)
        try:
            rec = check(seed, src, args.timeout, backend=args.backend, shared=args.shared_inputs)
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
