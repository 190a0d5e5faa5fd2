"""Found by the dynamo probes (probes_misc3::num_threads_read_between, anomaly_mode_read_between): a torch
function given only constants that answers a Python value (`torch.get_num_threads()`,
`torch.is_anomaly_enabled()`, `torch.initial_seed()`...) was run once while tracing and its answer
folded into the graph, unguarded."""
import sys

import torch

import bytegraph


def f(x):
    return x * torch.get_num_threads()


threads = torch.get_num_threads()
opt = bytegraph.compile(f, backend="eager")
x = torch.ones(2)
ok = torch.equal(opt(x), f(x))
torch.set_num_threads(threads + 1)
ok = ok and torch.equal(opt(x), f(x))
torch.set_num_threads(threads)
print("OK" if ok else "MISMATCH: the thread count read while tracing was kept")
sys.exit(not ok)
