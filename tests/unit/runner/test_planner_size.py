"""A small, readable planner. ``runner/estimate.py`` was 836 lines and the planning code
1.8k, more than the executor; it was split by idea (cost model, rates, memory rules, model sizes, GPU
rates, the plan). This keeps it so: no module of the runner over 450 lines."""
from __future__ import annotations

from pathlib import Path

import pytest

import geolip_lib.runner

pytestmark = pytest.mark.unit

MAX_LINES = 450


def test_no_runner_module_is_over_450_lines():
    folder = Path(geolip_lib.runner.__file__).parent
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in sorted(folder.glob("*.py"))}
    assert {"estimate.py", "plan.py", "cost_model.py", "model_sizes.py"} <= set(sizes)
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert over == {}, f"split these by idea: {over}"
