"""What a kernel forked by the warm-kernel zygote (:mod:`.warm`) does before it becomes an
ordinary ``ipykernel``: take its launcher's stdin/stdout/stderr, environment and working
directory, apply the job's thread budget to torch, the BLAS pools and numba, forget the
zygote's console ``tqdm`` choice, and exit when its launcher is gone.

Only the standard library at module level: the zygote imports this module before it
preloads anything, and the child imports what it needs (ipykernel, torch, threadpoolctl)
after fork, when they are already in memory."""
from __future__ import annotations

import importlib
import os
import select
import signal
import sys
import threading
import traceback
import types


def become_kernel(conn, fds, req) -> None:
    """In the zygote's forked child: take the launcher's descriptors, environment and directory,
    apply the job's thread budget, and run ipykernel (never returns)."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(s, signal.SIG_DFL if s != signal.SIGINT else signal.default_int_handler)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        conn.close()
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        _apply_threads()
        _forget_console_tqdm()
        _watch(int(req["launcher"]))
        sys.argv = ["ipykernel_launcher", *req["argv"]]
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    except BaseException:  # noqa: BLE001 - printed to the job's kernel.log
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class _LazyTqdmAuto(types.ModuleType):
    """Stands for ``tqdm.auto`` in a module that bound it in the zygote: imported at first use."""

    def __getattr__(self, name):
        return getattr(importlib.import_module("tqdm.auto"), name)


def _forget_console_tqdm() -> None:
    """``tqdm.auto`` picks notebook widgets or console bars when it is imported, by asking
    whether an IPython kernel is running. The zygote imported it with transformers, before any
    kernel: a warm kernel then drew console bars where a cold one draws widgets (found as nbval
    output differences in notebooks 13 and 14). Forget that import, so that the kernel's first
    ``from tqdm.auto import tqdm`` decides again, and let transformers' logging (which holds the
    module) import it at first use too."""
    for name in ("tqdm.auto", "tqdm.autonotebook"):
        sys.modules.pop(name, None)
        pkg = sys.modules.get("tqdm")
        if pkg is not None and hasattr(pkg, name.split(".")[1]):
            delattr(pkg, name.split(".")[1])
    hf_logging = sys.modules.get("transformers.utils.logging")
    if hf_logging is not None and hasattr(hf_logging, "tqdm_lib"):
        hf_logging.tqdm_lib = _LazyTqdmAuto("tqdm.auto")


def _apply_threads() -> None:
    """The job's ``OMP_NUM_THREADS`` (read by torch and OpenBLAS at import, which happened in
    the zygote) applied to torch and to the BLAS pools, as a cold kernel would have them."""
    n = os.environ.get("OMP_NUM_THREADS")
    if not n or not n.isdigit():
        return
    import torch

    torch.set_num_threads(int(n))
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(int(n))
    except ImportError:
        pass
    numba = sys.modules.get("numba")  # preloaded: its pool size was read from the zygote's environment
    if numba is not None:
        try:
            numba.set_num_threads(min(int(n), numba.config.NUMBA_NUM_THREADS))
        except Exception:  # noqa: BLE001 - numba's own limits; its default then stays
            pass


def _watch(launcher: int) -> None:
    """Exit when the launcher is gone (it is what jupyter_client kills)."""
    try:
        fd = os.pidfd_open(launcher)
    except (AttributeError, OSError):
        return

    def wait():
        select.select([fd], [], [])
        os._exit(1)

    threading.Thread(target=wait, daemon=True, name="geolip-launcher-watch").start()
