"""Warm kernels: a job's kernel forked from a process that has already imported torch & co.

Where a tiny job's seconds go (measured on the demo profile, 2-core CPU; see the README's
"Demo speed" table): about 4 s to start a kernel, 8-10 s in the notebook's import cell
(torch, scipy.stats, pandas, transformers, seaborn) and often less than that in the work
itself. A *zygote* (the pattern of Android's app zygote and of ``multiprocessing``'s
``forkserver``) pays the imports once per run: it imports the heavy libraries, then forks one
child per kernel; the child becomes an ordinary ``ipykernel`` on the connection file of the
kernel manager that asked for it. Nothing maintained does this for Jupyter kernels
(``multiprocessing.forkserver`` forks workers, not kernels with a connection file), hence
this module.

How a kernel is started:

* The job's ``KernelManager`` gets a kernelspec whose argv is ``python -m
  geolip_lib.runner.warm launch -f {connection_file}`` (:class:`WarmSpecManager`).
* That *launcher* (a small process, which jupyter_client owns, signals and kills) sends its
  stdin/stdout/stderr (``SCM_RIGHTS``), environment, working directory and argv to the
  zygote over a unix socket, forwards SIGINT/SIGTERM to the forked kernel and exits with its
  status. Without a zygote (none running, socket refused) it *execs* the ordinary
  ``ipykernel_launcher``: a cold start, same result.
* The forked child takes the launcher's descriptors, environment and directory, applies the
  thread counts of its environment (``OMP_NUM_THREADS``) to torch and the BLAS pools,
  watches the launcher (a kernel whose launcher was killed exits at once, so ``killpg`` of
  the launcher leaves no orphan), and runs ``ipykernel``.

What is preloaded is chosen to be state-free: numerical libraries, torch, transformers,
pandas, seaborn and ``matplotlib.pyplot`` with the kernel's ``MPLBACKEND`` (importing pyplot
does not load the backend: the inline backend module, which binds to the running IPython
shell, is imported by the kernel at its first figure, as usual). ``geolip_lib`` itself is
not preloaded, so a kernel runs the checkout's code as it is when the kernel starts.
Measured: the import cell of notebook 01 takes 10.7 s in a fresh process and 0.2 s after
this preload (loaded 2-core machine).
On by default; ``run_all.py --cold`` or ``GEOLIP_WARM=0`` starts every kernel as a fresh
process. Two differences between warm and cold kernels were found and fixed, and the
notebook tests run the demo's jobs warm against nbval's cold kernels:

* float results of notebook 01 on tiny-t5 differed at ~1e-8: numba's OpenMP layer had reset
  torch's thread count in *every* kernel (``metrics/threads.py``); in a cold kernel the
  parallel split happened to differ from a forked one. Fixed at the cause: torch keeps its
  thread count across numba kernels, and warm == cold on the whole demo profile.
* progress bars were console text instead of widgets: ``tqdm.auto`` decides at import, and
  the zygote imported it (through transformers) before any kernel existed
  (:func:`.warm_kernel._forget_console_tqdm`).
"""
from __future__ import annotations

import copy
import ctypes
import importlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

# the launcher (``launch``) is exec'd once per kernel: this module imports only the standard
# library and the thread budget at module level, so that it starts in milliseconds
from .resources import KERNEL_END, kernel_env, remove_orphan_dirs
from .warm_kernel import become_kernel

SOCKET_ENV = "GEOLIP_WARM_SOCKET"
WARM_PREFIX = "geolip-warm-"  # <tmp>/geolip-warm-<runner pid>-*: the zygote's socket folder
PID_ENV = "GEOLIP_WARM_PID"
PRELOAD = ("numpy", "scipy.linalg", "scipy.stats", "pandas", "torch", "transformers", "safetensors.torch",
           "matplotlib", "matplotlib.pyplot", "seaborn", "numba", "yaml", "pydantic", "nltk", "IPython",
           "ipykernel.kernelapp")
_MAX_MSG = 1 << 20


