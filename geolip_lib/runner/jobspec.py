"""One job of a run: :class:`Job` (a notebook x model with its parameters), :class:`JobResult`
and where its result lives (:func:`job_dir`). The bottom of the runner's job modules: the
expansion of a profile (:mod:`.jobs`), resume (:mod:`.resume`) and the executors import it."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Job:
    """One (notebook x model) execution."""

    profile: str
    notebook: str
    job_id: str
    model: str | None
    parameters: dict = field(default_factory=dict)
    timeout_s: int | None = None
    kernel: str = "python3"

    @property
    def label(self) -> str:
        return f"{self.notebook} / {self.job_id}"


@dataclass
class JobResult:
    job: Job
    ok: bool
    job_dir: Path
    seconds: float
    error: str | None = None
    skipped: bool = False
    device: str = ""  # what the executor gave it: "cpu", "cuda:0,1", "ray:<node>"


def job_dir(job: Job, out_root: Path) -> Path:
    return out_root / job.notebook / job.job_id
