"""Win rates, paired tests and the metrics.json layout; report tables; ablation and MLflow."""

from __future__ import annotations

import json

import pytest
from tables import squeeze

from stackelberg.evaluation.ablation import (
    AblationResult,
    ablation_from_mlflow,
    ablation_table,
)
from stackelberg.evaluation.metrics import (
    NOT_SIGNIFICANT,
    game_metrics,
    mlflow_metrics,
    paired_test,
    win_rates,
)
from stackelberg.evaluation.report import (
    load_metrics,
    markdown_report,
    overall_table,
    render_markdown,
    render_text,
    report_tables,
    terminal_report,
    training_table,
)
from stackelberg.evaluation.tournament import play_matrix


def rec(condition: str, seed: int, win: bool, camp: str = "werewolf", role: str = "werewolf"):
    """A minimal tournament record: one tested seat of ``role`` in ``camp``."""
    return {
        "game": "werewolf",
        "seed": seed,
        "condition": condition,
        "camp": camp,
        "opponent": "direct",
        "seats": [0],
        "winner": camp if win else "other",
        "win": win,
        "players": [
            {"id": 0, "role": role, "team": camp, "tested": True, "won": win},
            {"id": 1, "role": "seer", "team": "x", "tested": False, "won": not win},
        ],
    }


def discordant(b: int, c: int, ties: int = 3) -> list[dict]:
    """X wins alone in b games, refiner+X alone in c, both win in ``ties``."""
    out, seed = [], 0
    for x, r, k in ((True, False, b), (False, True, c), (True, True, ties)):
        for _ in range(k):
            out += [rec("react", seed, x), rec("refiner+react", seed, r)]
            seed += 1
    return out


def test_paired_test_uses_discordant_pairs_and_exact_mcnemar():
    t = paired_test(discordant(1, 8), "react", "refiner+react", resamples=1000)
    assert (t["n"], t["b"], t["c"]) == (12, 1, 8)
    assert t["p_value"] == pytest.approx(0.0390625)
    assert t["diff"] == pytest.approx(7 / 12)
    assert t["ci"][0] > 0 and t["significant"] and t["verdict"] == "gain"


def test_a_gain_whose_interval_includes_zero_is_not_called_a_gain():
    t = paired_test(discordant(2, 4), "react", "refiner+react", resamples=1000)
    assert t["diff"] > 0 and t["p_value"] > 0.05
    assert not t["significant"] and t["verdict"] == NOT_SIGNIFICANT


def test_one_discordant_game_is_not_significant_and_says_why():
    t = paired_test(discordant(1, 0, ties=0), "react", "refiner+react", resamples=200)
    assert t["ci"] == pytest.approx([-1.0, -1.0])  # one game: an interval without width
    assert t["p_value"] == pytest.approx(1.0) and not t["significant"]
    assert t["verdict"] == "no significant difference (exact McNemar p = 1 >= 0.05)"


def test_unpaired_seeds_are_left_out_of_the_pairing():
    records = discordant(0, 2) + [rec("react", 99, True)]
    assert paired_test(records, "react", "refiner+react")["n"] == 5


def test_win_rates_per_condition_camp_and_role():
    records = [
        rec("react", 0, True),
        rec("react", 1, False),
        rec("react", 0, True, camp="village", role="seer"),
        rec("react", 1, True, camp="village", role="villager"),
    ]
    rates = win_rates(records)["react"]
    assert (rates["overall"]["wins"], rates["overall"]["n"]) == (3, 4)
    assert rates["camps"]["werewolf"]["rate"] == 0.5
    assert rates["camps"]["village"]["ci"] == pytest.approx([0.3424, 1.0], abs=1e-4)
    assert {k: v["n"] for k, v in rates["roles"].items()} == {
        "seer": 1,
        "villager": 1,
        "werewolf": 2,
    }


def test_a_role_counts_once_per_game():
    r = rec("react", 0, True)
    r["players"].append(
        {"id": 2, "role": "werewolf", "team": "werewolf", "tested": True, "won": True}
    )
    assert win_rates([r])["react"]["roles"]["werewolf"]["n"] == 1


@pytest.fixture(scope="module")
def tiny_metrics() -> dict:
    """A tiny real tournament: scripted vs random as the tested agent (random opponents)."""
    records = play_matrix("avalon", ["random", "scripted"], range(6), opponent="random")
    return game_metrics(
        records,
        [0.1, -0.2, 0.3, 0.0],
        [0.5, 0.4, 0.9, 0.2],
        pairs=[("random", "scripted")],
        resamples=500,
    )


