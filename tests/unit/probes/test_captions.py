"""The image-caption pairs of notebook 17's language-vision alignment (geolip_lib.probes.captions): the
local layouts read, every bad folder refused in one line, the vision features and the claims records."""
from __future__ import annotations

import os

import numpy as np
import pytest

from geolip_lib import models
from geolip_lib.probes import alignment as A
from geolip_lib.probes import captions as C
from tests.image_captions import write_image_captions

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_image_captions(tmp_path_factory.mktemp("captions") / "set", n=40)


def test_an_image_folder_and_its_saved_copy_read_alike(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    images, captions = C.load_image_captions(str(folder), 30)
    assert len(images) == len(captions) == 30 and captions[0] == "a small red circle"  # the first caption
    assert images[0].mode == "RGB" and images[0].size == (64, 64)
    datasets = pytest.importorskip("datasets")
    datasets.load_dataset("imagefolder", data_dir=str(folder), split="train",
                          cache_dir=str(tmp_path / "hf")).save_to_disk(str(tmp_path / "saved"))
    images2, captions2 = C.load_image_captions(str(tmp_path / "saved"))
    assert captions2[:30] == captions and len(captions2) == 40
    assert np.array_equal(np.asarray(images2[5]), np.asarray(images[5]))


@pytest.mark.parametrize("make, match", [
    (lambda p: p / "absent", "not a folder"),
    (lambda p: (p / "empty").mkdir() or p / "empty", "neither state.json nor metadata"),
    (lambda p: os.symlink(p / "real", p / "link") or p / "link", "a link is not followed"),
])
def test_a_bad_folder_is_one_line(tmp_path, make, match):
    write_image_captions(tmp_path / "real", n=20)
    with pytest.raises(ValueError, match=match) as e:
        C.load_image_captions(str(make(tmp_path)))
    assert str(e.value).startswith("IMAGE_CAPTIONS: ") and "\n" not in str(e.value)


def test_too_few_pairs_empty_captions_and_broken_images_are_refused(tmp_path):
    small = write_image_captions(tmp_path / "small", n=8)
    with pytest.raises(ValueError, match="at least 12"):
        C.load_image_captions(str(small))
    bad = write_image_captions(tmp_path / "bad", n=20)
    lines = (bad / "metadata.jsonl").read_text().splitlines()
    (bad / "metadata.jsonl").write_text("\n".join(lines[:3] + ['{"file_name": "003.png", "text": ["  "]}'] + lines[4:]) + "\n")
    with pytest.raises(ValueError, match="row 3 .*caption"):
        C.load_image_captions(str(bad))
    broken = write_image_captions(tmp_path / "broken", n=20)
    (broken / "002.png").write_bytes(b"\x89PNG\r\n\x1a\nnot an image")
    with pytest.raises(ValueError, match="IMAGE_CAPTIONS: "):
        C.load_image_captions(str(broken))


def test_class_tokens_are_position_zero_of_every_vision_layer(folder):
    lm = models.load("tiny-dinov2")
    images, _ = C.load_image_captions(str(folder), 12)
    f = C.class_tokens(lm, images, batch_size=5)
    hs = lm.hidden_states(lm.preprocess(images[:1]), stack="vision")
    assert f.shape == (12, len(hs.layers), hs.layers[0].shape[-1])
    assert np.allclose(f[0], np.stack([h[0, 0].numpy() for h in hs.layers]), atol=1e-5)


def test_cross_pairs_and_the_size_claim():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((60, 5))
    lang = {}
    for i, name in enumerate(("l1", "l2", "l3")):  # larger language models: less noise, more aligned
        tr = np.stack([base @ rng.standard_normal((5, 8)) + (3 - i) * rng.standard_normal((60, 8)) for _ in range(2)], 1)
        lang[name] = {"trained": tr, "random_init": [rng.standard_normal(tr.shape)], "params": 10 ** (6 + i)}
    vis = {"v": {"trained": np.stack([base @ rng.standard_normal((5, 6)) for _ in range(3)], 1),
                 "random_init": [rng.standard_normal((60, 3, 6))], "params": 5}}
    trained, twins = C.measure_cross(lang, vis, k=5, n_boot=100, n_shuffles=3, cka_boot=0)
    assert list(trained) == ["l1 × v", "l2 × v", "l3 × v"]  # across the sets only, never l1 × l2
    rec = C.language_vision_claims(trained, twins, vision=["v"], params={"l1": 1e6, "l2": 1e7, "l3": 1e8, "v": 5},
                                   n_boot=100)
    assert set(rec["language_vision_alignment"]) == set(trained)
    h = rec["language_vision_size"]["l1 × l2 × l3 × v"]["best layer pair"]
    assert h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"] and h["value"] == pytest.approx(1.0)
    assert h["value"] == pytest.approx(A.competence_rho({n: m["scopes"]["best layer pair"]["value"]
                                                          for n, m in trained.items()}, {"l1": 1, "l2": 2, "l3": 3, "v": 1}))
    two = C.language_vision_claims({k: trained[k] for k in list(trained)[:2]}, twins, vision=["v"],
                                   params={"l1": 1, "l2": 2, "v": 5})
    assert "at least 3" in two["language_vision_size"]["l1 × l2 × v"]["not_run"]


def test_the_pair_figure_keeps_its_legend_off_the_bars():
    from tests.figure_checks import check_figure
    from geolip_lib.probes import plots_alignment
    from tests.unit.probes.test_alignment import _features
    trained, twins = A.measure_pairs(_features(), k=5, n_boot=50, n_shuffles=3, cka_boot=0)
    fig = plots_alignment.pair_alignment(trained, twins)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1  # beside the axes, not on them
    assert ax.get_ylabel() == "mutual k-NN (k = 5)"
    check_figure(fig, n_axes=1)
