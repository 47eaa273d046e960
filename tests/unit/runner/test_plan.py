"""The run plan (``geolip_lib.runner.plan``): sizes from configs on the meta device or from
size_note, totals, shortfalls and the rendered table, on the tiny and paper profiles."""
from __future__ import annotations

import dataclasses
import functools
from types import SimpleNamespace

import pytest

from geolip_lib.models import load
from geolip_lib.runner import plan as P
from run_all import jobs_for_profile, notebook_defaults  # the CLI re-exports the runner's job expansion

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module", autouse=True)
def _empty_hf_cache(tmp_path_factory):
    """An empty Hugging Face cache: hub models are offline here, whatever the machine's cache holds."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("hf_hub")))
        P.model_info.cache_clear()
        yield
    P.model_info.cache_clear()


@functools.lru_cache(maxsize=None)
def _jobs(profile):
    return tuple(jobs_for_profile(profile))


def _plan(profile, **kw):
    kw.setdefault("free_disk", 10**15)
    kw.setdefault("free_mem", 10**15)
    kw.setdefault("gpus", [])
    return P.make_plan(_jobs(profile), defaults=notebook_defaults, **kw)


def _with(pl, **kw):
    """The same rows against other free resources."""
    return dataclasses.replace(pl, **kw)


@pytest.mark.parametrize("name", ["tiny-bert", "tiny-t5-v1_1", "tiny-qwen", "tiny-open-clip"])
def test_meta_device_count_is_the_built_models(name):
    info = P.model_info(name)
    real = load(name).model
    assert info.source == "config on meta device"
    assert info.params == sum(t.numel() for t in real.parameters())  # exactly (tied once, untied v1.1 head)
    assert info.largest == max(t.numel() for t in real.parameters())
    assert info.download == 0 and info.present


def test_size_note_path_for_offline_hub_models(tmp_path):
    assert P.parse_size_note("11B parameters, 22 GB in float16") == (11_000_000_000, 22_000_000_000)
    assert P.parse_size_note("22.7M parameters, 90 MB") == (22_700_000, 90_000_000)
    assert P.parse_size_note("") == (None, None)
    f = tmp_path / "somebodys-3b.yaml"  # a hub model with neither a cached config nor stored_checkpoints data
    f.write_text("name: somebodys-3b\nfamily: decoder_lm\nsource: hub\nid: somebody/3b\ndtype: bfloat16\n"
                 "size_note: 3B parameters, 6 GB in bfloat16\n", encoding="utf-8")
    info = P.model_info(str(f))
    assert info.source == "params file size_note" and info.params == 3 * 10**9 and info.download == 6 * 10**9
    pl = _plan("paper")
    rows = {r.label: r for r in pl.rows}
    xxl = rows["02_weight_topology / t5-v1_1-xxl"]  # the real checkpoint's files (stored_checkpoints.yaml)
    assert xxl.params == 11_135_332_352 and xxl.download == 44_500_000_000
    assert "stored_checkpoints.yaml" in xxl.source and xxl.disk["hub"] == 44_500_000_000
    clip = rows["02_weight_topology / clip-vit-b-16"]  # open_clip ships its configs: counted on meta
    assert "config on meta device" in clip.source and clip.params == 149_620_737
    assert clip.download == 599_000_000  # its stored float32 checkpoint file
    minilm = rows["04_wordnet_alignment / all-minilm-l6-v2"]  # a package: its files are measured, nothing to fetch
    assert "download measured" in minilm.source and minilm.disk["hub"] == 0 and minilm.download > 0
    # > 1e9 parameters: the twin is generated tensor by tensor (no disk); <= 1e9: written by 06 in its load dtype
    assert rows["06_qk_operators / t5-v1_1-xxl"].disk["twin"] == 0
    assert rows["06_qk_operators / qwen3.5-0.8b"].disk["twin"] == 752_393_024 * 2
    # RANDOM_INIT_BASELINE: false in the paper profile -> no twin in 01's xxl job
    assert not rows["01_embedding_terrain / t5-v1_1-xxl"].twin and rows["02_weight_topology / t5-v1_1-xxl"].twin
    # its float32 pickle is read whole: the host peak is at least the 44.5 GB file
    assert rows["01_embedding_terrain / t5-v1_1-xxl"].host >= 44_500_000_000


def test_totals_add_up_and_shared_files_count_once():
    pl = _plan("paper", parallel=3)
    t = pl.totals
    assert t["disk"] == sum(t["disk_by_kind"].values()) == sum(t["disk_by_fs"].values())
    # the hub snapshot of each model is counted once, however many jobs read it
    hub = {}
    for r in pl.rows:
        for it in r.items:
            if it.kind == "hub":
                hub[it.key] = it.new
    assert t["disk_by_kind"]["hub"] == sum(hub.values()) < sum(r.disk.get("hub", 0) for r in pl.rows)
    hosts = sorted((r.host for r in pl.rows), reverse=True)
    assert t["host_peak"] == hosts[0] and t["host_parallel"] == sum(hosts[:3])
    assert pl.shortfalls() == []
    P.check_fit(pl)  # fits: no error


def test_small_free_disk_names_the_job_that_does_not_fit():
    pl = _plan("paper", free_disk=5 * 10**9)
    assert len(pl.free_disk) == 1  # a given free_disk is one filesystem holding everything
    short = pl.shortfalls()
    assert len(short) == 1 and "disk" in short[0] and "5.00 GB free" in short[0]
    # the job at which the running total first passes 5 GB
    used, first = 0, None
    for r in pl.rows:
        used += sum(r.disk.values())
        if used > 5 * 10**9:
            first = r.label
            break
    assert short[0].startswith(first)
    with pytest.raises(P.PlanError) as err:
        P.check_fit(pl)
    assert "\n" not in str(err.value) and first in str(err.value)


def test_memory_parallel_and_gpu_shortfalls():
    tiny = _plan("tiny")
    peak = tiny.totals["host_peak"] / (1 - P.HEADROOM)  # the memory a job's peak needs, headroom kept free
    assert _with(tiny, free_mem=peak + 1).shortfalls() == []
    # two jobs whose peaks do not fit together are no shortfall (a real profile with one 1.5B model
    # among small ones was refused at --jobs 2): the largest runs alone, the plan says so, the launcher admits it
    two = _with(tiny, free_mem=peak + 1, parallel=2)
    assert two.shortfalls() == []
    big = max(two.rows, key=lambda r: r.host)
    assert big.label in two.memory_alone() and "run alone" in two.render()
    assert two.admits(big.label, []) and not two.admits(big.label, [two.rows[0].label if two.rows[0] is not big
                                                                     else two.rows[1].label])
    assert _with(tiny, free_mem=10**15, parallel=2).memory_alone() == []
    low = _with(tiny, free_mem=peak - 1).shortfalls()
    assert low and all("host memory" in s for s in low)
    # a GPU box: device: auto goes to cuda:0; t5-v1_1-xxl (device_map: auto) offloads what one GPU lacks
    gpu = _plan("paper", gpus=[80 * 10**9])
    rows = {r.label: r for r in gpu.rows}
    assert rows["02_weight_topology / t5-small"].device == "cuda:0" and rows["02_weight_topology / t5-small"].gpu > 0
    assert rows["13_head_dim_cv / all"].device == "cpu"
    small = {r.label: r for r in _plan("paper", gpus=[10 * 10**9]).rows}["02_weight_topology / t5-v1_1-xxl"]
    assert small.gpu <= 10 * 10**9 * (1 - P.HEADROOM) and any("offloads" in n for n in small.notes)
    job = SimpleNamespace(notebook="02_weight_topology", model="tiny-t5", parameters={}, label="x / tiny-t5",
                          profile="tiny")
    no_gpu = P.make_plan([job], devices={"x / tiny-t5": "cuda:0"}, free_disk=10**12, free_mem=10**12, gpus=[])
    assert no_gpu.shortfalls() == ["x / tiny-t5: GPU: device cuda:0 needs 1 GPU(s), none found; run it on a GPU "
                                   "machine or set device: cpu in its model's params file"]


def test_render_lists_every_job_and_the_totals():
    pl = _plan("tiny")
    text = pl.render()
    lines = text.splitlines()
    for r in pl.rows:
        assert r.label in text
    assert "disk (new, shared files once)" in text and "host memory" in text and text.rstrip().endswith("fits.")
    # fixed width: every row's device column starts where the header's does
    col = lines[0].index("device")
    body = [ln for ln in lines[2:lines.index("")] if len(ln) > col]  # a long job name has a line of its own
    assert [ln[col:].split()[0] for ln in body] == [r.device for r in pl.rows]
    assert max(len(ln) for ln in lines) <= P.WIDTH
    short = _with(pl, free_disk={next(iter(pl.free_disk)): 0}).render()
    assert "does not fit:" in short and pl.rows[0].label in short.split("does not fit:")[1]


def test_a_hub_model_without_config_or_size_note_is_one_clear_line(tmp_path):
    f = tmp_path / "nohub.yaml"
    f.write_text("name: nohub\nfamily: bert\nsource: hub\nid: nobody/nothing\n", encoding="utf-8")
    with pytest.raises(P.PlanError, match=r"model 'nohub': no config at hand .* add size_note"):
        P.model_info(str(f))


def test_models_that_cannot_be_obtained_are_left_out_of_the_plan(monkeypatch, tmp_path):
    """No hub: hub models and open_clip tags that are not cached give their one line and are not
    planned for (their jobs fail at once), so a box without the hub is not stopped by the disk
    the downloads would have needed."""
    from geolip_lib.models.loading import hub_problem
    from geolip_lib.runner.local import _obtainable
    from run_all import jobs_for_profile

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    line = hub_problem("t5-small")
    assert line.startswith("model 't5-small': 'google-t5/t5-small' is not in the Hugging Face cache") \
        and "HF_HUB_OFFLINE=1" in line and "local_dir" in line and "\n" not in line
    clip = hub_problem("clip-vit-b-16")
    assert "open_clip 'ViT-B-16' / 'laion2b_s34b_b88k' cannot be loaded" in clip and "local_dir" in clip
    assert hub_problem("tiny-t5") is None and hub_problem("all-minilm-l6-v2") is None
    jobs = jobs_for_profile("paper", notebooks=["04_wordnet_alignment"])
    kept = _obtainable(jobs)
    assert [j.model for j in kept] == ["all-minilm-l6-v2"] and len(jobs) == 4


def test_a_notebook_without_a_rule_gets_the_generic_estimate_and_says_so():
    from types import SimpleNamespace

    from geolip_lib.runner.plan import estimate_job

    with_model = SimpleNamespace(notebook="99_my_new_notebook", model="tiny-t5", parameters={}, label="99 / tiny-t5",
                                 job_id="tiny-t5", profile="tiny")
    without = SimpleNamespace(notebook="99_my_new_notebook", model=None, parameters={}, label="99 / all",
                              job_id="all", profile="tiny")
    a, b = estimate_job(with_model), estimate_job(without)
    assert "generic" in a.source and "generic" in b.source
    assert a.host > b.host > 0
