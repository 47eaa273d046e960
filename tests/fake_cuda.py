"""A CUDA device on the CPU: tests that guard the GPU path on a machine without a GPU.

CI has no GPU, yet the crashes a GPU box meets are device mix-ups (a tensor made on the CPU meeting
one on ``cuda:0``; ``.numpy()`` of a CUDA tensor), and each is decided by *where* tensors live, not
by what they hold. :class:`FakeCuda` is a :class:`torch.overrides.TorchFunctionMode` that runs every
op on the CPU but keeps a device tag per tensor and applies CUDA's placement rules:

* a tensor asked for on ``cuda`` (a factory's ``device=``, ``.to("cuda")``, ``.cuda()``, a module's
  ``.to``) is made on the CPU and tagged; ``.device`` of a tagged tensor says ``cuda:0``, ``is_cuda``
  is True, ``.cpu()`` / ``.to("cpu")`` give an untagged copy;
* an op whose tensor arguments are tagged and untagged raises ``RuntimeError: Expected all tensors
  to be on the same device, but found at least two devices, cuda:0 and cpu!`` as CUDA does — except
  where CUDA allows the mix: 0-dim CPU tensors (scalars), CPU indices in ``t[idx]``, ``copy_`` and
  explicit transfers (``new_tensor``, ``torch.tensor(..., device=)``);
* ``.numpy()`` / ``np.asarray`` of a tagged tensor raises ``TypeError: can't convert cuda:0 device
  type tensor to numpy`` as CUDA does;
* results of an op with a tagged input are tagged (gradients too, through ``.grad``).

:func:`install` also makes ``torch.cuda.is_available()`` True (so ``DEVICE="auto"`` picks CUDA) and
turns the memory / synchronisation calls into no-ops. Written by hand because no library offers a
device that computes on the CPU but places like CUDA: ``meta`` tensors hold no values (notebooks
branch on values) and torch's FakeTensorMode has none either.

What it cannot see: kernels that exist on the CPU only (it runs everything on the CPU), dtype rules
that differ on CUDA, and memory. Those are what ``make test-gpu`` on a GPU box is for.

Use: ``with fake_cuda.FakeCuda(): ...`` around library calls, or ``python tests/fake_cuda.py
notebooks/02_weight_topology.py KEY=VALUE ...`` to run a notebook's script under it (parameters
injected after its parameters cell, as papermill does).
"""
from __future__ import annotations

import ast
import contextlib
import sys
import types
from pathlib import Path
from typing import Any, Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map

FAKE = torch.device("cuda", 0)
_TAG = "_geolip_fake_cuda"


def is_fake(t: Any) -> bool:
    """A tensor this mode placed on the fake ``cuda:0``."""
    return isinstance(t, torch.Tensor) and bool(t.__dict__.get(_TAG, False))


# bytes of every tensor tagged since the last reset: what torch.cuda's memory counters answer (a
# running total, never freed, so that a peak-memory ratio is a positive number, not 0 / 0)
ALLOCATED = [0]


def _set_tag(t: Any, on: bool) -> Any:
    if isinstance(t, torch.Tensor):
        if on:
            if not t.__dict__.get(_TAG):
                ALLOCATED[0] += t.numel() * t.element_size()
            t.__dict__[_TAG] = True
        else:
            t.__dict__.pop(_TAG, None)
    return t


def _is_cuda(device: Any) -> bool | None:
    """True for a CUDA device spec, False for another one, None for no device."""
    if device is None:
        return None
    if isinstance(device, int) and not isinstance(device, bool):
        return True  # .to(0): CUDA device 0
    try:
        return torch.device(device).type == "cuda"
    except (TypeError, RuntimeError, ValueError):
        return None


def _descriptor(func) -> tuple[str, str] | None:
    """('device', '__get__') for the getter of ``Tensor.device``, and so on."""
    owner = getattr(func, "__self__", None)
    if getattr(func, "__name__", None) in ("__get__", "__set__") and owner is not None:
        return getattr(owner, "__name__", ""), func.__name__
    return None


class FakeCudaError(RuntimeError):
    """A device mix-up CUDA would raise on (a RuntimeError, as CUDA's own)."""


