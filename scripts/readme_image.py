#!/usr/bin/env python
"""The front page's picture: the first screen of a real run's index.html, as a reader's browser shows it.

    make report                                   # reports/demo (the demo profile)
    .venv/bin/python scripts/readme_image.py      # -> docs/img/matrix.png (1280 x 800, headless Chromium)
    .venv/bin/python scripts/readme_image.py --root reports/real --out /tmp/real.png

The README's picture is this file; run it again after a run whose verdicts differ, and commit the PNG.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from geolip_lib.report.checks import FIRST_SCREEN_PX, WINDOW_PX  # noqa: E402
from geolip_lib.report.printing import chromium_cmd, find_chromium  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT / "reports" / "demo", help="an output root with index.html")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "matrix.png", help="the PNG to write")
    a = ap.parse_args(argv)
    index = a.root / "index.html"
    if not index.is_file():
        print(f"error: {index} does not exist; run make report (or --report-only) first, or pass --root", file=sys.stderr)
        return 2
    chromium = find_chromium()
    if chromium is None:
        print("error: no Chromium found; install Debian's chromium (scripts/setup.sh does, as root)", file=sys.stderr)
        return 2
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        cmd = chromium_cmd(chromium, profile, f"--window-size={WINDOW_PX},{FIRST_SCREEN_PX}", "--hide-scrollbars",
                           "--virtual-time-budget=10000", f"--screenshot={a.out.resolve()}", index.resolve().as_uri())
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if r.returncode != 0 or not a.out.is_file():
        print(f"error: chromium did not write {a.out} (exit {r.returncode})", file=sys.stderr)
        return 1
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
