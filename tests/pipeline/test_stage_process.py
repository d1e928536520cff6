"""A stage run as its own process (``python -m flows.run``, as ``dvc repro`` runs each) starts
its temporary Prefect server first thing, reports to it, and leaves none behind; where
Prefect has an API URL it starts none (flows/api.py)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from types import SimpleNamespace

import pytest
from project import ROOT, make_project, sh

from flows import api


def _python(code: str, env: dict[str, str], cwd=ROOT) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def _without_api_url() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_UI_URL")}


@pytest.mark.slow  # starts Prefect
def test_a_stage_process_runs_on_its_own_server_and_stops_it(tmp_path):
    env = make_project(tmp_path, "selfplay: {games: 2, batch_games: 1}\n")
    for key in ("PREFECT_API_URL", "PREFECT_UI_URL"):
        env.pop(key, None)
    proc = sh([sys.executable, "-m", "flows.run", "selfplay", "onuw"], tmp_path, env, timeout=600)
    told = proc.stdout + proc.stderr
    started = re.findall(r"Starting temporary server on http://127\.0\.0\.1:(\d+)", told)
    assert len(started) == 1, told  # Prefect started no second one
    assert f"Stopping temporary server on http://127.0.0.1:{started[0]}" in told
    assert "Finished in state Completed()" in told and "items=2" in proc.stderr
    assert "View at" not in told  # the server serves no UI: no link to one
    with socket.socket() as sock:  # nothing listens there any more
        assert sock.connect_ex(("127.0.0.1", int(started[0]))) != 0


def test_a_stage_process_refused_for_its_params_says_one_line_and_starts_no_server(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("selfplay: {games: -1}\n")
    env = {**_without_api_url(), "STACKELBERG_PARAMS": str(params)}
    proc = subprocess.run(
        [sys.executable, "-m", "flows.run", "selfplay", "onuw"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("selfplay@onuw: error: ") and "selfplay.games" in lines[0]


def test_an_api_url_in_the_environment_starts_no_server():
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    code = (
        "from flows import api\n"
        "api.TemporaryServer = None  # would fail if called\n"
        "api.start()\n"
        "print(api.own(), api.starting())"
    )
    assert _python(code, env) == "False True"


@pytest.mark.slow  # starts a Prefect server's process (and stops it at once)
def test_an_api_url_in_the_prefect_profile_starts_no_server(tmp_path):
    (tmp_path / "profiles.toml").write_text(
        'active = "remote"\n[profiles.remote]\nPREFECT_API_URL = "http://127.0.0.1:9/api"\n'
    )
    env = {**_without_api_url(), "PREFECT_HOME": str(tmp_path)}
    code = (
        "import os\n"
        "from flows import api\n"
        "api.start()\n"
        "from prefect.settings import PREFECT_API_URL  # after the start, as in flows.run\n"
        "print(api.own(), os.environ.get('PREFECT_API_URL'), PREFECT_API_URL.value())"
    )
    assert _python(code, env) == "False None http://127.0.0.1:9/api"


def test_a_server_whose_port_was_taken_starts_again_on_another(monkeypatch):
    launched, named = [], []

    class Process:
        def __init__(self, args, env):
            launched.append(int(args[args.index("--port") + 1]))
            self.returncode = api.PORT_TAKEN if len(launched) == 1 else None

        def poll(self):
            return self.returncode

    class Answer:
        status = 200

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def urlopen(url, timeout):
        if len(launched) == 1:
            raise OSError("connection refused")
        assert url == f"http://127.0.0.1:{launched[-1]}/api/health"
        return Answer()

    monkeypatch.setattr(api, "subprocess", SimpleNamespace(Popen=Process))
    monkeypatch.setattr(api, "urlopen", urlopen)
    monkeypatch.setattr(api, "_name_api", named.append)
    server = api.TemporaryServer()
    server.ready(timeout=5)
    assert len(launched) == 2 and server.answered
    assert named == [f"http://127.0.0.1:{launched[1]}/api"]  # the API is the new port's