def test_metrics_json_layout(tiny_metrics):
    m = json.loads(json.dumps(tiny_metrics))  # JSON-ready
    assert set(m) == {
        "version",
        "game",
        "opponent",
        "seeds",
        "conditions",
        "choices",
        "speeches",
        "paired",
        "reward",
        "refiner_outputs",
        "training",
    }
    assert (m["version"], m["game"], m["opponent"], m["seeds"]) == (
        1,
        "avalon",
        "random",
        list(range(6)),
    )
    assert set(m["conditions"]) == {"random", "scripted"}
    for c in m["conditions"].values():
        assert set(c) == {"overall", "camps", "roles"} and set(c["camps"]) == {"good", "evil"}
        assert c["overall"]["n"] == 12 and set(c["overall"]) == {"wins", "n", "rate", "ci"}
    assert [t["camp"] for t in m["paired"]] == ["all", "good", "evil"]
    assert {"b", "c", "p_value", "ci", "diff", "verdict", "significant"} <= set(m["paired"][0])
    assert m["reward"]["paired"] and m["reward"]["diff"]["estimate"] == pytest.approx(0.45)
    assert game_metrics([])["reward"] is None


def test_report_tables_markdown_and_terminal(tiny_metrics, tmp_path):
    md = markdown_report({"avalon": tiny_metrics}, plots=["avalon/win_rates.png"])
    assert "### Win rate of the agent under test (all camps)" in md
    assert "| agent | avalon |" in squeeze(md) and "| scripted |" in md and "n=12" in md
    assert "avalon: win rate by camp" in md and "avalon: win rate by role" in md
    assert "Paired comparison" in md and "Held-out Measurer reward" in md
    assert "![win_rates](avalon/win_rates.png)" in md
    text = terminal_report({"avalon": tiny_metrics})
    assert "|" not in text and "scripted" in text and "McNemar" in text
    (tmp_path / "avalon").mkdir()
    (tmp_path / "avalon" / "metrics.json").write_text(json.dumps(tiny_metrics))
    assert load_metrics(tmp_path) == load_metrics(tmp_path / "avalon") == {"avalon": tiny_metrics}
    with pytest.raises(FileNotFoundError, match="no metrics.json"):
        load_metrics(tmp_path / "avalon" / "nothing")


def test_the_headline_table_has_each_x_then_refiner_x_and_their_paired_difference():
    records = discordant(2, 6) + [rec("recon", s, s % 2 == 0) for s in range(11)]
    records += [rec("refiner+recon", s, s % 3 == 0) for s in range(11)] + [rec("lasi", 0, True)]
    order = ["refiner+recon", "react", "lasi", "recon", "refiner+react"]
    records.sort(key=lambda r: order.index(r["condition"]))  # refined ones played first
    metrics = game_metrics(records, resamples=200)
    table = overall_table({"werewolf": metrics, "onuw": metrics})
    assert [row[0] for row in table.rows] == [
        "react",
        "refiner+react",
        "refiner+react - react (paired)",
        "lasi",  # played without its refined condition: no difference row
        "recon",
        "refiner+recon",
        "refiner+recon - recon (paired)",
    ]
    react = next(t for t in metrics["paired"] if t["base"] == "react" and t["camp"] == "all")
    cell = table.rows[2][1]
    assert cell == table.rows[2][2] and cell.startswith(f"{100 * react['diff']:+.1f} [")
    assert cell.endswith(f"p={react['p_value']:.2g}") and "paired bootstrap" in table.note


def test_ablation_table_is_shaped_like_the_paper():
    table = ablation_table(
        [
            ("full", "werewolf", 7, 10),
            ("baseline", "werewolf", 5, 10),
            ("pos_only", "onuw", 6, 10),
            ("neg_only", "werewolf", 5, 10),
            AblationResult("full", "onuw", 0, 10),
            ("full", "onuw", 8, 10),  # summed: 8/20
        ]
    )
    assert table.headers == ["reward terms", "werewolf", "onuw"]
    assert [row[0] for row in table.rows] == [
        "ReAct",
        "+ Refiner, positive-only reward",
        "+ Refiner, negative-only reward",
        "+ Refiner, full reward",
    ]
    assert table.rows[3][1] == "70.0% [39.7, 89.2] n=10" and table.rows[3][2].startswith("40.0% ")
    assert table.rows[0][2] == "-"
    assert "| ReAct |" in squeeze(render_markdown(table)) and "ReAct" in render_text(table)


