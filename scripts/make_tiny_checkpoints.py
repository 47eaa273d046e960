#!/usr/bin/env python
"""Train a tiny model for a few hundred steps on a synthetic task and save checkpoints along
the way with ``save_pretrained`` (geometry over training, tested on real checkpoints).

    .venv/bin/python scripts/make_tiny_checkpoints.py            # -> .cache/tiny_checkpoints/tiny-gpt2/step-0000 ...

The run starts from ``load(BASE).random_init()`` — the random-init twin the notebooks use as
their null (seed ``params.seed + 1``) — so step 0 *is* the random-init model. The task: digits
counting up mod 10 from a random start (``0 1 2 ...``), a third of the positions replaced by one
of 64 fixed word tokens; causal-LM loss, Adam. A few seconds on one CPU core. The folders are
rebuilt only when the recipe changes (``recipe.json``); ``params/models/tiny-gpt2-checkpoints.yaml``
names them.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from geolip_lib import models  # noqa: E402
from geolip_lib.paths import cache_root  # noqa: E402

BASE = "tiny-gpt2"
SAVE_AT = (0, 10, 30, 100, 200)


def _batch(gen: torch.Generator, digits: torch.Tensor, words: torch.Tensor, batch: int, length: int) -> torch.Tensor:
    start = torch.randint(0, 10, (batch, 1), generator=gen)
    ids = digits[(start + torch.arange(length)) % 10]
    noise = torch.rand(batch, length, generator=gen) < 1 / 3
    return torch.where(noise, words[torch.randint(0, len(words), (batch, length), generator=gen)], ids)


def make(out: Path | None = None, base: str = BASE, save_at=SAVE_AT, lr: float = 3e-3, batch: int = 8,
         length: int = 16, seed: int = 0) -> list[Path]:
    """Train ``base``'s random-init twin, saving at each step of ``save_at``; returns the folders.

    A folder set already made with the same recipe is reused (seconds: nothing is trained)."""
    out = Path(out) if out is not None else cache_root() / "tiny_checkpoints" / base
    recipe = {"base": base, "save_at": list(save_at), "lr": lr, "batch": batch, "length": length, "seed": seed,
              "torch": torch.__version__.split("+")[0], "version": 1}
    key = hashlib.sha1(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]
    dirs = [out / f"step-{s:04d}" for s in save_at]
    manifest = out / "recipe.json"
    if manifest.is_file() and json.loads(manifest.read_text()).get("key") == key and all(d.is_dir() for d in dirs):
        return dirs
    shutil.rmtree(out, ignore_errors=True)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    lm = models.load(base).random_init()  # the notebooks' random-init null, seed params.seed + 1
    model, tok = lm.model, lm.tokenizer
    digits = torch.tensor([tok.convert_tokens_to_ids(str(d)) for d in range(10)])
    words = torch.tensor(sorted(set(range(2000, 2000 + 64 * 7, 7)) - set(digits.tolist())))
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for step in range(max(save_at) + 1):
        if step in save_at:
            model.eval()
            model.save_pretrained(tmp / f"step-{step:04d}", safe_serialization=True)
            tok.save_pretrained(tmp / f"step-{step:04d}")
            model.train()
        if step == max(save_at):
            break
        ids = _batch(gen, digits, words, batch, length)
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    (tmp / "recipe.json").write_text(json.dumps({"key": key, **recipe, "final_loss": float(loss.detach())}, indent=1))
    tmp.rename(out)  # whole or not at all
    return dirs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=BASE, help="params/models name of the tiny model to train (default tiny-gpt2)")
    ap.add_argument("--out", type=Path, default=None, help="folder (default .cache/tiny_checkpoints/<base>)")
    a = ap.parse_args(argv)
    for d in make(a.out, a.base):
        print(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
