"""The Refiner-output rates (ended before the token limit, parsed) of the sample stage and
of GRPO reach the stage metrics (MLflow), metrics.json and the summary's table."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from tables import squeeze

from stackelberg.agents.refiner import Candidate, ended_before_limit
from stackelberg.datasets import read_dataset
from stackelberg.evaluation.game_outputs import refiner_outputs
from stackelberg.evaluation.metrics import game_metrics, mlflow_metrics
from stackelberg.evaluation.report import markdown_report, terminal_report
from stackelberg.params import Params
from stackelberg.persuasion.candidates import dataset_rates
from stackelberg.training.grpo_outputs import CLIPPED_RATIO, PARSE_RATE
from stages import sample


class WordTokens:
    """A tokenizer stand-in: one token per word."""

    def encode(self, text: str, first: bool = True) -> list[int]:
        return list(range(len(text.split())))


def _row(i: int, raw: str, parsed: bool, source: str = "refiner") -> dict:
    """A candidates row, its end counted in words against the 8-token limit of ``ctx``."""
    ended = ended_before_limit(WordTokens(), raw, 8)
    candidate = Candidate(raw, raw if parsed else "base", parsed, ended)
    return sample._row({"instance_id": "werewolf-1-5"}, i, source, candidate)


@pytest.fixture
def ctx(tmp_path):
    paths = {"sample": tmp_path / "candidates.parquet", "grpo": tmp_path / "refiner"}
    params = Params(sample={"max_new_tokens": 8})
    return SimpleNamespace(
        game="werewolf",
        params=params,
        section=params.sample,
        path=lambda stage="sample": paths[stage],
        llm=lambda role: WordTokens(),
        model=lambda config: WordTokens(),
    )


@pytest.fixture
def sampled(ctx):
    """The sample stage's finish over two work items: 4 Refiner completions, 3 parsed, 3
    ended before the limit."""
    results = [
        [
            _row(-1, "I trust Player 2.", True, "base"),
            _row(0, "I trust Player 2 now.", True),
            _row(1, "one two three four five six seven eight", True),  # at the limit
        ],
        [_row(2, "Night 1: x.", False), _row(3, "Vote Player 4.", True)],
    ]
    return sample.finish(ctx, results)


def test_sample_stage_reports_both_rates(ctx, sampled):
    assert sampled["candidates"] == 4
    assert sampled["parse_rate"] == 0.75 and sampled["ended_rate"] == 0.75
    df = read_dataset(ctx.path("sample"), "candidates")
    assert df.height == 5 and set(df.columns) >= {"refiner_output", "parsed", "ended"}
    # read again from the written candidates: the same rates
    rates = dataset_rates(df)
    assert rates == {"completions": 4, "ended_rate": 0.75, "parse_rate": 0.75}


def test_rates_reach_metrics_mlflow_and_the_summary(ctx, sampled):
    trained = {
        "history": [
            {"step": 1, CLIPPED_RATIO: 0.25, PARSE_RATE: 1.0, "reward": 0.1},
            {"step": 2, CLIPPED_RATIO: 0.75, PARSE_RATE: 0.5, "reward": 0.2},
        ],
        "completions_per_step": 4,
    }
    reward = {
        "before": [0.1],
        "after": [0.2],
        "before_outputs": {"completions": 4, "ended_rate": 1.0, "parse_rate": 0.5},
        "after_outputs": {"completions": 4, "ended_rate": 0.5, "parse_rate": 1.0},
    }
    games = [  # tournament summaries of two games with refined seats, one without
        {"refined": 3, "refiner_ended": 3, "refiner_parsed": 2},
        {"refined": 1, "refiner_ended": 0, "refiner_parsed": 1},
        {},
    ]
    candidates = read_dataset(ctx.path("sample"), "candidates")
    runs = refiner_outputs(candidates, trained, reward, games)
    assert list(runs) == ["sample", "grpo", "held_out_before", "held_out_after", "tournament"]
    assert runs["tournament"] == {"completions": 4, "ended_rate": 0.75, "parse_rate": 0.75}
    assert "tournament" not in refiner_outputs(candidates, trained, reward, games[2:])
    assert runs["grpo"] == {"completions": 8, "ended_rate": 0.5, "parse_rate": 0.75}
    metrics = game_metrics([], game="werewolf", refiner_outputs=runs)
    out = metrics["refiner_outputs"]
    assert out["sample"] == {"completions": 4, "ended_rate": 0.75, "parse_rate": 0.75}
    flat = mlflow_metrics(metrics)
    assert flat["refiner/werewolf/sample/ended_rate"] == 0.75
    assert flat["refiner/werewolf/grpo/parse_rate"] == 0.75
    assert flat["refiner/werewolf/held_out_after/ended_rate"] == 0.5
    md = markdown_report({"werewolf": metrics})
    assert "### Refiner outputs" in md
    assert "| werewolf | candidates (untrained) | 4 | 75.0% | 75.0% |" in squeeze(md)
    assert "| werewolf | GRPO training | 8 | 50.0% | 75.0% |" in squeeze(md)
    assert "Refiner outputs" in terminal_report({"werewolf": metrics})


def test_unmeasured_rates_are_none_not_nan():
    runs = {"grpo": {"completions": 0, "ended_rate": math.nan, "parse_rate": math.nan}}
    metrics = game_metrics([], game="onuw", refiner_outputs=runs)
    assert metrics["refiner_outputs"] == {
        "grpo": {"completions": 0, "ended_rate": None, "parse_rate": None}
    }
    assert not any(k.startswith("refiner/") for k in mlflow_metrics(metrics))
    assert "| onuw | GRPO training | 0 | - | - |" in squeeze(markdown_report({"onuw": metrics}))
    assert game_metrics([], game="onuw")["refiner_outputs"] == {}


def test_one_definition_for_sampling_grpo_and_play():
    params = Params(sample={"max_new_tokens": 40, "output_format": "analysis", "rules": True})
    profile = params.refiner_profile("avalon")
    assert profile.style == params.sample.style
    assert profile.token_limit == 40 and profile.style.stop == ()
    # a game's override of the sample section is that game's Refiner's, and only its
    override = Params(game_overrides={"onuw": {"sample": {"max_new_tokens": 24}}})
    assert override.refiner_profile("onuw").token_limit == 24
    assert override.refiner_profile("avalon").token_limit == override.sample.max_new_tokens


def test_a_trained_refiner_is_its_folder_locally_and_its_lora_module_on_a_server(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    folder = "models/refiner/onuw"
    local = Params(evaluate={"refiner_dtype": "int8"}).refiner_profile("onuw", folder).model
    assert (local.adapter, local.dtype, local.cache) == (folder, "int8", "default")
    served = Params(models={"refiner": {"backend": "openai", "model": "base"}})
    untrained, trained = served.refiner_profile("onuw"), served.refiner_profile("onuw", folder)
    assert (untrained.model.adapter, trained.model.adapter) == (None, "refiner-onuw")
    assert trained.model.cache == "off" and trained.style == untrained.style
