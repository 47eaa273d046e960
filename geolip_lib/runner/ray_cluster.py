"""The Ray executor's connection to a cluster (:mod:`.ray_executor`): join one or start a local
Ray, route Ray's own log lines to the run's driver log, and check every node before the
first job (the shared root is visible, the checkout's code is the driver's)."""
from __future__ import annotations

import logging
import os
import socket
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Optional

from ..paths import ROOT
from ..provenance import library_hash
from .execute import _one_line_error
from .lock import RunError
from .ray_worker import _probe


def connect(address: Optional[str] = None, *, log_file: Optional[Path] = None, console=None) -> bool:
    """Join the Ray cluster at ``address`` / ``$RAY_ADDRESS``, or start a local Ray.

    Returns True when this call started a local Ray (the caller shuts it down), False when
    it joined a cluster or this process was already connected. Ray's own messages go to
    ``log_file`` (the console keeps one line per job); failures are one-line :class:`RunError`.
    """
    import ray

    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _check_reachable(address)
    if ray.is_initialized():
        return False
    # only errors on the console while Ray starts; then Ray's log lines go to log_file
    opts = dict(log_to_driver=False, logging_level=logging.ERROR)
    if address:
        try:
            ray.init(address=address, **opts)
        except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError, auth errors
            raise RunError(f"--ray-address {address}: could not join that Ray cluster ({_one_line_error(exc)}); "
                           "check the address (`ray status` on the head shows it) and, with token authentication, "
                           "that this box has the cluster's token (ray get-auth-token)") from None
        _route_ray_logs(log_file)
        return False
    cores = os.cpu_count() or 1
    for attempt in (1, 2):
        try:
            # A light local Ray: no dashboard, a small object store (results travel as files in
            # shared mode); workers' output is not echoed (each job has its kernel.log).
            ray.init(num_cpus=cores, include_dashboard=False, object_store_memory=512 * 1024 ** 2, **opts)
            break
        except Exception as exc:  # noqa: BLE001 - Ray's start-up timeout is a bare Exception
            # Ray 2.60's raylet gives its agents a fixed 15 s to report their ports and aborts
            # otherwise (ray-project/ray#65983); on a busy box a second start often makes it.
            if attempt == 1 and "timed out during startup" in str(exc):
                print("a local Ray did not start in time (its agents were too slow: a busy machine?); "
                      "trying once more", file=console or sys.stderr, flush=True)
                ray.shutdown()
                continue
            raise RunError(f"could not start a local Ray ({_one_line_error(exc)}); its logs are in "
                           f"{_ray_session_logs()} (raylet.out). On a busy machine its agents can miss Ray's "
                           "start-up deadline: retry, or start one with `ray start --head` and pass "
                           "--ray-address") from None
    _route_ray_logs(log_file)
    return True


def _route_ray_logs(log_file: Optional[Path]) -> None:
    """After ``ray.init``: Ray's Python log lines (the ``ray`` logger, which ``ray.init`` gave a
    stderr handler) and the raylet's error messages go to ``log_file``, not the console."""
    ray_log = logging.getLogger("ray")
    ray_log.propagate = False
    for h in list(ray_log.handlers):
        ray_log.removeHandler(h)
        if getattr(h, "_geolip", False):
            h.close()
    _quiet_error_messages()
    if log_file is None:
        ray_log.addHandler(logging.NullHandler())
        return
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler._geolip = True
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    ray_log.addHandler(handler)
    ray_log.setLevel(logging.INFO)


def _quiet_error_messages() -> None:
    """The raylet's error messages (a worker died: a paragraph) to the driver log, not stdout.
    Hand-written: Ray 2.60 prints them from a background thread of the driver
    (``worker.listen_error_messages`` -> ``print_to_stdstream``) with no switch; the job's
    FAIL line says what happened."""
    import ray._private.worker as rw

    printer = getattr(rw, "print_to_stdstream", None)
    if printer is None or getattr(printer, "_geolip", False):
        return
    ray_log = logging.getLogger("ray")

    def to_log(data, ignore_prefix: bool = False):
        if data.get("pid") == "raylet":
            for line in data.get("lines", []):
                ray_log.warning("(raylet) %s", line)
            return
        printer(data, ignore_prefix)

    to_log._geolip = True
    rw.print_to_stdstream = to_log


