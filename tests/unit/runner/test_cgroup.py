"""Container limits (``geolip_lib.runner.cgroup``) read from a fixture tree of cgroup v2 and v1 files, and from
real cgroups this test makes as root (v1 memory and cpu; v2: here the memory controller is bound to the v1
hierarchy, so a v2 cgroup has no ``memory.max``: its path walk is checked on a real one, its limits on the
fixture); ``--plan`` inside a real 2 GB v1 memory cgroup names the limit and refuses what cannot fit it."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from geolip_lib.runner import box, cgroup, resources
from tests.cgroups import ROOT, cgroup as make_cgroup, inside

pytestmark = pytest.mark.unit
GB = 10**9
TWO_GB = 2 * GB // 4096 * 4096  # the kernel keeps a v1 limit in whole pages


def _tree(tmp_path: Path, cgroup_lines: str, mounts: list[tuple[str, str, str, str]]) -> Path:
    """A fake ``/proc/<pid>`` (cgroup, mountinfo) whose mounts lie under ``tmp_path``; returns it."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(textwrap.dedent(cgroup_lines).lstrip())
    info = [f"{30 + i} 23 0:{40 + i} {root} {tmp_path / point} rw,relatime - {fs} {fs} {opts}"
            for i, (fs, root, point, opts) in enumerate(mounts)]
    (proc / "mountinfo").write_text("\n".join(info) + "\n")
    return proc


def _files(d: Path, **files) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for k, v in files.items():
        (d / k.replace("__", ".")).write_text(textwrap.dedent(v).lstrip())
    return d


def test_v2_limits_walk_up_to_the_tightest_and_count_inactive_cache_free(tmp_path):
    proc = _tree(tmp_path, "0::/ci/job\n", [("cgroup2", "/", "sys/fs/cgroup", "rw,nsdelegate")])
    top = tmp_path / "sys/fs/cgroup"
    _files(top, cgroup__procs="")  # the root: no memory.max
    _files(top / "ci", memory__max=f"{3 * GB}\n", memory__current=f"{2 * GB}\n",
           memory__stat="anon 1\ninactive_file 500000000\n", cpu__max="150000 100000\n")
    _files(top / "ci/job", memory__max="max\n", memory__current=f"{GB}\n", memory__stat="inactive_file 0\n",
           cpu__max="max 100000\n")
    assert cgroup.cgroup_dirs(None, proc) == [top / "ci/job", top / "ci", top]
    assert cgroup.cgroup_dirs("memory", proc) == []
    (lim,) = cgroup.memory_limits(proc)
    assert (lim.version, lim.path, lim.limit) == ("v2", top / "ci", 3 * GB)
    assert lim.available == 3 * GB - (2 * GB - 500_000_000)
    assert lim.describe() == f"3.00 GB cgroup v2 limit ({top / 'ci'})"
    assert cgroup.cpu_quota(proc) == 1.5
    hm = box.host_memory(proc)
    assert hm.total == 3 * GB and hm.limit == lim and hm.available <= lim.available
    assert hm.describe() == lim.describe()