# ---------------------------------------------------------------------------- the runner's side
class WarmPool:
    """Start a zygote for the duration of a run (context manager); :meth:`env` is what a job's
    kernel environment needs to find it. ``enabled=False`` (or ``GEOLIP_WARM=0``; default on)
    gives cold kernels."""

    def __init__(self, preload: Sequence[str] = PRELOAD, enabled: Optional[bool] = None, log: Optional[Path] = None):
        if enabled is None:  # opt-in (run_all --warm or GEOLIP_WARM=1): see the module docstring's caveat
            enabled = os.environ.get("GEOLIP_WARM", "1").strip().lower() not in ("0", "false", "no", "off")
        self.enabled = enabled and hasattr(socket, "send_fds") and hasattr(os, "fork")
        self.preload = tuple(preload)
        self.log = log
        self.proc = None
        self.dir = None
        self.path = None

    def __enter__(self) -> "WarmPool":
        if not self.enabled:
            return self
        remove_orphan_dirs(WARM_PREFIX)  # the socket folders of runners killed with SIGKILL
        self.dir = tempfile.mkdtemp(prefix=f"{WARM_PREFIX}{os.getpid()}-")
        self.path = os.path.join(self.dir, "zygote.sock")
        env = kernel_env({"MPLBACKEND": "module://matplotlib_inline.backend_inline"})
        if self.log:
            Path(self.log).parent.mkdir(parents=True, exist_ok=True)
        if self.log and os.path.islink(self.log):  # never append through a link (to a file outside the root)
            os.unlink(self.log)
        out = os.fdopen(os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644), "ab") \
            if self.log else subprocess.DEVNULL
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "geolip_lib.runner.warm", "serve", self.path, ",".join(self.preload),
                 str(os.getpid())],
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        finally:
            if self.log:
                out.close()
        return self

    def env(self) -> dict:
        """Environment entries for a job's kernel (empty when cold)."""
        if not (self.enabled and self.path and self.proc is not None):
            return {}
        return {SOCKET_ENV: self.path, PID_ENV: str(self.proc.pid)}

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - then by force
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self.proc.wait(timeout=10)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def warm_kernel_spec(spec):
    """A copy of an ipykernel ``spec`` whose argv starts the kernel through the launcher."""
    argv = list(spec.argv)
    try:
        i = argv.index("ipykernel_launcher")
    except ValueError:
        return spec  # not an ipykernel spec: leave it alone
    if i < 2 or argv[i - 1] != "-m":
        return spec
    new = copy.copy(spec)
    new.argv = argv[: i - 1] + ["-m", "geolip_lib.runner.warm", "launch"] + argv[i + 1:]
    return new


