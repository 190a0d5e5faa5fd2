"""Fuzzer program 50040: mismatch.
mismatch: torch.numel of a symbolic shape returned a SymInt
Run: python -m tests.oracles.found.fuzz_50040_torch_numel_symint  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 50040
SRC = 'import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    out.append((torch.numel(x), torch.result_type(x, 2.5), torch.can_cast(x.dtype, torch.int32), torch.promote_types(torch.int8, torch.uint8)))\n    out.append(x.roll(int(torch.tensor(n)), 0))\n    return out, x, y\n'  # noqa: E501
OPTIONS = dict(backend='eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
