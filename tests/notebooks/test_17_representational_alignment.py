"""Notebook 17 (Huh et al. 2024's alignment across models) on the tiny profile with an image-caption
folder: the language models read the captions, the tiny DINOv2 and CLIP towers the images, and the
language-vision records that params/claims/huh-2024.yaml's third claim reads."""
from __future__ import annotations

from pathlib import Path

import pytest

from geolip_lib.claims import pairs as P
from tests.image_captions import write_image_captions

pytestmark = pytest.mark.notebooks
NB = "17_representational_alignment"
VISION = ["tiny-dinov2", "tiny-clip"]


@pytest.fixture(scope="module")
def m17(run_notebook, tmp_path_factory):
    folder = write_image_captions(tmp_path_factory.mktemp("captions") / "set", n=40)
    return run_notebook(NB, IMAGE_CAPTIONS=str(folder), VISION_MODELS=VISION, N_IMAGES=40)


def test_language_vision_pairs_are_measured_with_their_nulls(m17):
    m = m17["metrics"]
    assert m["inputs"]["captions"]["n"] == 40 and m["inputs"]["captions"]["first"][0] == "a small red circle"
    lv = m["claims"]["language_vision_alignment"]
    langs = m17["parameters"]["MODELS"]
    assert set(lv) == {P.label([a, v]) for a in langs for v in VISION}  # across the two sets only
    for name, scopes in lv.items():
        h = scopes["best layer pair"]
        assert h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"], name
        assert h["nulls"]["chance"]["value"] == pytest.approx(m17["parameters"]["K"] / 39)
        assert {"shuffled pairing", "random_init"} <= set(h["nulls"]), name
    assert not any("Language-vision" in k for k in m17.get("not_run", {}))
    assert (Path(m17["_job_dir"]) / "language_vision_alignment.png").stat().st_size > 1000


def test_the_size_claim_is_one_unit_per_vision_tower(m17):
    size = m17["metrics"]["claims"]["language_vision_size"]
    assert set(size) == {P.label(m17["parameters"]["MODELS"] + [v]) for v in VISION}
    for unit, scopes in size.items():
        h = scopes["best layer pair"]
        assert -1 <= h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"] <= 1, unit
        assert "random_init" in h["nulls"]
    jobs = {"17": {"metrics": m17["metrics"], "provenance": m17.get("provenance", {})}}
    assert set(P.split_jobs(jobs, "language_vision_size")) == set(size)


def test_without_captions_the_language_vision_part_says_why(run_notebook):
    plain = run_notebook(NB)  # the tiny profile's own job: text only
    why = plain["not_run"]["Language-vision alignment (image-caption pairs)"]
    assert "IMAGE_CAPTIONS" in why and "wit_1024" in why
    assert plain["metrics"]["claims"]["language_vision_size"] == {}