def kernel_manager(kernel_name: str, warm: bool):
    """An ``AsyncKernelManager`` for ``kernel_name`` (what nbclient expects: with a blocking
    client its output poll blocks the event loop, and a dead kernel is never noticed),
    starting its kernel through the zygote when ``warm`` (the job's environment then carries
    :data:`SOCKET_ENV`)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager as KernelManager

    if not warm:
        return KernelManager(kernel_name=kernel_name)

    class WarmSpecManager(KernelSpecManager):
        def get_kernel_spec(self, name):
            return warm_kernel_spec(super().get_kernel_spec(name))

    return KernelManager(kernel_name=kernel_name, kernel_spec_manager=WarmSpecManager())


# ---------------------------------------------------------------------------- the launcher
def launch(argv: list) -> int:
    """Kernel launcher (run by jupyter_client): ask the zygote for a kernel, else exec a cold one."""
    path = os.environ.get(SOCKET_ENV)
    sock = None
    if path:
        _wait_for(path, os.environ.get(PID_ENV, ""))
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(path)
        except OSError:
            sock = None
    if sock is None:
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])
    msg = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "launcher": os.getpid()}).encode()
    socket.send_fds(sock, [len(msg).to_bytes(8, "big") + msg], [0, 1, 2])
    reply = _recv_line(sock)
    if not reply:  # the zygote refused or died: start cold
        sock.close()
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])
    child = json.loads(reply)["pid"]

    def forward(signum, _frame):
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass
        if signum == signal.SIGTERM:
            os._exit(128 + signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(s, forward)
    status = _recv_line(sock)  # the zygote writes the kernel's exit status when it reaps it
    try:
        info = json.loads(status) if status else {}
        code = int(info["status"])
    except (ValueError, KeyError, TypeError):
        return 1
    if code != 0:  # to the job's kernel.log: what the runner reads to say how the kernel died
        print(KERNEL_END.format(pid=child, status=code, kb=int(info.get("maxrss_kb") or 0)), file=sys.stderr,
              flush=True)
    if code < 0:  # die of the kernel's signal, so that jupyter_client sees what a cold kernel shows
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


def _wait_for(path: str, pid: str, limit_s: float = 180.0) -> None:
    """A zygote still importing: wait for its socket while it is alive (a cold start would
    pay the same imports), at most ``limit_s``."""
    t0 = time.monotonic()
    while not os.path.exists(path) and time.monotonic() - t0 < limit_s:
        if not (pid.isdigit() and os.path.exists(f"/proc/{pid}")):
            return
        time.sleep(0.1)


def _recv_line(sock) -> bytes:
    buf = b""
    while not buf.endswith(b"\n"):
        try:
            chunk = sock.recv(4096)
        except InterruptedError:
            continue
        if not chunk:
            return b""
        buf += chunk
    return buf.strip()


# ---------------------------------------------------------------------------- the zygote
def serve(path: str, preload: Sequence[str], parent: int) -> None:
    """Import ``preload``, then fork a kernel per connection until told to stop."""
    _die_with_parent()
    for mod in preload:
        try:
            importlib.import_module(mod)
        except Exception as exc:  # noqa: BLE001 - a module missing here is imported by the kernel
            print(f"warm: not preloaded {mod}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(16)
    os.chmod(path, 0o600)
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    signal.set_wakeup_fd(wfd)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    children: dict[int, socket.socket] = {}
    print(f"warm: zygote {os.getpid()} ready ({len(preload)} modules)", file=sys.stderr, flush=True)
    while True:
        try:
            ready, _, _ = select.select([srv, rfd], [], [], 5.0)
        except InterruptedError:
            ready = []
        if rfd in ready:
            os.read(rfd, 4096)
        _reap(children)
        if srv in ready:
            try:
                conn, _ = srv.accept()
                msg, fds, _flags, _addr = socket.recv_fds(conn, _MAX_MSG, 3)
                need = int.from_bytes(msg[:8], "big")
                while len(msg) - 8 < need:
                    more = conn.recv(_MAX_MSG)
                    if not more:
                        raise OSError("launcher went away")
                    msg += more
                req = json.loads(msg[8:8 + need])
            except (OSError, ValueError) as exc:
                print(f"warm: bad request: {exc}", file=sys.stderr, flush=True)
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                srv.close()
                os.close(rfd)
                os.close(wfd)
                for other in children.values():  # the other kernels' status connections
                    other.close()
                become_kernel(conn, fds, req)  # never returns
            for fd in fds:
                os.close(fd)
            children[pid] = conn
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")


def _reap(children: dict) -> None:
    while children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is not None:
            try:  # ru_maxrss: the kernel's peak resident memory, in kB on Linux
                conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status),
                                         "maxrss_kb": usage.ru_maxrss}).encode() + b"\n")
            except OSError:
                pass
            conn.close()


def _die_with_parent() -> None:
    """The zygote dies with the runner, even when the runner is killed (Linux prctl)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "launch":
        sys.exit(launch(sys.argv[2:]))
    elif cmd == "serve":
        serve(sys.argv[2], [m for m in sys.argv[3].split(",") if m], int(sys.argv[4]))
    else:
        print("usage: python -m geolip_lib.runner.warm launch -f CONNECTION_FILE | serve SOCKET MODULES PARENT_PID",
              file=sys.stderr)
        sys.exit(2)
