"""Fuzzer program 57309: mismatch.
mismatch: a graph compiled outside inference_mode ran inside it (eager raised, compiled returned)
Run: python -m tests.oracles.found.fuzz_57309_inference_mode_guard  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 57309
SRC = 'import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nclass State0:\n    active = False\n    def between_calls(self, call):\n        if call == 2:\n            self.ctx = torch.inference_mode()\n            self.ctx.__enter__()\n            self.active = True\n        elif call == 3:\n            self.restore()\n    def restore(self):\n        if self.active:\n            self.active = False\n            self.ctx.__exit__(None, None, None)\nSTATE0 = State0()\n\nclass State1:\n    active = False\n    def between_calls(self, call):\n        if call == 2:\n            torch.set_printoptions(precision=2)\n            self.active = True\n        elif call == 3:\n            self.restore()\n    def restore(self):\n        if self.active:\n            self.active = False\n            torch.set_printoptions(precision=4)\nSTATE1 = State1()\n\nNG2 = torch.no_grad()\nclass GM2:\n    @torch.no_grad()\n    def run(self, t):\n        return (t * 2).requires_grad\n    @torch.enable_grad()\n    def grad_of(self, t):\n        w = t.detach().requires_grad_()\n        (w * w).sum().backward()\n        return w.grad\n@torch.set_grad_enabled(False)\ndef sge2(t):\n    return (t * 2).requires_grad\n@torch.no_grad()\ndef gen2(t):\n    for i in range(2):\n        yield (t * i).requires_grad\n\nNG3 = torch.no_grad()\nclass GM3:\n    @torch.no_grad()\n    def run(self, t):\n        return (t * 2).requires_grad\n    @torch.enable_grad()\n    def grad_of(self, t):\n        w = t.detach().requires_grad_()\n        (w * w).sum().backward()\n        return w.grad\n@torch.set_grad_enabled(False)\ndef sge3(t):\n    return (t * 2).requires_grad\n@torch.no_grad()\ndef gen3(t):\n    for i in range(2):\n        yield (t * i).requires_grad\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    out.append(torch.nn.functional.linear(x, y[:2]))\n    out.append((torch.tensor([n, 2.5]).dtype, torch.arange(n) * 0.5, torch.get_default_dtype()))\n    with torch.no_grad():\n        out.append(GM2().grad_of(x))\n    w = x.detach().requires_grad_()\n    out.append(list(gen3(w)) + [(w * 3).requires_grad])\n    return out\n'  # noqa: E501
OPTIONS = dict(backend='aot_eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
