"""Found by the fuzzer (family "held", seed 90398): an iterator over a dict argument, made in compiled code
after `d.pop('a')`, was rebuilt at the next graph break before the pop was written back, so it noted the
dict's size from before the pop; after `setdefault` added a key it went on where eager's raised.
Eager: [[], ..., [('RuntimeError', 'dictionary changed size during iteration')]].
Compiled gave [[], ..., [('b', 2), ('w', 0), 'stop']]."""
import sys

import torch

import bytegraph


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


def f(x, d):
    out = []
    d.pop('a', None)
    it = iter(d.items())
    out.append(drain(it, 0))
    out.append(x * len(d))
    d.setdefault('w', 0)
    out.append(drain(it, 8))
    return out


eager = f(torch.ones(1), {'a': 1, 'b': 2})
compiled = bytegraph.compile(f, backend="eager")(torch.ones(1), {'a': 1, 'b': 2})
ok = eager[0] == compiled[0] and eager[2] == compiled[2]
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
