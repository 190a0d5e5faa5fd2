"""Found by the fuzzer (family "held", seed 90005): a dict made in compiled code with a key deleted was
rebuilt at a graph break without the hole the deletion left in its entries, and `d |= {...}` on a dict of
the program was written back key by key, where CPython's dict.update from a dict sizes the table first
(compacting the entries): an iterator eager code held over the dict counted its place in other entries.
Eager: [['y', 'stop'], ...]. Compiled gave [['d', 'y', 'stop'], ...]."""
import sys

import torch

import bytegraph


@bytegraph.disable
def hold(make):
    return make()


@bytegraph.disable
def drain(it, m):
    got = []
    for _ in range(m):
        try:
            got.append(next(it))
        except StopIteration:
            got.append('stop')
            break
        except RuntimeError as e:
            got.append(('RuntimeError', str(e)))
            break
    return got


def f(x, n):
    out = []
    c = dict.fromkeys('abcde', n)
    c.pop('a', None)
    it = hold(lambda: iter(c.keys()))
    out.append(drain(it, 2))
    out.append(x * len(c))
    c.popitem() if c else None
    c |= {'c': 9, 'y': n}
    out.append(drain(it, 8))
    out.append(list(c))
    return out


eager = f(torch.ones(1), 1)
compiled = bytegraph.compile(f, backend="eager")(torch.ones(1), 1)
ok = eager[2:] == compiled[2:] and eager[0] == compiled[0]
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
