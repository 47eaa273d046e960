"""Torch's intra-op thread count, kept or narrowed around a call (one home for both).

* :func:`one_torch_thread` runs many tiny batched CPU ops (``(128, 4, D)`` products, batched
  ``eigh`` of ``2·head_dim`` matrices) on one thread: spawning OpenMP threads for them costs
  more than it saves, 10-40x so on a loaded machine.
* :func:`keep_torch_threads` protects the caller's count from a numba ``parallel=True``
  kernel: numba's OpenMP layer calls ``omp_set_num_threads(numba.get_num_threads())`` in the
  libgomp that torch shares, so after the first such kernel torch ran on every core whatever
  ``OMP_NUM_THREADS`` said. Measured here: a runner kernel with ``OMP_NUM_THREADS=1`` went
  to 2 torch threads after notebook 01's pentachoron cell, which is what made a warm-started
  kernel's float32 results differ from a cold one's (29 values of 01 / tiny-t5, ~1e-8).
"""
from __future__ import annotations

from contextlib import contextmanager

import torch


@contextmanager
def keep_torch_threads():
    """Restore torch's intra-op thread count after the block, whatever the block set."""
    prev = torch.get_num_threads()
    try:
        yield
    finally:
        if torch.get_num_threads() != prev:
            torch.set_num_threads(prev)


@contextmanager
def one_torch_thread(enabled: bool = True):
    """Run the block on one torch thread when ``enabled`` (pass ``tensor.device.type == "cpu"``),
    then restore the previous count."""
    with keep_torch_threads():
        if enabled and torch.get_num_threads() != 1:
            torch.set_num_threads(1)
        yield


__all__ = ["keep_torch_threads", "one_torch_thread"]
