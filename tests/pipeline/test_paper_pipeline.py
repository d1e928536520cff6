"""configs/paper.yaml runs end to end: its backends and settings, its endpoints on loopback.

One local server speaks every protocol the paper's setup uses (OpenAI chat for GPT-4o and
Gemini, Anthropic messages for Claude, vLLM's /completions with prompt_logprobs and
/tokenize for the Measurer, vLLM's chat with LoRA modules for the Refiner), answering as a
pretend chat model that plays games. Only the endpoints change, the Refiner's base is the
embedded model (GRPO trains it locally, the server serves it by that name and each trained
adapter as its LoRA module), and counts and lengths shrink through ordinary params keys;
every stage runs.
"""

from __future__ import annotations

import json
import sys

import pytest
import yaml
from llm.fake_server import FakeServer
from llm.game_policy import play_answer
from project import ROOT, make_project, sh

from stackelberg.datasets import read_dataset
from stackelberg.params import load_params

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

GAMES = ["werewolf", "avalon", "onuw"]
API_MODELS = {"gpt-4o", "gemini-2.5-flash", "claude-3-5-haiku-latest"}
MEASURER = "Qwen/Qwen2.5-72B-Instruct"
#: the Refiner's base: what GRPO trains (the embedded model) and the server's name of it
REFINER = "models/base"
SHRINK_CONDITIONS = ["direct", "refiner+direct"]
#: the counts and lengths of a CPU test, as `dvc exp run -S key=value` would set them
SHRINK = {
    "selfplay.games": 2,
    "selfplay.batch_games": 2,
    "selfplay.speech_tokens": 24,
    "selfplay.thought_tokens": 16,
    "selfplay.max_prompt_tokens": 2048,
    "select.instances": 2,
    "select.test_fraction": 0.5,
    "label.batch_instances": 4,
    "sample.n": 2,
    "sample.max_new_tokens": 16,
    "sample.max_prompt_tokens": 512,
    "sample.batch_instances": 4,
    "score.batch_instances": 4,
    # a CPU test: GRPO in the stage's process, not launched on the paper's 4 GPUs
    "grpo.launch": "none",
    "grpo.num_processes": 1,
    "grpo.num_generations": 2,
    "grpo.prompts_per_step": 1,
    "grpo.epochs": 1.0,
    "grpo.lora_r": 4,
    "grpo.lora_alpha": 8,
    "evaluate.n": 2,
    "evaluate.bootstrap": 200,
    "evaluate.tournament_games": 1,
    "evaluate.speech_tokens": 16,
    "evaluate.thought_tokens": 16,
    "evaluate.max_prompt_tokens": 1024,
    "evaluate.conditions": SHRINK_CONDITIONS,
    "evaluate.batch_games": 16,
    "tactics.episodes": 200,
    "tactics.eval_games": 20,
    "strategist.games": 60,
    "strategist.eval_games": 20,
    "lspo.candidate_games": 10,
    "lspo.iterations": 200,
    "lspo.eval_games": 20,
    "orchestration.task_retries": 0,
}


def paper_params_on(url: str) -> dict:
    params = yaml.safe_load((ROOT / "configs/paper.yaml").read_text())
    models = params["models"]
    for entry in (*models["labeler"], *models["player"], models["measurer"], models["refiner"]):
        entry["base_url"] = url if entry["backend"] == "anthropic" else f"{url}/v1"
    models["refiner"]["model"] = REFINER
    for key, value in SHRINK.items():
        section, name = key.split(".")
        params[section][name] = value
    for sections in params["game_overrides"].values():  # the shrunk tournaments: SHRINK's two
        sections["evaluate"].pop("conditions", None)
    for stage in ("selfplay", "evaluate"):  # Sotopia: 4 turns a conversation, not 20
        params["game_overrides"]["sotopia"][stage]["options"]["max_turns"] = 4
    # Werewolf's rows add lspo (its stage's policy on its route); react and the Refiner
    # around each baseline are left to the paper's run, for time
    params["game_overrides"]["werewolf"]["evaluate"]["conditions"] = [*SHRINK_CONDITIONS, "lspo"]
    return params


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    with FakeServer() as server:
        server.answer = play_answer
        server.models = {*API_MODELS, MEASURER, REFINER}
        root = tmp_path_factory.mktemp("paper")
        keys = {k: "test-key" for k in ("OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY")}
        params = paper_params_on(server.url)
        # what `vllm serve --lora-modules refiner-GAME=models/refiner/GAME` lists; listed
        # before GRPO wrote them, as a fake server loads no weights
        server.adapters = {f"refiner-{game}": REFINER for game in params["games"]}
        env = make_project(root, yaml.safe_dump(params, sort_keys=False), keys)
        run = sh([sys.executable, "-m", "flows.pipeline"], root, env, timeout=1500)
        yield {"root": root, "env": env, "server": server, "run": run}


