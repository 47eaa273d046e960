"""Frozen-weight battery over a canonical catalog, streamed from safetensors.

``TensorStore`` reads one tensor at a time; ``battery.run_battery`` computes the
seed's "inactive weight topology" (SVD ranks, sparsity, QK manifold, dead neurons,
cross-layer correlation, norm scales, position bias) from a catalog and a store.
"""
from ..checkpoints.store import TensorStore

__all__ = ["TensorStore"]
from .battery import BatteryResult, run_battery  # noqa: E402

__all__ += ["BatteryResult", "run_battery"]
