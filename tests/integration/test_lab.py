"""``make lab`` as a user meets it (items 1-6), on a fresh clone of this checkout that
shares its venv: Lab starts (as root here, the normal user on rented GPU boxes), serves on
127.0.0.1 with a token, its kernel is the venv's ``python3`` (what every notebook names) and
imports the clone's own library; notebook 01 runs through the server's kernel over the
websocket Lab uses (its figures arrive as PNG display data, its results land in the clone's
``reports/``); saved with those outputs, as Lab saves, ``git status`` stays clean.

One Lab for both tests (module fixture): it starts in 3-8 s here; notebook 01 at the tiny profile's sizes
takes 18-25 s of kernel CPU (measured; 92-140 s of wall time at a load of 10-12 on this shared 2-core box). Run
by hand at its own defaults through Lab: 69 s of wall time, 7 figures.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
import websocket  # websocket-client (in the lock: jupyter_server's terminals depend on it)
from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session

from run_all import jobs_for_profile

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = "01_embedding_terrain"
pytestmark = [pytest.mark.integration, pytest.mark.slow]  # notebook 01: 18-25 s of kernel CPU; wall 2 min at load 10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A ``make lab`` process in ``checkout``: its printed URL, its log, REST calls with the token."""

    def __init__(self, checkout: Path):
        self.checkout, self.lines, self.url = checkout, [], None
        env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "TQDM_DISABLE", "PYTHONPATH")}
        self.proc = subprocess.Popen(["make", "lab", f"LAB_PORT={_free_port()}"], cwd=checkout, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)  # its own process group: stopped as one
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 90
        while self.url is None and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.url is None:
            self.stop()
            pytest.fail("make lab printed no URL with a token:\n" + "".join(self.lines[-30:]))
        m = re.match(r"(http://[^/]+)/lab\?token=(\w+)", self.url)
        self.base, self.token = m.group(1), m.group(2)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            m = re.search(r"(http://\S+/lab\?token=[0-9a-f]+)", line)
            if m and self.url is None:
                self.url = m.group(1)

    def api(self, path: str, body=None, method=None):
        req = urllib.request.Request(f"{self.base}{path}", method=method or ("POST" if body is not None else "GET"),
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read()
        return json.loads(raw) if raw else None

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # make and the jupyter it started (our own group)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A fresh clone of this checkout's HEAD sharing its .venv and .cache (two checkouts, one venv),
    with ``make lab`` running in it."""
    checkout = tmp_path_factory.mktemp("lab") / "geolip"
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(checkout)], check=True)
    # set-up in the clone must find the shared venv current (else it would reinstall it, pointing the
    # editable install at the clone): the same stamp name as scripts/setup.sh computes
    stamp = subprocess.run("sha256sum requirements.lock pyproject.toml | sha256sum | cut -c1-16", shell=True,
                           cwd=checkout, capture_output=True, text=True, check=True).stdout.strip()
    if not (ROOT / ".venv" / f".geolip-installed-{stamp}").exists():
        pytest.fail("HEAD's requirements.lock / pyproject.toml differ from the ones .venv was set up from: "
                    "commit them and run make setup first")
    for shared in (".venv", ".cache"):
        (checkout / shared).symlink_to(ROOT / shared)
    server = Lab(checkout)
    yield server
    server.stop()


def test_make_lab_serves_on_loopback_with_a_token_and_the_venvs_python3_kernel(lab):
    assert lab.base.startswith("http://127.0.0.1:"), lab.url  # 127.0.0.1 unless LAB_IP says otherwise
    log = "".join(lab.lines)
    assert "ssh -N -L" in log  # the port forward from a laptop is printed with the URL
    assert os.geteuid() != 0 or "Running as root is not recommended" not in log  # root starts (it did)
    assert lab.api("/api/status")["started"]
    with pytest.raises(urllib.error.HTTPError) as no_token:  # nothing without the token
        urllib.request.urlopen(f"{lab.base}/api/status", timeout=10)
    assert no_token.value.code == 403
    page = urllib.request.urlopen(lab.url, timeout=30).read().decode()
    assert "JupyterLab" in page
    assert "Overriding existing post_save_hook" not in log  # the git-refresh hook is registered once
    cfg = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page,
                               re.S).group(1))
    assert "@jupyterlab/apputils-extension:announcements" in cfg["disabledExtensions"]  # no news prompt
    specs = lab.api("/api/kernelspecs")
    assert set(specs["kernelspecs"]) == {"python3"} and specs["default"] == "python3"  # one kernel, on purpose
    nb = nbformat.read(ROOT / "notebooks" / f"{NOTEBOOK}.ipynb", as_version=4)
    assert nb.metadata.kernelspec.name == "python3"


def test_make_lab_on_a_busy_port_says_so_in_one_line_and_serves_nowhere_else():
    """Jupyter would move to the next port while the printed ssh line and URL name the busy one."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = subprocess.run(["make", "-s", "lab", f"LAB_PORT={port}"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("[lab]")]
    assert lines == [f"[lab] error: port {port} on 127.0.0.1 is in use (another Jupyter?); stop it or pick another: "
                     f"make lab LAB_PORT={port + 1}"]


@pytest.mark.parametrize("port", ["abc", "80", "70000", "8888;id"])
def test_make_lab_with_a_port_that_is_no_number_says_so(port):
    """LAB_PORT=abc said 'port abc is in use'."""
    p = subprocess.run(["make", "-s", "lab", f"LAB_PORT={port}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    lines = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("[lab]")]
    assert p.returncode == 2 and lines == [f"[lab] error: LAB_PORT={port} is not a port number; give one from 1024 to "
                                           "65535: make lab LAB_PORT=8888"], p.stdout + p.stderr


class Kernel:
    """The server's kernel over its websocket (``/api/kernels/<id>/channels``), as Lab talks to it."""

    def __init__(self, lab: Lab, kernel_id: str):
        ws_base = lab.base.replace("http://", "ws://")
        self.ws = websocket.create_connection(f"{ws_base}/api/kernels/{kernel_id}/channels",
                                              header=[f"Authorization: token {lab.token}"], timeout=120)
        self.session = Session()  # builds the messages; the server signs what it sends to the kernel

    def request(self, channel: str, msg_type: str, content: dict) -> tuple[dict, list]:
        """Send one request; return its reply and the iopub messages it caused (up to idle)."""
        msg = self.session.msg(msg_type, content)
        msg["channel"] = channel
        self.ws.send(json.dumps(msg, default=json_default))
        reply, iopub, idle = None, [], False
        while reply is None or not idle:
            m = json.loads(self.ws.recv())
            if m.get("parent_header", {}).get("msg_id") != msg["header"]["msg_id"]:
                continue
            if m["channel"] == "iopub":
                if m["msg_type"] == "status":
                    idle = m["content"]["execution_state"] == "idle"
                else:
                    iopub.append(m)
            elif m["channel"] == channel:
                reply = m
        return reply, iopub

    def execute(self, code: str, store_history: bool = True) -> tuple[dict, list]:
        return self.request("shell", "execute_request", {
            "code": code, "silent": False, "store_history": store_history, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})


def test_notebook_01_runs_through_the_servers_kernel_and_saving_it_leaves_git_clean(lab):
    path = f"{NOTEBOOK}.ipynb"
    session = lab.api("/api/sessions", {"path": path, "type": "notebook", "name": path,
                                        "kernel": {"name": "python3"}})
    kernel = Kernel(lab, session["kernel"]["id"])
    try:
        info, _ = kernel.request("shell", "kernel_info_request", {})
        # the venv's python, the clone's geolip_lib (not the one the shared venv's editable install points at)
        _, out = kernel.execute("import sys, geolip_lib; print(sys.executable); print(geolip_lib.__file__)",
                                store_history=False)
        exe, lib = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream").split()
        assert Path(exe) == ROOT / ".venv" / "bin" / "python"  # the clone's .venv is a link to this one
        assert Path(lib).resolve() == (lab.checkout / "geolip_lib" / "__init__.py").resolve()
        # the notebook as a user runs it in Lab: every code cell in order; after its parameters cell, the
        # tiny profile's sizes (what the notebook tests run; 25 s instead of 70 s on this busy 2-core box),
        # sent as an extra request the way papermill injects them, so that the saved notebook is the user's
        small = jobs_for_profile("tiny", ["tiny-bert"], [NOTEBOOK])[0].parameters
        nb = nbformat.read(lab.checkout / "notebooks" / path, as_version=4)
        t0, images = time.perf_counter(), 0
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            reply, out = kernel.execute(cell.source)
            errors = [m["content"] for m in out if m["msg_type"] == "error"]
            assert reply["content"]["status"] == "ok", f"cell failed: {errors or reply['content']}"
            cell.execution_count = reply["content"]["execution_count"]
            cell.outputs = [nbformat.v4.output_from_msg(m) for m in out
                            if m["msg_type"] in ("stream", "display_data", "execute_result", "error")]
            images += sum("image/png" in o.get("data", {}) for o in cell.outputs)
            if "parameters" in cell.metadata.get("tags", []):
                kernel.execute("\n".join(f"{k} = {v!r}" for k, v in small.items()), store_history=False)
        _, out = kernel.execute("import resource; r = resource.getrusage(resource.RUSAGE_SELF); "
                                "print(round(r.ru_utime + r.ru_stime, 1))", store_history=False)
        cpu = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream").strip()
        print(f"notebook {NOTEBOOK} through the server: {time.perf_counter() - t0:.1f} s wall, kernel CPU {cpu} s, "
              f"{images} PNG outputs")
    finally:
        kernel.ws.close()
        lab.api(f"/api/sessions/{session['id']}", method="DELETE")
    assert images >= 5  # 01's figures (norms, cosines, spectra, pentachora, layers ...) arrive inline
    # the job wrote into the clone's reports/, not into the checkout the venv was made for
    metrics = lab.checkout / "reports" / "adhoc" / NOTEBOOK / "tiny-bert" / "metrics.json"
    assert json.loads(metrics.read_text())["headline"]
    # saved as Lab saves it (outputs, execution counts, the kernel's language_info): git sees no change
    nb.metadata["language_info"] = info["content"]["language_info"]
    lab.api(f"/api/contents/{path}", {"type": "notebook", "format": "json", "content": nb}, method="PUT")
    on_disk = (lab.checkout / "notebooks" / path).read_text()
    assert '"image/png"' in on_disk and '"language_info"' in on_disk  # the outputs are in the file ...
    git = ["git", "-C", str(lab.checkout)]
    status = git + ["status", "--porcelain", "--untracked-files=no"]  # (the .venv and .cache links are untracked)
    assert subprocess.run(status, capture_output=True, text=True, check=True).stdout == ""  # ... and not in git
    # a real edit still shows (the filter strips outputs, not work)
    nb.cells.append(nbformat.v4.new_markdown_cell("a note"))
    lab.api(f"/api/contents/{path}", {"type": "notebook", "format": "json", "content": nb}, method="PUT")
    changed = subprocess.run(status, capture_output=True, text=True, check=True).stdout
    assert f"notebooks/{path}" in changed
    diff = subprocess.run(git + ["diff", "--", f"notebooks/{path}"], capture_output=True, text=True).stdout
    assert "a note" in diff and "image/png" not in diff