# ops where tensors on the two devices may meet (CUDA copies or reads only sizes)
_MIX_OK = {"copy_", "new_tensor", "new_zeros", "new_ones", "new_empty", "new_full", "expand_as", "view_as",
           "reshape_as", "type_as", "set_", "__setitem__", "is_same_size", "_has_compatible_shallow_copy_type",
           "is_set_to", "swap_tensors"}


class FakeCuda(TorchFunctionMode):
    """Run on the CPU with CUDA's placement rules (module docstring)."""

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        desc = _descriptor(func)
        if desc is not None:
            return self._descriptor_call(desc, func, args)
        if name in ("numpy", "__array__") and args and is_fake(args[0]):
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first. (fake CUDA: tests/fake_cuda.py)")
        if name == "cpu":
            out = func(*args, **kwargs)
            if is_fake(args[0]):
                out = out.clone() if out is args[0] else out
            return _set_tag(out, False)
        if name == "cuda":
            out = args[0] if is_fake(args[0]) else args[0].clone()  # torch's own .cuda() would look for a driver
            return _set_tag(out, True)
        if name == "_parse_to":  # Module.to(device=...) parses its arguments: nothing is made here
            return func(*args, **kwargs)
        if name == "to" and args and isinstance(args[0], torch.Tensor):
            return self._to(func, args, kwargs)
        if name in ("pin_memory",):
            return args[0]
        if name in ("is_pinned",):
            return False
        if name == "get_device" and args:
            return 0 if is_fake(args[0]) else -1
        if name == "type_as":
            out = func(*args, **kwargs)
            if out is args[0] and is_fake(args[0]) != is_fake(args[1]):
                out = out.clone()
            return _set_tag(out, is_fake(args[1]))
        want = _is_cuda(kwargs.get("device"))
        if "device" in kwargs and want is not None:
            if want:
                kwargs["device"] = "cpu"
            out = func(*args, **kwargs)
            return tree_map(lambda t: _set_tag(t, want), out)
        leaves = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
        fake = any(is_fake(t) for t in leaves)
        if fake and name not in _MIX_OK:
            self._check_mix(func, name, args, kwargs, leaves)
        out = func(*args, **kwargs)
        if name in ("new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"):
            return _set_tag(out, is_fake(args[0]))
        if fake:
            tree_map(lambda t: _set_tag(t, True), out)
        return out

    # ------------------------------------------------------------------
    def _check_mix(self, func, name, args, kwargs, leaves) -> None:
        if name == "__getitem__" and is_fake(args[0]):
            return  # CPU indices into a CUDA tensor: CUDA allows it
        plain = [t for t in leaves if not is_fake(t) and t.dim() > 0 and t.device.type == "cpu"]
        if plain:
            what = getattr(func, "__qualname__", name)
            raise FakeCudaError("Expected all tensors to be on the same device, but found at least two devices, "
                                f"cuda:0 and cpu! (fake CUDA: {what} got a CPU tensor of shape "
                                f"{tuple(plain[0].shape)} beside a cuda:0 one)")

    def _descriptor_call(self, desc, func, args):
        attr, kind = desc
        if kind == "__get__":
            t = args[0]
            if attr == "device" and is_fake(t):
                return FAKE
            if attr == "is_cuda" and is_fake(t):
                return True
            if attr == "is_cpu" and is_fake(t):
                return False
            out = func(*args)
            if attr in ("grad", "data", "T", "mT", "H", "mH", "real", "imag") and is_fake(t):
                _set_tag(out, True)
            return out
        out = func(*args)
        if attr == "data":  # param.data = value (Module.to / _apply): the parameter moves with the value
            _set_tag(args[0], is_fake(args[1]))
        elif attr == "grad" and args[1] is not None:
            if is_fake(args[0]) != is_fake(args[1]):
                raise FakeCudaError("assigned grad has data located on a different device (fake CUDA)")
        return out

    def _to(self, func, args, kwargs):
        src = args[0]
        other = next((a for a in args[1:] if isinstance(a, torch.Tensor)), kwargs.get("other"))
        if isinstance(other, torch.Tensor):
            want = is_fake(other)
            out = func(src, dtype=other.dtype, **{k: v for k, v in kwargs.items() if k not in ("other", "dtype")})
        else:
            copy = bool(kwargs.pop("copy", False))
            device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args[1:], **kwargs)
            want = _is_cuda(device)
            want = is_fake(src) if want is None else want
            if dtype is None and not copy:
                out = src
            else:
                out = func(src, dtype=src.dtype if dtype is None else dtype, non_blocking=non_blocking, copy=copy)
        if out is src and want != is_fake(src):
            out = src.clone()  # a transfer makes a new tensor
        return _set_tag(out, want)


