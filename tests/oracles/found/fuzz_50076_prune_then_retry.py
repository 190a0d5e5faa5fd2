"""Fuzzer program 50076: bytegraph error.
bytegraph error: a break retried from a checkpoint a prune had changed
Run: python -m tests.oracles.found.fuzz_50076_prune_then_retry  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 50076
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\ndef hook0(mod, inp, res):\n    return res * 2\ndef prehook0(mod, inp):\n    return (inp[0] + 1,) + tuple(inp[1:])\nclass Small0(torch.nn.Module):\n    def __init__(self, m):\n        super().__init__()\n        self.w = torch.nn.Parameter(torch.linspace(-1, 1, 16).reshape(4, 4) * (m + 1))\n        self.register_buffer('seen', torch.zeros(()))\n    def forward(self, t):\n        self.seen += 1\n        return t @ self.w\nclass M0(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.lin = torch.nn.Linear(4, 4)\n        self.layers = torch.nn.ModuleList([Small0(1), torch.nn.ReLU()])\n        self.heads = torch.nn.ModuleDict({'a': torch.nn.Linear(4, 2), 'b': torch.nn.Tanh()})\n        self.register_buffer('steps', torch.zeros(()))\n        self.register_buffer('running', torch.zeros(4))\n        self.scale = 2\n        self.calls = 0\n    def forward(self, t, mode='a'):\n        self.steps += 1\n        self.calls += 1\n        self.last_mode = mode\n        h = self.lin(t)\n        for layer in self.layers:\n            h = layer(h)\n        if self.training:\n            self.running.mul_(0.5).add_(h.mean(0).detach())\n            h = h * self.scale\n        else:\n            h = h - self.running\n        return self.heads[mode](h) if mode in self.heads else h\n    def between_calls(self, call):\n        if call == 1:\n            self.eval()\n        elif call == 2:\n            self.train()\n            self.scale += 1\n            self.handle = self.register_forward_hook(hook0)\n        else:\n            self.handle.remove()\n            self.layers[0].w.data.mul_(0.5)\ntorch.manual_seed(0)\nG_MOD0 = M0()\n\nimport random\n\nimport numpy as np\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    out.append((type(G_MOD0.layers[1]).__name__, isinstance(G_MOD0.layers[0], torch.nn.Module), G_MOD0.lin.in_features * n))\n    out.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.are_deterministic_algorithms_enabled()))\n    out.append(f'{s!s:>{n + 1}}|{s:^6}|{len(s):<3}|' + '{0}{1}{0}'.format(s, n))\n    out.append(torch.as_tensor(np.arange(n)) + 1)\n    return out\n"  # noqa: E501
OPTIONS = dict(backend='eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
