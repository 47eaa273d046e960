"""A GGUF header is read once per file content: ``gguf.header`` keeps each tensor's stored
type and shape, the scalar metadata and the transformers config of each ``config:`` in
``<cache>/gguf-headers/<sha256>.json``. A cached read equals a fresh one; a file changed in place (same
size, other bytes) is read afresh; an entry that does not describe its file is ignored and rewritten."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from gguf import GGUFReader

from geolip_lib.models import gguf as G
from geolip_lib.params import load_model_params
from geolip_lib.provenance import file_sha256
from tests.unit.models.test_gguf_source import params, source_model, write_gguf

pytestmark = pytest.mark.unit
FILE = "tiny-llama.Q.gguf"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf-header")
    write_gguf(d / FILE, source_model())
    return (d / FILE).read_bytes()


@pytest.fixture
def gguf_file(written, tmp_path, monkeypatch):
    """A fresh copy of the file (the tests change it) and an empty project cache."""
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    d = tmp_path / "model"
    d.mkdir()
    (d / FILE).write_bytes(written)
    return d / FILE


@pytest.fixture
def reads(monkeypatch):
    """How often the file itself is read (``gguf._reader``: the slow part on a big file)."""
    calls = []
    real = G._reader

    def counting(path):
        calls.append(Path(path))
        return real(path)

    monkeypatch.setattr(G, "_reader", counting)
    return calls


def fresh_types(path: Path) -> dict:
    return {t.name: t.tensor_type.name for t in GGUFReader(str(path)).tensors}


def test_a_cached_read_equals_a_fresh_read(gguf_file, reads):
    first = G.header(gguf_file)
    again = G.header(gguf_file)
    assert len(reads) == 1  # the second came from the cache
    assert again == first
    reader = GGUFReader(str(gguf_file))
    assert first["tensors"] == {t.name: {"type": t.tensor_type.name, "shape": [int(n) for n in t.shape]}
                                for t in reader.tensors}
    assert first["sha256"] == file_sha256(gguf_file) and first["bytes"] == gguf_file.stat().st_size
    assert first["metadata"]["general.architecture"] == "llama" and first["metadata"]["llama.block_count"] == 2
    assert first["metadata"]["tokenizer.ggml.tokens"] == {"array": len(reader.fields["tokenizer.ggml.tokens"].data)}
    assert G.quantization(gguf_file) == fresh_types(gguf_file)
    assert len(reads) == 1
    on_disk = json.loads(G._header_file(first["sha256"]).read_text(encoding="utf-8"))
    assert set(on_disk) == {*first, "hmac"}  # signed under this user's key (geolip_lib.cache_auth)
    assert {k: v for k, v in on_disk.items() if k != "hmac"} == {**first, "configs": on_disk["configs"]}


@pytest.mark.parametrize("config", [{}, {"rms_norm_eps": 1e-3}])
def test_a_cached_config_equals_transformers_reading_the_file(gguf_file, reads, config):
    p = load_model_params({**params(gguf_file.parent), "config": config})
    fresh = G._read_hf_config(p, gguf_file).to_dict()
    assert G.hf_config(p, gguf_file).to_dict() == fresh  # read and kept
    assert G.hf_config(p, gguf_file).to_dict() == fresh  # from the record
    assert len(reads) == 1
    if config:
        assert fresh["rms_norm_eps"] == 1e-3
    other = load_model_params({**params(gguf_file.parent), "config": {"rms_norm_eps": 5e-4}})
    assert G.hf_config(other, gguf_file).rms_norm_eps == 5e-4  # another config: its own entry
    assert len(G.header(gguf_file)["configs"]) == 2


def test_a_file_changed_in_place_is_read_afresh(gguf_file, reads):
    before = G.header(gguf_file)
    data = gguf_file.read_bytes()
    assert data.count(b"tiny-llama-test") == 1
    time.sleep(0.05)  # a later edit: file_sha256's pre-key (path, size, mtime_ns) moves with the clock
    gguf_file.write_bytes(data.replace(b"tiny-llama-test", b"tiny-llama-TEST"))  # same size, other bytes
    assert gguf_file.stat().st_size == before["bytes"]
    after = G.header(gguf_file)
    assert len(reads) == 2
    assert after["sha256"] != before["sha256"] and after["metadata"]["general.name"] == "tiny-llama-TEST"
    assert after["tensors"] == before["tensors"]


def test_a_corrupt_or_foreign_entry_is_ignored_and_rewritten(gguf_file, reads):
    rec = G.header(gguf_file)
    entry = G._header_file(rec["sha256"])
    broken = [
        "{not json",
        json.dumps([1, 2]),
        json.dumps({**rec, "layout": "gguf-header-0"}),  # written by another version of the code
        json.dumps({**rec, "sha256": "0" * 64}),  # another file's record under this name
        json.dumps({**rec, "bytes": rec["bytes"] + 1}),
        json.dumps({**rec, "tensors": {"token_embd.weight": {"type": "F32", "shape": [-1]}}}),
        json.dumps({**rec, "configs": []}),
    ]
    for n, text in enumerate(broken, start=2):
        entry.write_text(text, encoding="utf-8")
        assert G.header(gguf_file) == rec
        assert len(reads) == n  # read from the file, not from the bad entry
        assert {k: v for k, v in json.loads(entry.read_text(encoding="utf-8")).items() if k != "hmac"} == rec  # rewritten


def test_a_broken_file_caches_nothing(gguf_file, tmp_path):
    gguf_file.write_bytes(gguf_file.read_bytes()[:300])  # truncated in the header
    with pytest.raises(G.ModelLoadError, match="cannot be read"):
        G.header(gguf_file)
    assert not (tmp_path / "cache" / "gguf-headers").exists()