def test_v1_limits_unlimited_container_root_and_cpu_quota(tmp_path):
    # a container: /proc/self/cgroup names the host's path, the mount shows that cgroup at its mount point
    proc = _tree(tmp_path, """
        12:memory:/docker/abc
        4:cpu,cpuacct:/docker/abc
        1:name=systemd:/docker/abc
        0::/
        """, [("cgroup", "/docker/abc", "fs/memory", "rw,memory"), ("cgroup", "/docker/abc", "fs/cpu", "rw,cpu,cpuacct"),
              ("cgroup", "/docker/abc", "fs/systemd", "rw,name=systemd")])
    mem, cpu = tmp_path / "fs/memory", tmp_path / "fs/cpu"
    _files(mem, memory__limit_in_bytes=f"{2 * GB}\n", memory__usage_in_bytes=f"{GB}\n",
           memory__stat="inactive_file 7\ntotal_inactive_file 200000000\n")
    _files(cpu, cpu__cfs_quota_us="50000\n", cpu__cfs_period_us="100000\n")
    assert cgroup.cgroup_dirs("memory", proc) == [mem] and cgroup.cgroup_dirs(None, proc) == []
    (lim,) = cgroup.memory_limits(proc)
    assert (lim.version, lim.limit, lim.available) == ("v1", 2 * GB, 2 * GB - (GB - 200_000_000))
    assert cgroup.cpu_quota(proc) == 0.5 and cgroup.cpu_count(proc) == 1
    (mem / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    (cpu / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup.memory_limits(proc) == [] and cgroup.cpu_quota(proc) is None
    hm = box.host_memory(proc)
    assert hm.limit is None and hm.describe().endswith("GB RAM")


def test_no_cgroup_files_means_no_limit(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    assert cgroup.cgroup_dirs(None, proc) == [] and cgroup.memory_limits(proc) == []
    assert cgroup.cpu_quota(proc) is None and cgroup.cpu_count(proc) >= 1


def _sleeper(d, started):
    return inside(d, ["sleep", "60"], started)


def _wait_in(d: Path, pid: int) -> None:
    for _ in range(100):
        if str(pid) in (d / "cgroup.procs").read_text().split():
            return
        subprocess.run(["sleep", "0.05"])
    raise AssertionError(f"pid {pid} never joined {d}")


def test_a_real_v1_memory_cgroup_is_the_box():
    with make_cgroup("memory", **{"memory.limit_in_bytes": TWO_GB}) as (d, started):
        p = _sleeper(d, started)
        _wait_in(d, p.pid)
        proc = Path(f"/proc/{p.pid}")
        assert cgroup.cgroup_dirs("memory", proc)[0] == d
        lim = next(m for m in cgroup.memory_limits(proc) if m.path == d)
        assert lim.version == "v1" and lim.limit == TWO_GB and 0 < lim.available <= TWO_GB
        hm = box.host_memory(proc)
        assert hm.total == TWO_GB and hm.available <= TWO_GB
        assert hm.describe() == f"2.00 GB cgroup v1 limit ({d})"


def test_a_real_v1_cpu_quota_sets_cores_and_threads():
    with make_cgroup("cpu", **{"cpu.cfs_period_us": 100000, "cpu.cfs_quota_us": 50000}) as (d, started):
        p = _sleeper(d, started)
        _wait_in(d, p.pid)
        proc = Path(f"/proc/{p.pid}")
        assert cgroup.cpu_quota(proc) == 0.5 and cgroup.cpu_count(proc) == 1
        code = ("from geolip_lib.runner import resources as r; "
                "print(r.default_jobs([]), r.kernel_threads())")
        q = inside(d, [sys.executable, "-c", code], started, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        out, _ = q.communicate(timeout=120)
        assert out.split() == ["1", "1"]  # one core allowed: one job at once, one thread each
    assert resources.default_jobs([]) == min(2, cgroup.cpu_count())


def test_a_real_v2_cgroup_path_is_walked_to_its_mount():
    with make_cgroup(None) as (d, started):
        p = _sleeper(d, started)
        _wait_in(d, p.pid)
        proc = Path(f"/proc/{p.pid}")
        dirs = cgroup.cgroup_dirs(None, proc)
        mount = cgroup.cgroup_dirs(None)[-1]
        assert dirs[0] == d and dirs[-1] == mount and all(b in a.parents for a, b in zip(dirs, dirs[1:]))
        if (d / "memory.max").exists():  # a box whose v2 hierarchy has the memory controller
            (d / "memory.max").write_text(str(2 * GB))
            assert any(m.version == "v2" and m.limit == 2 * GB for m in cgroup.memory_limits(proc))
        else:  # here: the memory controller is bound to v1, so v2 holds no memory limit to read
            assert "memory" not in (mount / "cgroup.controllers").read_text().split()
            assert all(m.version == "v1" for m in cgroup.memory_limits(proc))


def test_plan_in_a_2_gb_v1_cgroup_names_the_limit_and_refuses_what_cannot_fit():
    with make_cgroup("memory", **{"memory.limit_in_bytes": TWO_GB}) as (d, started):
        p = inside(d, [sys.executable, "run_all.py", "--plan", "--profile", "demo", "--notebooks",
                       "01_embedding_terrain", "02_weight_topology"], started, cwd=ROOT, stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
        out, _ = p.communicate(timeout=300)
    flat = " ".join(out.split())  # the plan wraps at 120 columns
    assert p.returncode == 2, out
    assert f"the box: 2.00 GB cgroup v1 limit ({d});" in flat, out
    assert "01_embedding_terrain / smollm2-135m: host memory: needs" in flat, out  # its peak: about 3 GB
    assert f"GB at its peak, this box's 2.00 GB cgroup v1 limit ({d}) (1.80 GB with 10% kept free)" in flat, out
    assert "GB available here" not in flat
