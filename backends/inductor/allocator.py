"""Keeps a compiled graph's CPU buffers out of fresh page mappings.

glibc's malloc serves a block above its mmap threshold (128 KiB at start) with a fresh mapping, and
returns free memory at the top of its heap to the system once it exceeds its trim threshold; memory
got either way costs a page fault per 4 KiB page on its first write: a graph whose buffers are a few MB
pays thousands of faults on every call (HF MobileNetV2 at batch 4: about 3,600 per call, a third of
its time). glibc raises the mmap threshold to the size of the largest mapped block freed so far (up to
32 MiB) and the trim threshold to twice that. Freeing, when a graph is compiled, one block as large as
all its buffers together moves both past what one call allocates: its buffers are then recycled by the
heap, call after call, as they would be after the program freed any tensor that large. Elsewhere
(another allocator, another libc) this does nothing."""
from __future__ import annotations

import torch

# DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems, less room for the block's header and alignment (a block
# larger than it moves no threshold)
LARGEST_BLOCK = (32 << 20) - (64 << 10)
_primed = 0


def prime(call_bytes: int) -> None:
    """Let the heap recycle the `call_bytes` a compiled call allocates (up to glibc's limit)."""
    global _primed
    n = min(call_bytes, LARGEST_BLOCK)
    if n > _primed:
        _primed = n
        torch.empty(n, dtype=torch.uint8)  # mapped, then unmapped at once (never written: no page touched)
