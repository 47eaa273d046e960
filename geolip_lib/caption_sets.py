"""Where notebook 17's image–caption pairs come from, checked before any kernel starts.

``IMAGE_CAPTIONS`` names the paper's set on the Hugging Face hub (:data:`WIT_1024`) or a local folder: one
written by ``Dataset.save_to_disk`` (``state.json`` beside its arrow files) or an ``imagefolder`` (images
and a ``metadata.jsonl`` / ``metadata.csv`` of ``file_name`` and ``text``). :func:`source_problem` is the one
check of that value: the runner calls it for a params file's or a profile's job (one line, exit 2, no
kernel), :func:`geolip_lib.probes.captions.load_image_captions` again in the notebook. It reads only the
folder's entries, never its images, so it is bounded in time and memory whatever the folder holds.
"""
from __future__ import annotations

import os
import stat
from typing import Any, Optional

from .paths import resolve

__all__ = ["WIT_1024", "HUB_WIT", "REMEDY", "MARKERS", "source_problem"]

#: the name that reads the paper's own set from the hub
WIT_1024 = "wit_1024"
#: the paper's call (platonic-rep, extract_features.py): ``load_dataset(**HUB_WIT)``
HUB_WIT = {"path": "minhuh/prh", "revision": "wit_1024", "split": "train"}
#: a folder is a set when it holds one of these as a regular file
MARKERS = ("state.json", "metadata.jsonl", "metadata.csv")
REMEDY = ("give None (text only), 'wit_1024' (the paper's WIT set, from the hub), or a folder: a "
          "Dataset.save_to_disk copy, or images with a metadata.jsonl of file_name and text")
_MAX_CHARS = 4096


def source_problem(source: Any) -> Optional[str]:
    """Why ``source`` cannot be read as an image–caption set, in one line (None: it can be tried)."""
    if not isinstance(source, str) or not source.strip() or len(source) > _MAX_CHARS or "\x00" in source:
        return f"expected a name or a folder path, got {str(source)[:80]!r}; {REMEDY}"
    if source == WIT_1024:
        return None
    folder = resolve(source)
    if os.path.islink(folder) or not folder.is_dir():
        return f"{source[:200]!r} is not a folder (a link is not followed); {REMEDY}"
    for name in MARKERS:
        try:
            st = os.lstat(folder / name)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            return None
    return f"{source[:200]!r} holds neither state.json nor metadata.jsonl / metadata.csv as a file; {REMEDY}"
