"""The WordNet lexicon arrays are shared between checkouts (a fresh clone's first
`make lab` rebuilt them, ~50 s, though the checkout it was cloned from had them): a checkout
without them copies the file of the same key from the user-level cache; a corrupt or oversized
shared file is not used; the shared cache can be turned off."""
from __future__ import annotations

import shutil

import pytest

from geolip_lib.lexical import wordnet as W

pytestmark = pytest.mark.unit


@pytest.fixture()
def built():
    """This checkout's lexicon file (make setup built it) and its name."""
    name = f"lexicon-{W._cache_key()}.npz"
    path = W.cache_dir() / name
    if not path.is_file():
        W.load_lexicon()
    return path, name


def _fresh(monkeypatch, tmp_path, shared):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "clone-cache"))
    if shared is None:
        monkeypatch.setenv("GEOLIP_SHARED_CACHE", "")
    else:
        monkeypatch.setenv("GEOLIP_SHARED_CACHE", str(shared))
    calls = []

    def fake_build(progress=True):
        calls.append(1)
        raise RuntimeError("rebuilt")

    monkeypatch.setattr(W, "build_lexicon", fake_build)
    return calls


def test_a_fresh_checkout_copies_the_shared_arrays_instead_of_rebuilding(built, tmp_path, monkeypatch):
    path, name = built
    shared = tmp_path / "home-cache"
    (shared / "wordnet").mkdir(parents=True)
    shutil.copy(path, shared / "wordnet" / name)
    calls = _fresh(monkeypatch, tmp_path, shared)
    lx = W.load_lexicon.__wrapped__()
    assert calls == [] and len(lx) > 100_000  # WordNet 3.0: 117,659 synsets
    copied = tmp_path / "clone-cache" / "wordnet" / name
    assert copied.read_bytes() == path.read_bytes()


def test_a_corrupt_shared_file_is_rebuilt_not_read(built, tmp_path, monkeypatch):
    _, name = built
    shared = tmp_path / "home-cache"
    (shared / "wordnet").mkdir(parents=True)
    (shared / "wordnet" / name).write_bytes(b"not an npz")
    calls = _fresh(monkeypatch, tmp_path, shared)
    with pytest.raises(RuntimeError, match="rebuilt"):
        W.load_lexicon.__wrapped__()
    assert calls == [1]
    assert not (tmp_path / "clone-cache" / "wordnet" / name).exists()


def test_the_shared_cache_can_be_turned_off(built, tmp_path, monkeypatch):
    path, name = built
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "geolip" / "wordnet").mkdir(parents=True)
    shutil.copy(path, tmp_path / "xdg" / "geolip" / "wordnet" / name)
    calls = _fresh(monkeypatch, tmp_path, None)  # GEOLIP_SHARED_CACHE= (empty): off
    with pytest.raises(RuntimeError, match="rebuilt"):
        W.load_lexicon.__wrapped__()
    assert calls == [1]
    monkeypatch.delenv("GEOLIP_SHARED_CACHE")  # default: $XDG_CACHE_HOME/geolip
    assert W.shared_cache_root() == tmp_path / "xdg" / "geolip"
    assert len(W.load_lexicon.__wrapped__()) > 100_000 and calls == [1]


def test_a_checkout_that_has_the_arrays_publishes_them(built, tmp_path, monkeypatch):
    path, name = built
    monkeypatch.setenv("GEOLIP_SHARED_CACHE", str(tmp_path / "home-cache"))
    W.load_lexicon.__wrapped__()
    assert (tmp_path / "home-cache" / "wordnet" / name).read_bytes() == path.read_bytes()
