"""A labeler that never answers in the asked form stops the label stage, in one line that
names it, the share it dropped and one of its answers; no traceback, and no later stage
left to fail on an empty dataset."""

from __future__ import annotations

import logging
import sys

import pytest
import yaml
from llm.fake_server import FakeServer
from project import ROOT, make_project, sh

from flows.errors import UserErrorsInOneLine
from stackelberg.datasets import NothingToWorkWithError

LABELER = "pretend-labeler"
ANSWER = "Sure! Here are some things\nPlayer 2 could say."


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_labeler_that_never_answers_in_json_stops_the_label_stage(tmp_path):
    with FakeServer() as server:
        server.models = {LABELER}
        server.answer = lambda system, messages, i: ANSWER
        params = yaml.safe_load((ROOT / "params.yaml").read_text())
        params["models"]["labeler"] = [
            {
                "backend": "openai",
                "model": LABELER,
                "base_url": f"{server.url}/v1",
                "scores": False,
                "context_window": 4096,
            }
        ]
        params["selfplay"]["games"] = 4
        params["select"].update(instances=4, test_fraction=0.5)
        params["label"].update(scheme="json", max_attempts=2)
        env = make_project(tmp_path, yaml.safe_dump(params), {"OPENAI_API_KEY": "test-key"})
        for stage in ("selfplay", "select"):
            sh([sys.executable, "-m", "flows.run", stage, "werewolf"], tmp_path, env)
        run = sh(
            [sys.executable, "-m", "flows.run", "label", "werewolf"], tmp_path, env, check=False
        )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr + run.stdout
    [line] = [x for x in run.stderr.splitlines() if x.startswith("label@werewolf: error:")]
    assert line.startswith(
        f"label@werewolf: error: labeler {LABELER} dropped 4 of 4 instances (100%), more than "
        "label.max_dropped_share 0.5:"
    )
    assert line.endswith("one answer: 'Sure! Here are some things Player 2 could say.'")
    assert not (tmp_path / "data/intents/werewolf.parquet").exists()
    assert server.count("/v1/chat/completions") == 4 * 2  # each instance asked twice


def test_prefect_logs_a_users_error_without_its_traceback():
    """Prefect logs a failed run's exception with its traceback; for a user's error the
    record keeps the message only (run_cli tells it in one line), for a bug the traceback."""

    def logged(exc: Exception) -> logging.LogRecord:
        try:
            raise exc
        except Exception:
            record = logging.LogRecord(
                "prefect.flow_runs", logging.ERROR, "", 0, "failed", (), sys.exc_info()
            )
        assert UserErrorsInOneLine().filter(record)
        return record

    assert logged(NothingToWorkWithError("no instances")).exc_info is None
    assert logged(KeyError("a bug")).exc_info is not None
