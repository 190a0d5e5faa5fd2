"""Which library runs a float32 linear layer (`addmm`/`mm` of an input and a weight matrix) on CPU.

Eager calls BLAS (MKL in torch's CPU builds). MKL picks its kernels by CPU vendor, not by instruction
set: on AVX-512 machines it does not recognise (AMD's) it runs its AVX2 kernels, and oneDNN's linear,
which dispatches on the instruction set, is about twice as fast. Which one wins is a fact of the machine
(and thread count), so it is measured once per process and thread count on a mid-sized product rather
than assumed. Products too small to repay oneDNN's fixed cost per call (~10 us) stay with BLAS.
"""
from __future__ import annotations

import functools
import time

import torch

MIN_MACS = 1 << 20          # below this many multiply-adds, BLAS's lower call overhead wins
_PROBE = (256, 512, 512)    # (m, k, n) of the calibration product: ~70M multiply-adds
_MARGIN = 1.15              # oneDNN must be clearly faster (the choice is measured, hence noisy)


@functools.lru_cache(None)
def onednn_linear():
    """The oneDNN linear op, or None in builds without it (looked up once: 1x1 convolutions call it)."""
    if not torch.backends.mkldnn.is_available():
        return None
    return getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)


def use_onednn_linear(macs) -> bool:
    """Should a float32 CPU linear layer of `macs` multiply-adds (None: unknown, symbolic) call oneDNN?"""
    if macs is not None and macs < MIN_MACS:
        return False
    return onednn_linear() is not None and _onednn_is_faster(torch.get_num_threads())


def pointwise_convolution(x, weight, bias):
    """A 1x1 convolution (stride 1, no padding, one group) of a channels-last `x`: one linear layer over
    its (N*H*W, C) rows of channels, with a channels-last result."""
    n, c, h, w = x.shape
    rows = x.permute(0, 2, 3, 1).reshape(n * h * w, c)  # a view of channels-last memory
    y = onednn_linear().default(rows, weight.reshape(weight.shape[0], c), bias, "none", [], "")
    return y.view(n, h, w, -1).permute(0, 3, 1, 2)


@functools.lru_cache(None)
def _onednn_is_faster(threads: int) -> bool:
    m, k, n = _PROBE
    x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
    linear = onednn_linear().default

    def best(fn):
        fn()
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)
    with torch.no_grad():
        blas = best(lambda: torch.addmm(b, x, w.t()))
        onednn = best(lambda: linear(x, w, b, "none", [], ""))
    return blas > _MARGIN * onednn