@pytest.mark.slow
def test_ablation_from_a_temporary_mlflow_store(tmp_path, tiny_metrics):
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("abl", artifact_location=str(tmp_path / "art"))

    def log(terms: str | None, wins: int, as_tag: bool = False) -> None:
        run = client.create_run(exp)
        metrics = {
            "wins/onuw/refiner-react/overall": wins,
            "games/onuw/refiner-react/overall": 20,
            "wins/onuw/react/overall": 9,
            "games/onuw/react/overall": 20,
            "winrate/onuw/refiner-react/overall": wins / 20,
        }
        for k, v in metrics.items():
            client.log_metric(run.info.run_id, k, v)
        if terms and as_tag:
            client.set_tag(run.info.run_id, "score.terms", terms)
        elif terms:
            client.log_param(run.info.run_id, "score.terms", terms)
        client.set_terminated(run.info.run_id)

    log("full", 1)  # older run of the same terms: superseded
    for terms, wins in (("full", 14), ("pos_only", 12), ("neg_only", 10), (None, 20)):
        log(terms, wins, as_tag=terms == "neg_only")
    run = client.create_run(exp)  # metrics as the evaluate stage logs them
    for k, v in mlflow_metrics(tiny_metrics).items():
        client.log_metric(run.info.run_id, k, v)
    client.log_param(run.info.run_id, "score.terms", "full")

    results = ablation_from_mlflow("abl", uri, condition="refiner+react")
    assert sorted(results) == sorted(
        [
            AblationResult("full", "onuw", 14, 20),
            AblationResult("pos_only", "onuw", 12, 20),
            AblationResult("neg_only", "onuw", 10, 20),
            AblationResult("baseline", "onuw", 9, 20),
        ]
    )
    scripted = ablation_from_mlflow("abl", uri, condition="scripted", baseline="random")
    overall = {c: tiny_metrics["conditions"][c]["overall"] for c in ("scripted", "random")}
    assert sorted(scripted) == [
        AblationResult("baseline", "avalon", overall["random"]["wins"], 12),
        AblationResult("full", "avalon", overall["scripted"]["wins"], 12),
    ]
    with pytest.raises(ValueError, match="not found"):
        ablation_from_mlflow("nope", uri)


def test_reward_verdict_needs_enough_instances():
    from stackelberg.evaluation.metrics import reward_summary

    few = reward_summary([0.1, 0.2], [0.5, 0.6], resamples=200)
    assert not few["significant"] and few["verdict"].startswith("too few to conclude (n=2")
    before = [0.1 * i for i in range(12)]
    many = reward_summary(before, [b + 1.0 + 0.01 * i for i, b in enumerate(before)], resamples=200)
    assert many["significant"] and many["verdict"] == "gain"


def test_metrics_name_their_game_without_tournament_records():
    from stackelberg.evaluation.metrics import game_metrics

    m = game_metrics([], [0.1, 0.2], [0.3, 0.4], resamples=200, game="onuw")
    assert m["game"] == "onuw" and m["conditions"] == {} and m["reward"]["before"]["n"] == 2


def with_training(
    game: str, rise: dict | None, gain: dict | None = None, revisit: dict | None = None
) -> dict:
    """A game's metrics with no tournament and no held-out reward, only the training's rise
    (and its gain over the prompts' untrained baselines, and its prompts' revisit)."""
    m = game_metrics([], game=game)
    m["training"] = None if rise is None else {"reward_rise": rise}
    for key, entry in (("reward_gain", gain), ("reward_revisit", revisit)):
        if entry is not None:
            m["training"][key] = entry
    return m


RISE = {
    "estimate": 0.31,
    "ci": [0.125, 0.5],
    "first": -0.4,
    "last": -0.09,
    "n_first": 16,
    "n_last": 12,
    "steps": 40,
    "window_steps": 8,
    "significant": True,
    "verdict": "rises",
}
FEW = {
    "estimate": None,
    "ci": None,
    "steps": 1,
    "significant": False,
    "verdict": "too few steps (1 < 2)",
}


