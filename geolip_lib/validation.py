"""The one shared input-validation helper.

Every public function validates its inputs through these helpers so that bad input
raises a one-line ``ValueError`` that names the offending argument and says what was
expected, e.g. ``ValueError: X: expected a 2-D array (n, d), got shape (5,)``.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from .lazy import lazy

np = lazy("numpy")
torch = lazy("torch")


def fail(name: str, message: str) -> None:
    """Raise ``ValueError("<name>: <message>")``."""
    raise ValueError(f"{name}: {message}")


def as_tensor(
    x: Any,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    min_ndim: int | None = None,
    dtype: torch.dtype | None = None,
    finite: bool = True,
    min_shape: dict[int, int] | None = None,
) -> torch.Tensor:
    """Convert ``x`` to a torch tensor and check it.

    Parameters
    ----------
    x : array-like or torch.Tensor
    name : str
        Argument name used in the error message.
    ndim : int or sequence of int, optional
        Allowed numbers of dimensions.
    min_ndim : int, optional
        Minimum number of dimensions.
    dtype : torch.dtype, optional
        Cast to this floating dtype (e.g. ``torch.float64``).
    finite : bool
        Reject NaN/Inf entries.
    min_shape : dict, optional
        ``{axis: minimum size}``.

    Returns
    -------
    torch.Tensor
    """
    if isinstance(x, torch.Tensor):
        t = x
    else:
        try:
            t = torch.as_tensor(np.ascontiguousarray(x))  # negative strides (a[::-1]) are not tensors
        except Exception as exc:  # noqa: BLE001 - re-raised as one line
            fail(name, f"cannot convert {type(x).__name__} to an array ({exc})")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if t.ndim not in allowed:
            fail(name, f"expected {' or '.join(f'{a}-D' for a in allowed)} input, got shape {tuple(t.shape)}")
    if min_ndim is not None and t.ndim < min_ndim:
        fail(name, f"expected at least {min_ndim} dimensions, got shape {tuple(t.shape)}")
    if min_shape:
        for axis, size in min_shape.items():
            if t.ndim <= abs(axis) - (1 if axis < 0 else 0) or t.shape[axis] < size:
                fail(name, f"axis {axis} must have size >= {size}, got shape {tuple(t.shape)}")
    if dtype is not None:
        t = t.to(dtype)
    elif not (t.is_floating_point() or t.is_complex()):
        t = t.to(torch.float64)
    if finite and t.numel() and not all_finite(t):
        flat = t.detach().reshape(-1)  # a view when contiguous; counted in chunks as checked
        parts = [flat[a:a + FINITE_CHUNK] for a in range(0, flat.numel(), FINITE_CHUNK)]
        nan, inf = sum(int(torch.isnan(p).sum()) for p in parts), sum(int(torch.isinf(p).sum()) for p in parts)
        fail(name, f"contains {nan} NaN and {inf} Inf values (of {t.numel()})")
    return t


#: elements per step of :func:`all_finite` (isfinite of a whole 152k x 1536 table: 1.6 GB of temporaries)
FINITE_CHUNK = 1 << 22


def all_finite(t: torch.Tensor) -> bool:
    """``bool(torch.isfinite(t).all())`` read ``FINITE_CHUNK`` elements at a time (the same verdict,
    no whole-table boolean and intermediate beside ``t``)."""
    if t.numel() <= FINITE_CHUNK:
        return bool(torch.isfinite(t).all())
    flat = t.detach().reshape(-1)  # a view of a contiguous tensor (a copy of a strided one)
    return all(bool(torch.isfinite(flat[a:a + FINITE_CHUNK]).all()) for a in range(0, flat.numel(), FINITE_CHUNK))


class NonFiniteError(ValueError):
    """A number that must stay finite (a training loss, a headline value) became NaN or Inf:
    the job stops there and publishes nothing."""


def check_finite_scalar(value: Any, name: str, *, step: int | None = None, remedy: str = "") -> float:
    """``float(value)`` when finite, else a one-line :class:`NonFiniteError` naming ``name``, the
    value and the step: ``training loss: became nan at step 12; the job stops and publishes
    nothing (lower LR, or check the inputs for NaN / Inf)``. One check for every training loop
    and every headline (``modulators.trainer``, ``attention.training``, ``results.headline``)."""
    v = float(value.detach()) if isinstance(value, torch.Tensor) else float(value)
    if not math.isfinite(v):
        where = f" at step {step}" if step is not None else ""
        verb = "became" if step is not None else "is"
        raise NonFiniteError(f"{name}: {verb} {v}{where}; the job stops and publishes nothing"
                             + (f" ({remedy})" if remedy else ""))
    return v


#: what to try when a training loss is not finite
LOSS_REMEDY = "lower LR, or check the inputs for NaN / Inf"


def check_fraction(value: float, name: str, *, inclusive_high: bool = True) -> float:
    """Check ``0 < value <= 1`` (or ``< 1``)."""
    ok = 0 < value <= 1 if inclusive_high else 0 < value < 1
    if not ok:
        fail(name, f"expected a fraction in (0, 1{']' if inclusive_high else ')'}, got {value!r}")
    return float(value)


def check_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """Check that ``value`` is an int >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        fail(name, f"expected an integer >= {minimum}, got {value!r}")
    return int(value)


def check_choice(value: Any, name: str, choices: Sequence[Any]) -> Any:
    """Check that ``value`` is one of ``choices``."""
    if value not in choices:
        fail(name, f"expected one of {list(choices)}, got {value!r}")
    return value
