"""No file of the project points at an issue by its number: a maintainer who picks the project up cannot
open the tracker it came from, so the reason must stand in the words (the code's, the docs', the params
files' and, through them, the report's)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]
#: the word "issue" (or "issues") followed by a number, as a tracker names its items (a heading's "#" is no issue)
PATTERN = re.compile(r"\b[Ii]ssues? +#?\d+")


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an sdist): every text file under the root
        return [p for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts and ".venv" not in p.parts]
    return [ROOT / n for n in out.decode().split("\0") if n]


def test_no_file_names_an_issue_number():
    found = []
    for p in _tracked():
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # a binary file (a PNG, a wheel) or one removed since the index was read
        for i, line in enumerate(text.splitlines(), 1):
            if PATTERN.search(line):
                found.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()[:120]}")
    assert not found, f"{len(found)} references to issue numbers (write the reason instead):\n" + "\n".join(found[:40])


def test_the_pattern_finds_what_it_should():
    word = "issue"  # joined here so that this file holds no reference itself
    assert PATTERN.search(f"as asked ({word} 37 §2)") and PATTERN.search(f"{word.title()} 38: x")
    assert PATTERN.search(f"{word}s 21")
    assert not PATTERN.search(f"no {word} here") and not PATTERN.search(f"t{word} 3")
    assert not PATTERN.search(f"an {word}: 3")
