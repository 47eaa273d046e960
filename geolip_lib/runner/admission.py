"""Admission by the memory free now: a job that fits the box (its RAM or cgroup limit: the plan's
shortfalls refuse the others before any kernel) but not what other programs leave free right now waits
until that memory is there, saying so once a minute.

The room a job needs: its planned host peak, plus what the jobs of this run already running may still
take (their planned peaks less what their kernels hold now), plus the headroom kept free of the box
(:data:`.memory_rules.HEADROOM`); the room there is: the memory available now (:func:`.box.host_memory`:
the host's, no more than a cgroup limit leaves, reclaimable page cache counted free)."""
from __future__ import annotations

import time
from typing import Callable, Iterable, Optional

import psutil

from .box import HostMemory, host_memory
from .memory_rules import HEADROOM
from .plan_text import _duration, _gb


def kernels_bytes(exclude: Iterable[int] = ()) -> int:
    """Resident memory of this process's descendants (the run's kernels), less the processes ``exclude``
    (the warm-kernel zygote: its memory is none of a job's peak); bytes."""
    skip, total = set(exclude), 0
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return 0
    for p in children:
        if p.pid in skip:
            continue
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_bytes() -> int:
    """Resident memory of this process and every descendant (what this run holds); bytes."""
    try:
        own = psutil.Process().memory_info().rss
    except psutil.Error:
        own = 0
    return own + kernels_bytes()


class MemoryGate:
    """Whether a job may start now by the memory free now (:meth:`admits`); a job held prints one line when
    it starts waiting and one a minute after (``every`` seconds), and one when it is let through.

    ``memory``, ``kernels`` and ``held`` measure the box, this run's kernels and all this run holds (bytes):
    the real ones by default; a test passes its own, and its ``clock``."""

    def __init__(self, peaks: dict, say: Callable[[str], None], *, memory: Callable[[], HostMemory] = host_memory,
                 kernels: Optional[Callable[[], int]] = None, held: Callable[[], int] = run_bytes,
                 every: float = 60.0, clock: Callable[[], float] = time.monotonic, exclude: Iterable[int] = ()):
        self.peaks, self.say, self.memory, self.held = dict(peaks), say, memory, held
        exclude = tuple(exclude)
        self.kernels = kernels or (lambda: kernels_bytes(exclude))
        self.every, self.clock = every, clock
        self.since: dict[str, float] = {}  # label -> when it started waiting
        self.said = -float("inf")  # when the last waiting line was printed

    def room(self, label: str, running: Iterable[str]) -> tuple[int, int, HostMemory]:
        """(bytes the job needs now, of it what the running jobs may still take, the box now)."""
        running = list(running)
        still = max(0, sum(self.peaks.get(r, 0) for r in running) - (self.kernels() if running else 0))
        mem = self.memory()
        return int(self.peaks.get(label, 0) + still + HEADROOM * mem.total), int(still), mem

    def admits(self, label: str, running: Iterable[str]) -> bool:
        need, still, mem = self.room(label, running)
        now = self.clock()
        if need <= mem.available:
            if label in self.since:
                self.say(f"memory free: {label} starts after waiting {_duration(now - self.since.pop(label))} "
                         f"({_gb(mem.available)} GB available now)")
            return True
        if label not in self.since:
            self.since[label] = now
        if now - self.said >= self.every or self.since[label] == now:
            self.said = now
            others = max(0, mem.total - mem.available - self.held())
            ahead = f", {_gb(still)} GB of it for the jobs running beside it" if still else ""
            self.say(f"waiting for memory: {label} needs {_gb(need)} GB free (its peak {_gb(self.peaks.get(label, 0))}"
                     f" GB{ahead}, {HEADROOM:.0%} of the box kept free); {_gb(mem.available)} GB free now of "
                     f"{mem.describe()}; other processes hold {_gb(others)} GB; waiting "
                     f"{_duration(now - self.since[label])}")
        return False


__all__ = ["MemoryGate", "kernels_bytes", "run_bytes"]
