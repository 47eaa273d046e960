"""The Ray executor's side on a worker (:mod:`.ray_executor`): run one job there, in the output
root (``shared``) or in a temporary directory whose result goes back as a tar archive
(``return``); the probe that checks a node sees the shared root and runs the driver's code."""
from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Optional

from .. import roots
from ..paths import ROOT
from ..provenance import library_hash
from .execute import execute_job
from .jobs import Job
from .resources import remove_orphan_dirs

TMP_PREFIX = "geolip-ray-"


def _device(cpus: int) -> tuple[dict, str]:
    """The kernel's environment and the device label for the task running here."""
    import ray

    ip = ray.util.get_node_ip_address()
    gpu_ids = [str(g) for g in ray.get_runtime_context().get_accelerator_ids().get("GPU", [])]
    env = {"OMP_NUM_THREADS": str(cpus)}
    if gpu_ids:
        env["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES") or ",".join(gpu_ids)
        return env, f"ray:{ip}:cuda:{','.join(gpu_ids)}"
    return env, f"ray:{ip}:cpu"


def _worker_job(job: Job, out_root: str, mode: str, cpus: int, inputs: Optional[bytes] = None):
    """The Ray task: run one job on this worker. ``shared``: into ``out_root`` itself;
    ``return``: into a temporary root, sending back ``(tmp_root, tar of the job directory)``."""
    env, device = _device(cpus)
    if mode == "shared":
        return execute_job(job, Path(out_root), env=env, device=device), None
    remove_orphan_dirs(TMP_PREFIX)  # left by workers that died (killed, cancelled)
    tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))
    try:
        if inputs:
            _untar(inputs, tmp)
        res = execute_job(job, tmp, env=env, device=device)
        return res, (str(tmp), _tar(res.job_dir) if Path(res.job_dir).is_dir() else None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _probe(path: str, token: str) -> dict:
    """Start-up check on one node: does it see the driver's probe file, and its checkout?"""
    import ray

    try:
        seen = Path(path).read_text(encoding="utf-8") == token
    except OSError:
        seen = False
    return {"ip": ray.util.get_node_ip_address(), "node": ray.get_runtime_context().get_node_id(),
            "sees_out_root": seen, "library": library_hash(), "root": str(ROOT)}


def _tar(directory: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(str(directory), arcname=".")
    return buf.getvalue()


def _untar(data: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        tar.extractall(dest, filter="data")  # refuses absolute paths, links out of dest


def _finished_metrics(out_root: Path) -> bytes:
    """Every finished job's ``metrics.json`` under ``out_root`` (what 03 and 15 read)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for job in roots.job_dirs(out_root):  # real folders only: a link in the root is never followed out of it
            f = job / "metrics.json"
            if not job.name.endswith(".failed") and roots.path_problem(out_root, f, leaf_link_ok=False) is None \
                    and f.is_file():
                tar.add(str(f), arcname=str(f.relative_to(out_root)))
    return buf.getvalue()
