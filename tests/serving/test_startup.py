"""`stackelberg serve` refuses, in one line and before any model loads, what cannot work."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest

from stackelberg.cli import main
from stackelberg.training.grpo_outputs import ADAPTER_CONFIG

PARAMS = str(Path(__file__).resolve().parents[2] / "params.yaml")


@pytest.fixture
def adapter(tmp_path) -> Path:
    folder = tmp_path / "refiner"
    folder.mkdir()
    (folder / ADAPTER_CONFIG).write_text('{"peft_type": "LORA"}')
    return folder


def refused(capsys, *argv: str) -> str:
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("stackelberg: error: "), err
    return err


def test_a_missing_or_plain_folder_is_refused(tmp_path, capsys):
    assert "no such folder" in refused(capsys, "--refiner", str(tmp_path / "none"))
    assert "not a LoRA adapter folder" in refused(capsys, "--refiner", str(tmp_path))
    for config in ("{", "[]", '{"peft_type": "PROMPT_TUNING"}'):
        (tmp_path / ADAPTER_CONFIG).write_text(config)
        assert "is no LoRA adapter's" in refused(capsys, "--refiner", str(tmp_path))


def test_a_port_in_use_is_refused(adapter, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        err = refused(capsys, "--refiner", str(adapter), "--params", PARAMS, "--port", port)
    assert f"--port {port}: in use" in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--params", "missing.yaml"], "missing.yaml: no such params file"),
        (["--max-n", "0", "--max-queue", "-1"], "--max-n: "),
        (["--port", "70000"], "--port 70000: a port is a number"),
        (["--host", "192.0.2.1"], "--host 192.0.2.1 --port 8000: cannot listen"),
    ],
)
def test_bad_settings_are_refused(adapter, capsys, argv, words):
    argv = ["--params", PARAMS, *argv] if "--params" not in argv else argv
    assert words in refused(capsys, "--refiner", str(adapter), *argv)


def test_without_the_serve_extra_it_names_the_extra(adapter, capsys, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "uvicorn" else find_spec(name, *a),
    )
    assert "install the 'serve' extra" in refused(capsys, "--refiner", str(adapter))