def test_the_training_table_puts_each_number_in_its_cell():
    gain = RISE | {"estimate": 0.2, "ci": [-0.05, 0.45], "first": 0.01, "last": 0.21}
    gain |= {"significant": False, "verdict": "no clear change"}
    revisit = {k: v for k, v in RISE.items() if k != "window_steps"}
    revisit |= {"estimate": 0.08, "ci": [0.03, 0.14], "first": 0.1, "last": 0.18}
    revisit |= {"n_first": 24, "n_last": 24}
    by_game = {
        "onuw": with_training("onuw", RISE, gain, revisit),
        "avalon": with_training("avalon", FEW),
        "werewolf": with_training("werewolf", None),  # no prompt rewards kept: no row
    }
    table = training_table(by_game)
    assert table.headers == [
        "game",
        "measure",
        "steps",
        "first 20%",
        "last 20%",
        "diff [95% CI]",
        "prompts",
        "verdict",
    ]
    gained = "reward - untrained, same prompt"
    assert table.rows == [
        ["onuw", "reward", "40", "-0.400", "-0.090", "+0.310 [0.125, 0.500]", "16 / 12", "rises"],
        ["onuw", gained, "40", "0.010", "0.210", "+0.200 [-0.050, 0.450]", "16 / 12"]
        + ["no clear change"],
        ["onuw", "same prompt, last visit - first", "40", "0.100", "0.180"]
        + ["+0.080 [0.030, 0.140]", "24 / 24", "rises"],
        ["avalon", "reward", "1", "-", "-", "-", "-", "too few steps (1 < 2)"],
    ]
    md = squeeze(markdown_report(by_game))
    assert "### GRPO training reward: last 20% of steps vs first 20%" in md
    row = "| onuw | reward | 40 | -0.400 | -0.090 | +0.310 [0.125, 0.500] | 16 / 12 | rises |"
    assert row in md
    assert "onuw reward 40 -0.400 -0.090 +0.310 [0.125, 0.500] 16 / 12 rises" in squeeze(
        terminal_report(by_game)
    )


def test_metrics_written_before_the_training_key_still_render(tiny_metrics):
    old = {k: v for k, v in tiny_metrics.items() if k != "training"}
    titles = [t.title for t in report_tables({"avalon": old})]
    assert titles == [t.title for t in report_tables({"avalon": tiny_metrics})]
    assert not any("GRPO training reward" in t for t in titles)
    assert "Held-out Measurer reward" in markdown_report({"avalon": old})


@pytest.mark.slow
def test_the_report_read_back_from_mlflow_names_its_runs(tmp_path, tiny_metrics, capsys):
    """Each game's newest finished evaluate run, its metrics.json artifact and its source
    tags: what ``stackelberg report --mlflow`` prints."""
    import mlflow

    from stackelberg.cli import main
    from stackelberg.evaluation.mlflow_runs import logged_evaluations
    from stackelberg.provenance import COMMIT_TAG, PARAMS_TAG

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("study", artifact_location=str(tmp_path / "art"))

    def log(game: str, start: int, commit: str, finished: bool = True, reward: float = 0.0):
        run = client.create_run(exp, start_time=start, tags={"stage": "evaluate", "game": game})
        client.set_tag(run.info.run_id, COMMIT_TAG, commit)
        client.set_tag(run.info.run_id, PARAMS_TAG, "configs/study.yaml")
        metrics = {**tiny_metrics, "game": game, "marker": reward}
        (tmp_path / "metrics.json").write_text(json.dumps(metrics))
        client.log_artifact(run.info.run_id, str(tmp_path / "metrics.json"))
        if finished:
            client.set_terminated(run.info.run_id)
        return run.info.run_id

    log("avalon", 1_000, "old", reward=1.0)
    newest = log("avalon", 2_000, "abc123", reward=2.0)
    log("avalon", 3_000, "unfinished", finished=False, reward=3.0)  # still running or killed
    other = client.create_run(exp, start_time=4_000, tags={"stage": "grpo", "game": "avalon"})
    client.set_terminated(other.info.run_id)

    [logged] = logged_evaluations("study", uri)
    assert (logged.game, logged.run_id, logged.commit) == ("avalon", newest, "abc123")
    assert logged.params == "configs/study.yaml" and logged.metrics["marker"] == 2.0
    assert main(["report", "--mlflow", "study", "--tracking-uri", uri, "--markdown"]) == 0
    out = capsys.readouterr().out
    assert f"| avalon | {newest} |" in squeeze(out) and "abc123" in out
    assert main(["report", "--mlflow", "nope", "--tracking-uri", uri]) == 2
    assert "'nope' not found" in capsys.readouterr().err