_NOOPS = ("synchronize", "empty_cache", "reset_peak_memory_stats", "reset_accumulated_memory_stats", "ipc_collect",
          "set_device", "init", "manual_seed", "manual_seed_all", "seed", "seed_all")


@contextlib.contextmanager
def install() -> Iterator[FakeCuda]:
    """The mode, plus a ``torch.cuda`` that answers like a one-GPU machine (no-op memory calls)."""
    saved = {}
    props = types.SimpleNamespace(name="fake CUDA (tests/fake_cuda.py)", total_memory=80 << 30, major=9, minor=0,
                                  multi_processor_count=132)
    patch = {
        "is_available": lambda: True, "device_count": lambda: 1, "current_device": lambda: 0,
        "get_device_name": lambda *a, **k: props.name, "get_device_properties": lambda *a, **k: props,
        "get_device_capability": lambda *a, **k: (9, 0), "is_bf16_supported": lambda *a, **k: True,
        "mem_get_info": lambda *a, **k: (70 << 30, 80 << 30),
        # torch.random.fork_rng(devices=[cuda]) saves and restores the CUDA generator: the CPU one draws here
        "get_rng_state": lambda *a, **k: torch.get_rng_state(), "set_rng_state": lambda *a, **k: None,
        "get_rng_state_all": lambda *a, **k: [torch.get_rng_state()], "set_rng_state_all": lambda *a, **k: None,
        **{n: (lambda *a, **k: ALLOCATED[0]) for n in ("memory_allocated", "max_memory_allocated",
                                                       "memory_reserved", "max_memory_reserved")},
        **{n: (lambda *a, **k: None) for n in _NOOPS},
    }
    stream = types.SimpleNamespace(is_capturing=lambda: False, synchronize=lambda: None)
    targets = [(torch.cuda, k, v) for k, v in patch.items()]
    targets += [(torch.accelerator, "current_stream", lambda *a, **k: stream),
                (torch.accelerator, "synchronize", lambda *a, **k: None)]
    for mod, k, v in targets:
        saved[(mod, k)] = getattr(mod, k, None)
        setattr(mod, k, v)
    # nn.Parameter(t) makes a new object with torch.Tensor._make_subclass, which no mode sees: the tag
    # follows the data (parameters built inside `with torch.device("cuda"):`, as random twins are)
    new_param = torch.nn.Parameter.__new__

    def param_new(cls, data=None, requires_grad=True):
        out = new_param(cls, data, requires_grad)
        return _set_tag(out, is_fake(data)) if data is not None else out

    torch.nn.Parameter.__new__ = param_new
    saved[(torch.nn.Parameter, "__new__")] = new_param
    mode = FakeCuda()
    try:
        with mode:
            yield mode
    finally:
        for (mod, k), v in saved.items():
            if v is None:
                delattr(mod, k)
            else:
                setattr(mod, k, v)


def notebook_source(path: str | Path, params: dict) -> str:
    """A jupytext percent script with ``params`` assigned after its parameters cell (papermill's rule)."""
    src = Path(path).read_text(encoding="utf-8")
    marker = '# %% tags=["parameters"]'
    head, sep, tail = src.partition(marker)
    if not sep:
        raise ValueError(f"{path}: no parameters cell ({marker!r})")
    cell, nxt, rest = tail.partition("\n# %%")
    injected = "".join(f"{k} = {v!r}\n" for k, v in params.items())
    return head + sep + cell + "\n# injected parameters\n" + injected + nxt + rest


def run_notebook(path: str | Path, params: dict) -> dict:
    """Execute a notebook's script under :func:`install`; returns its globals."""
    code = compile(notebook_source(path, params), str(path), "exec")
    ns = {"__name__": "__main__", "__file__": str(path)}
    with install():
        exec(code, ns)  # noqa: S102 - the project's own notebook
    return ns


if __name__ == "__main__":  # python tests/fake_cuda.py notebooks/NN_x.py KEY=VALUE ...
    nb, *pairs = sys.argv[1:]
    run_notebook(nb, {k: ast.literal_eval(v) for k, v in (p.split("=", 1) for p in pairs)})
