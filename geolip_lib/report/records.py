"""The jobs of a report root read back: one :class:`JobRecord` per finished or failed job."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class JobRecord:
    notebook: str
    job_id: str
    path: Path
    data: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def headline(self) -> dict:
        return self.data.get("headline") or {}

    @property
    def figures(self) -> list[dict]:
        return [f for f in self.data.get("figures") or [] if (self.path / f.get("file", "")).exists()]

    @property
    def provenance(self) -> dict:
        return self.data.get("provenance") or {}


def collect(out_root: Path) -> dict[str, list[JobRecord]]:
    """Every completed and failed job under ``out_root``, grouped by notebook (sorted).

    An unreadable ``metrics.json`` makes its job a failed record naming the file (the rest
    of the report still builds).
    """
    groups: dict[str, list[JobRecord]] = {}
    for nb_dir in sorted(p for p in out_root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        recs = []
        for job in sorted(nb_dir.iterdir()):
            if job.name.startswith(".") or not job.is_dir():
                continue  # .partial (running or killed) and .old directories never count
            if job.name.endswith(".failed"):
                err = (job / "error.txt").read_text(encoding="utf-8", errors="replace").split("\n", 1)[0] \
                    if (job / "error.txt").exists() else "failed (no error.txt)"
                recs.append(JobRecord(nb_dir.name, job.name[:-7], job, error=err or "failed"))
            elif (job / "metrics.json").exists():
                try:
                    data = json.loads((job / "metrics.json").read_text(encoding="utf-8"))
                    if not isinstance(data, dict):
                        raise ValueError("not a JSON object")
                except (OSError, ValueError) as exc:
                    recs.append(JobRecord(nb_dir.name, job.name, job,
                                          error=f"{job / 'metrics.json'}: unreadable ({exc}); rerun with --resume"))
                    continue
                failed = nb_dir / f"{job.name}.failed"
                if failed.is_dir() and failed.stat().st_mtime > (job / "metrics.json").stat().st_mtime:
                    continue  # a rerun failed after this result: the failure is what is current
                recs.append(JobRecord(nb_dir.name, job.name, job, data))
        if recs:
            groups[nb_dir.name] = recs
    return groups
