"""Fuzzer program 64020: mismatch.
call 3: globals['G_MOD2']['state']['steps']: tensor values differ
Run: python -m tests.oracles.found.fuzz_64020  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 64020
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nclass State1:\n    active = False\n    def between_calls(self, call):\n        if call == 2:\n            torch.set_default_dtype(torch.float64)\n            self.active = True\n        elif call == 3:\n            self.restore()\n    def restore(self):\n        if self.active:\n            self.active = False\n            torch.set_default_dtype(torch.float32)\nSTATE1 = State1()\n\ndef hook2(mod, inp, res):\n    return res * 2\ndef prehook2(mod, inp):\n    return (inp[0] + 1,) + tuple(inp[1:])\nclass Small2(torch.nn.Module):\n    def __init__(self, m):\n        super().__init__()\n        self.w = torch.nn.Parameter(torch.linspace(-1, 1, 16).reshape(4, 4) * (m + 1))\n        self.register_buffer('seen', torch.zeros(()))\n    def forward(self, t):\n        self.seen += 1\n        return t @ self.w\nclass M2(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.lin = torch.nn.Linear(4, 4)\n        self.layers = torch.nn.ModuleList([Small2(1), torch.nn.ReLU()])\n        self.heads = torch.nn.ModuleDict({'a': torch.nn.Linear(4, 2), 'b': torch.nn.Tanh()})\n        self.register_buffer('steps', torch.zeros(()))\n        self.register_buffer('running', torch.zeros(4))\n        self.scale = 2\n        self.calls = 0\n    def forward(self, t, mode='a'):\n        self.steps += 1\n        self.calls += 1\n        self.last_mode = mode\n        h = self.lin(t)\n        for layer in self.layers:\n            h = layer(h)\n        if self.training:\n            self.running.mul_(0.5).add_(h.mean(0).detach())\n            h = h * self.scale\n        else:\n            h = h - self.running\n        return self.heads[mode](h) if mode in self.heads else h\n    def between_calls(self, call):\n        if call == 1:\n            self.eval()\n        elif call == 2:\n            self.train()\n            self.scale += 1\n            self.handle = self.register_forward_hook(hook2)\n        else:\n            self.handle.remove()\n            self.layers[0].w.data.mul_(0.5)\ntorch.manual_seed(2)\nG_MOD2 = M2()\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    dd = {True: 'a', 1.0: 'b', n: 'c'}\n    out.append(list(dd.items()))\n    t = x * 2\n    out.append((t.is_inference(), t))\n    out.append((G_MOD2(x), G_MOD2.calls, G_MOD2.training, G_MOD2.last_mode))\n    return out\n"  # noqa: E501
OPTIONS = dict(backend='inductor', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