def _ray_session_logs() -> str:
    return os.path.join(tempfile.gettempdir(), "ray", "session_latest", "logs")


def _check_reachable(address: str) -> None:
    """One line for an address nothing listens on. Hand-written because ``ray.init`` retries
    an unreachable GCS for minutes, printing a warning every few seconds."""
    if address == "auto":
        return  # Ray looks for a cluster started on this box
    if address.startswith("ray://"):
        raise RunError(f"--ray-address {address}: Ray Client addresses are not supported; pass the cluster's "
                       "GCS address <head-ip>:6379 and run run_all.py on a box of the cluster's network")
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RunError(f"--ray-address {address}: expected <head-ip>:<port>, e.g. 10.0.0.1:6379 "
                       "(the address `ray start --head --port=6379` prints)")
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            pass
    except OSError as exc:
        raise RunError(f"--ray-address {address}: nothing answers there ({exc.strerror or exc}); start the head "
                       "with `ray start --head --port=6379` and pass <head-ip>:6379, or leave --ray-address "
                       "out (and unset RAY_ADDRESS) for a local Ray") from None


def check_cluster(out_root: Path, mode: str, runtime_env: dict) -> list[dict]:
    """At start: every alive node runs a probe task. ``shared`` needs each node to see the
    driver's output root; every node other than the driver's needs the driver's checkout
    (same ``geolip_lib`` code). One-line :class:`RunError` otherwise."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    token = uuid.uuid4().hex
    probe_file = out_root / f".ray-probe-{token[:12]}"
    probe_file.write_text(token, encoding="utf-8")
    probe = ray.remote(num_cpus=0, max_retries=0)(_probe)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    try:
        refs = [probe.options(runtime_env=runtime_env, scheduling_strategy=NodeAffinitySchedulingStrategy(
            n["NodeID"], soft=False)).remote(str(probe_file), token) for n in nodes]
        try:
            found = ray.get(refs, timeout=300)
        except ray.exceptions.GetTimeoutError:
            raise RunError("the Ray nodes did not answer a start-up probe within 300 s (`ray status` on the head "
                           "shows whether they are alive)") from None
        except ray.exceptions.RayError as exc:
            cause = getattr(exc, "cause", None) or exc
            raise RunError(f"a Ray node cannot run this checkout's code ({_one_line_error(cause)}); every box needs "
                           f"this checkout at {ROOT} with its .venv, and `ray start` run from that .venv") from None
    finally:
        probe_file.unlink(missing_ok=True)
    here = ray.get_runtime_context().get_node_id()
    mine = library_hash()
    for f in found:
        if f["node"] != here and (f["root"] != str(ROOT) or f["library"] != mine):
            raise RunError(f"Ray node {f['ip']}: its checkout ({f['root']}) differs from this one ({ROOT}: geolip_lib "
                           "code or path); put the same checkout at the same path on every box (git pull there), "
                           "or use a shared filesystem")
    if mode == "shared":
        blind = sorted({f["ip"] for f in found if not f["sees_out_root"]})
        if blind:
            raise RunError(f"--ray-results shared: Ray node(s) {', '.join(blind)} do not see the output root "
                           f"{out_root} (not on shared storage); pass --ray-results return, or --out <a directory "
                           "every node mounts at the same path>")
    return found


def _is_local_cluster() -> bool:
    """An already-joined Ray whose only node is this box (a local Ray started by this process)."""
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return len(nodes) == 1 and nodes[0].get("NodeID") == ray.get_runtime_context().get_node_id()
