"""A small image-caption set in Hugging Face's ``imagefolder`` layout (images and a ``metadata.jsonl`` of
``file_name`` and ``text``), the layout a user's own set or a local copy of WIT can take: drawn shapes
of a few colours, sizes and places, each captioned with what it shows."""
from __future__ import annotations

import json
from itertools import product
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

COLOURS = {"red": (220, 30, 30), "green": (30, 170, 40), "blue": (30, 60, 220), "yellow": (230, 210, 40),
           "black": (20, 20, 20)}
SHAPES = ("circle", "square", "triangle", "bar")
SIZES = {"small": 9, "large": 24}


def write_image_captions(folder: Path, n: int = 40, seed: int = 0) -> Path:
    """``n`` (at most 40) captioned drawings in ``folder``; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows = []
    for i, (colour, shape, size) in enumerate(list(product(COLOURS, SHAPES, SIZES))[:n]):
        im = Image.new("RGB", (64, 64), (245, 245, 245))
        d, r = ImageDraw.Draw(im), SIZES[size]
        cx, cy = (int(v) for v in rng.integers(26, 38, 2))
        box = [cx - r, cy - r, cx + r, cy + r]
        fill = COLOURS[colour]
        if shape == "circle":
            d.ellipse(box, fill=fill)
        elif shape == "square":
            d.rectangle(box, fill=fill)
        elif shape == "triangle":
            d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=fill)
        else:
            d.rectangle([cx - r, cy - r // 3, cx + r, cy + r // 3], fill=fill)
        im.save(folder / f"{i:03d}.png")
        rows.append({"file_name": f"{i:03d}.png", "text": [f"a {size} {colour} {shape}", f"{colour} {shape}"]})
    (folder / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder
