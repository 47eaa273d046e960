"""Notebook 17's language–vision alignment: image–caption pairs, the vision towers' features, and the
pairs of a language model (reading the captions) with a vision model (reading the images).

Huh et al. (2024) measure language models against vision towers on WIT, 1024 image–caption pairs. Their
public code (platonic-rep, ``extract_features.py``) reads ``load_dataset("minhuh/prh",
revision="wit_1024", split="train")``, each caption ``x["text"][0]`` and each image ``x["image"]``; a
language model's feature is its mean hidden state over the caption's tokens (as the text-only pairs), a
vision tower's is the class token of every block. :func:`load_image_captions` reads that set from the
hub (``"wit_1024"``) or a local copy: a folder written by ``Dataset.save_to_disk`` on a machine with a
network (the way to bring the hub set to an offline GPU box), or an image folder with a
``metadata.jsonl`` / ``metadata.csv`` (``file_name``, ``text``), Hugging Face's ``imagefolder`` layout.
The Hugging Face ``datasets`` library reads all three: nothing here parses an image set by hand.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from .. import validation as V
from ..lazy import lazy
from ..metrics import alignment as AL
from ..caption_sets import HUB_WIT, REMEDY, WIT_1024, source_problem
from ..metrics.intervals import N_BOOT
from ..paths import cache_root, resolve
from ..results import exact, headline
from . import alignment as A

#: imported on first use: only the image-caption runs need it (and pyarrow behind it)
datasets = lazy("datasets")

__all__ = ["WIT_1024", "HUB_WIT", "MAX_PIXELS", "load_image_captions", "class_tokens", "collect_vision",
           "measure_cross", "language_vision_claims"]

#: pixels of the largest image read (a 7000 x 7000 photograph); a larger one is refused, not decoded
MAX_PIXELS = 50_000_000
_CAPTION_CHARS = 10_000


def _dataset(source: str) -> Any:
    """The ``datasets.Dataset`` behind ``source`` (one-line ``ValueError`` when it is not one)."""
    datasets.disable_progress_bars()
    if source == WIT_1024:
        try:
            return datasets.load_dataset(**HUB_WIT)
        except Exception as e:  # no network, no hub access: one line, what to do
            V.fail("IMAGE_CAPTIONS", f"could not read the WIT set from the hub ({type(e).__name__}: "
                                     f"{str(e).splitlines()[0][:200] if str(e) else ''}); offline, save it with "
                                     "load_dataset('minhuh/prh', revision='wit_1024', split='train').save_to_disk(DIR) "
                                     "where the hub is reachable, copy DIR here and give its path")
    why = source_problem(source)
    if why:
        V.fail("IMAGE_CAPTIONS", why)
    folder = resolve(source)
    try:
        if (folder / "state.json").is_file():
            ds = datasets.load_from_disk(str(folder))
        else:  # an imagefolder (source_problem found its metadata file)
            ds = datasets.load_dataset("imagefolder", data_dir=str(folder), split="train",
                                       cache_dir=str(cache_root() / "datasets"))
    except Exception as e:  # a broken arrow file, a bad metadata line: one line, naming the folder
        V.fail("IMAGE_CAPTIONS", f"could not read {source!r} as an image-caption set ({type(e).__name__}: "
                                 f"{str(e).splitlines()[0][:200] if str(e) else ''}); {REMEDY}")
    if isinstance(ds, datasets.DatasetDict):
        if "train" not in ds:
            V.fail("IMAGE_CAPTIONS", f"{source!r} has splits {sorted(ds)} and no 'train' split")
        ds = ds["train"]
    return ds


def load_image_captions(source: str, n: Optional[int] = None) -> tuple[list, list[str]]:
    """The first ``n`` (all: None) image–caption pairs of ``source`` (see the module): ``(images, captions)``,
    the images as RGB PIL images, each caption the first of its list (the paper's ``x["text"][0]``)."""
    why = source_problem(source)
    if why:
        V.fail("IMAGE_CAPTIONS", why)
    ds = _dataset(source)
    missing = {"image", "text"} - set(ds.column_names)
    if missing:
        V.fail("IMAGE_CAPTIONS", f"{source!r} has columns {ds.column_names}, missing {sorted(missing)}; {REMEDY}")
    rows = len(ds) if n is None else min(int(n), len(ds))
    if rows < 12:
        V.fail("IMAGE_CAPTIONS", f"{source!r} holds {len(ds)} image-caption pairs; mutual k-NN needs at least 12")
    images, captions = [], []
    for i in range(rows):
        try:  # the datasets library opens each image as its row is read
            row = ds[i]
            image = row["image"]
            big = image is None or not hasattr(image, "size") or image.size[0] * image.size[1] > MAX_PIXELS
            rgb = None if big else image.convert("RGB")
        except Exception as e:  # a truncated or undecodable file (PIL raises OSError and its own errors)
            V.fail("IMAGE_CAPTIONS", f"row {i} of {source!r}: the image cannot be decoded ({type(e).__name__})")
        if rgb is None:
            V.fail("IMAGE_CAPTIONS", f"row {i} of {source!r}: no image, or one over {MAX_PIXELS} pixels")
        images.append(rgb)
        captions.append(_caption(row["text"], i, source))
    return images, captions


def _caption(text: Any, i: int, source: str) -> str:
    first = text[0] if isinstance(text, (list, tuple)) and text else text
    if not isinstance(first, str) or not first.strip() or len(first) > _CAPTION_CHARS:
        V.fail("IMAGE_CAPTIONS", f"row {i} of {source!r}: the caption is not a non-empty text of at most "
                                 f"{_CAPTION_CHARS} characters")
    return first.strip()


def class_tokens(lm: Any, images: Sequence, *, batch_size: int = 32) -> np.ndarray:
    """``(N, L, D)`` float32: each image's class token (position 0) at every block of the vision stack,
    the embedding output first (the paper's vision feature)."""
    V.check_positive_int(batch_size, "batch_size")
    out = []
    for s in range(0, len(images), batch_size):
        hs = lm.hidden_states(lm.preprocess(list(images[s:s + batch_size])), stack="vision", batch_size=batch_size)
        out.append(np.stack([h[:, 0].double().numpy() for h in hs.layers], axis=1).astype(np.float32))
    return np.concatenate(out)


def collect_vision(names: Sequence[str], images: Sequence, *, load: Callable[[str], Any], random_init_seeds: int = 1,
                   batch_size: int = 32) -> tuple[dict, dict]:
    """:func:`geolip_lib.probes.alignment.collect_features` for vision models reading ``images``: model ->
    features (class tokens, clamped), and model -> why it was not read (no vision stack)."""
    return A.collect_features(names, images, load=load, random_init_seeds=random_init_seeds, batch_size=batch_size,
                              read=lambda lm, xs: class_tokens(lm, xs, batch_size=batch_size),
                              problem=lambda lm: None if "vision" in lm.stacks else
                              f"{lm.name} has no vision stack (stacks: {', '.join(lm.stacks)})")


def measure_cross(language: Mapping[str, dict], vision: Mapping[str, dict], *, k: int = AL.TOPK,
                  n_boot: int = N_BOOT, seed: int = 0, n_shuffles: int = 20,
                  cka_boot: Optional[int] = None) -> tuple[dict, dict]:
    """Every (language model, vision model) pair: :func:`geolip_lib.probes.alignment.measure_pairs`' output
    for the pairs across the two sets only. ``language[m]`` holds the captions' features."""
    trained, twins = {}, {}
    for lang in sorted(language):
        for vis in sorted(vision):
            name = AL.pair_name([lang, vis])
            fa, fb = language[lang], vision[vis]
            trained[name] = A.measure_pair(fa["trained"], fb["trained"], k=k, n_boot=n_boot, seed=seed,
                                           n_shuffles=n_shuffles, cka_boot=cka_boot)
            twins[name] = [A.measure_pair(x, y, k=k, n_boot=n_boot, seed=seed, n_shuffles=0, cka_boot=0)
                           for x, y in zip(fa["random_init"], fb["random_init"])]
    return trained, twins


def language_vision_claims(trained: Mapping[str, dict], twins: Mapping[str, list], *, vision: Sequence[str],
                           params: Mapping[str, int], n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """The records of the language–vision claims:

    - ``language_vision_alignment[pair][scope]``: as ``mutual_knn_alignment`` (value, interval, nulls);
    - ``language_vision_size[set][scope]``: per vision model, Spearman's rho between the language models'
      parameter counts and their mutual k-NN with it (the set: the vision model and every language model
      measured against it), with a bootstrap over the image-caption pairs and the twins' rho beside it."""
    pairs = A.alignment_claims(trained, twins, params=params, set_name="unused", not_run={}, n_boot=n_boot,
                               seed=seed)
    claims: dict = {"language_vision_alignment": pairs["mutual_knn_alignment"], "language_vision_size": {}}
    for vis in vision:
        mine = {n: m for n, m in trained.items() if vis in n.split(AL.PAIR_SEP)}
        langs = sorted({x for n in mine for x in n.split(AL.PAIR_SEP)} - {vis})
        unit = AL.pair_name(langs + [vis])
        if len(mine) < 3:
            claims["language_vision_size"][unit] = {"not_run": f"{len(mine)} language model(s) measured against {vis}: "
                                                            "a rank correlation over language models needs at least 3"}
            continue
        rec = {}
        for scope in A.SCOPES:
            rho, iv = A.competence_interval(mine, params, scope, n_boot=n_boot, seed=seed)
            tw = {n: t[0]["scopes"][scope]["value"] for n, t in twins.items() if n in mine and t}
            nulls = ({"random_init": {"value": A.competence_rho(tw, params), "interval": exact(A.competence_rho(tw, params))}}
                     if len(tw) == len(mine) else {})
            rec[scope] = headline(rho, interval=iv, nulls=nulls, fmt=".2f",
                                  label=f"Spearman rho, language-model size vs mutual k-NN with {vis} ({scope})",
                                  note=f"over {len(mine)} language models; the vision tower fixed, so a pair's "
                                       "competence ranks as its language model's parameter count")
        claims["language_vision_size"][unit] = rec
    return claims