def test_every_stage_of_the_papers_setup_runs(paper):
    root = paper["root"]
    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    per_game = ("selfplay", "select", "label", "sample", "score", "grpo", "evaluate")
    assert {"base_model", "report", *(f"{s}@{g}" for s in per_game for g in GAMES)} <= set(lock)
    for game in GAMES:
        assert (root / f"models/refiner/{game}/adapter_config.json").exists()
        metrics = json.loads((root / f"reports/{game}/metrics.json").read_text())
        # the shrunk conditions (Werewolf: lspo beside them)
        conditions = load_params(root / "params.yaml").for_game("evaluate", game).conditions
        assert set(metrics["conditions"]) == set(conditions) >= {"direct", "refiner+direct"}
        assert all(c["choice_asks"] > 0 for c in metrics["choices"].values())
    assert "Win rate of the agent under test" in (root / "reports/summary.md").read_text()


def test_api_players_choose_by_generation_and_their_model_is_recorded(paper):
    root = paper["root"]
    drawn = set()
    for game in GAMES:
        games = read_dataset(root / f"data/selfplay/{game}.parquet", "selfplay")
        for row in games.iter_rows(named=True):
            seats = json.loads(row["record"])["players"]
            assert {s["model"] for s in seats} <= API_MODELS and len(
                {s["model"] for s in seats}
            ) == 1
            assert all(s["choice"] == "generate" for s in seats)
            assert sum(s["choice_asks"] for s in seats) > 0
            assert row["models"] == ",".join(s["model"] for s in seats)
            drawn.add(seats[0]["model"])
        instances = read_dataset(root / f"data/instances/{game}.parquet", "instances")
        assert set(instances["speaker_model"]) <= API_MODELS
        intents = read_dataset(root / f"data/intents/{game}.parquet", "intents")
        assert intents.height > 0 and set(intents["labeler_model"]) <= API_MODELS
    assert len(drawn) >= 2  # games draw different models
    server = paper["server"]
    used = {b["model"] for p, b in server.requests if p in ("/v1/chat/completions", "/v1/messages")}
    used -= {REFINER, *server.adapters}  # the Refiner's (the last test)
    assert drawn <= used <= API_MODELS  # every drawn model was called on its own protocol


def test_the_measurer_scores_through_prompt_logprobs(paper):
    scored = [
        b
        for p, b in paper["server"].requests
        if p == "/v1/completions" and b.get("prompt_logprobs")
    ]
    assert scored and {b["model"] for b in scored} == {MEASURER}
    assert all(isinstance(b["prompt"], list) for b in scored)  # token ids from /tokenize
    scores = read_dataset(paper["root"] / "data/scores/werewolf.parquet", "scores")
    assert scores.height > 0 and scores["reward"].is_finite().all()


def test_the_refiner_samples_on_the_server_untrained_and_as_its_trained_adapter(paper):
    """The sample stage and the held-out reward ask the base model, the held-out reward and
    the refiner+direct tables each game's trained adapter by its LoRA module name: n
    completions in one request (sample.n = evaluate.n = 2), one per speech at play."""
    asked = [
        b
        for p, b in paper["server"].requests
        if p == "/v1/chat/completions" and b["model"] not in API_MODELS
    ]
    untrained = [b for b in asked if b["model"] == REFINER]
    assert untrained and all(b["n"] == 2 and "seed" in b for b in untrained)
    for game in GAMES:
        trained = [b for b in asked if b["model"] == f"refiner-{game}"]
        assert {b["n"] for b in trained} == {1, 2}  # at play; the held-out candidates
        assert all(b["max_tokens"] == SHRINK["sample.max_new_tokens"] for b in trained)
        candidates = read_dataset(paper["root"] / f"data/candidates/{game}.parquet", "candidates")
        assert candidates.height > 0
    assert {b["model"] for b in asked} == {REFINER, *paper["server"].adapters}
