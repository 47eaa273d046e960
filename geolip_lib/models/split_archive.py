"""What is wrong with a zip archive joined from parts (``join:`` of a packaged model, :mod:`.packaged`).

The parts come from wheels whose sha256 the params file pins, so fetching them again gives the same bytes: a
joined archive that zipfile cannot read means the params file lists the parts wrongly (one missing from
``dists:``, one listed twice, or out of part order), and the one-line refusal says which, from two facts that cost
no decompression: the part numbers the member names end with (``model.zip.001`` ... ``.005``), and the sizes the
archive's end-of-directory record declares (the directory's offset and size: the bytes the whole archive holds).
"""
from __future__ import annotations

import re
import struct
import zipfile
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["problem"]

#: the end-of-central-directory record: its signature, and its size without the trailing comment
_EOCD, _EOCD_SIZE = b"PK\x05\x06", 22
#: how far from the end the record may sit (a comment of at most 64 KiB follows it)
_EOCD_SEARCH = _EOCD_SIZE + (1 << 16)


def _read_all_headers(path: Path) -> Optional[str]:
    """None when zipfile reads the archive's directory and every member's local header (no member's data is
    decompressed), else zipfile's complaint."""
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                with zf.open(info):
                    pass
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _declared_size(path: Path) -> Optional[int]:
    """The bytes the archive holds by its end-of-directory record (directory offset + directory size + the record
    and its comment), or None without a readable record (ZIP64 archives say 0xFFFFFFFF: not read here)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fh.seek(max(0, size - _EOCD_SEARCH))
        tail = fh.read()
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < _EOCD_SIZE:
        return None
    cd_size, cd_offset = struct.unpack("<II", tail[at + 12:at + 20])
    if 0xFFFFFFFF in (cd_size, cd_offset):
        return None
    return cd_offset + cd_size + (len(tail) - at)


def _numbers(parts: Sequence[tuple[str, str, int]]) -> Optional[list[int]]:
    nums = [re.search(r"(\d+)$", member) for _, member, _ in parts]
    return [int(m.group(1)) for m in nums] if all(nums) else None


def problem(path: Path, parts: Sequence[tuple[str, str, int]]) -> Optional[str]:
    """Why the archive ``path``, joined from ``parts`` (``(distribution, member, bytes)`` in the order they were
    joined), is not one readable zip archive (None: it is): a part number missing or repeated, parts out of
    order, fewer or more bytes than the archive's directory declares."""
    broken = _read_all_headers(path)
    if broken is None:
        return None
    listed = ", ".join(f"{d} ({m}, {n} B)" for d, m, n in parts)
    nums = _numbers(parts)
    if nums:
        missing = sorted(set(range(min(min(nums), 1), max(nums) + 1)) - set(nums))
        twice = sorted({n for n in nums if nums.count(n) > 1})
        if missing:
            return (f"part {', '.join(map(str, missing))} of the split archive is missing: the {len(parts)} parts "
                    f"joined are numbered {', '.join(map(str, nums))} ({listed})")
        if twice:
            return f"part {', '.join(map(str, twice))} of the split archive is listed twice ({listed})"
        if nums != sorted(nums):
            return f"the parts are not in part order: joined as {', '.join(map(str, nums))} ({listed})"
    declared = _declared_size(path)
    have = path.stat().st_size
    if declared is None:
        return (f"the {len(parts)} parts joined ({listed}) end without the archive's directory, which the last part "
                f"holds: the last part is missing ({broken})")
    if declared > have:
        return (f"the {len(parts)} parts joined ({listed}) hold {have} bytes, the archive's directory declares "
                f"{declared}: a part of {declared - have} bytes is missing ({broken})")
    if declared < have:
        return (f"the {len(parts)} parts joined ({listed}) hold {have} bytes, the archive's directory declares "
                f"{declared}: {have - declared} bytes too many, a part listed twice or of another archive ({broken})")
    return (f"the {len(parts)} parts joined ({listed}) hold the bytes the archive's directory declares, but not in "
            f"its order: parts out of order, or one of another upload ({broken})")
