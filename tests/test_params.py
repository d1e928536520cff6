"""Params files: the shipped ones validate; a bad key or value is one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackelberg.params import ParamsError, explain, load_params

ROOT = Path(__file__).resolve().parents[1]
#: a joint Refiner on three games (grpo.joint), Sotopia held out
JOINT = "grpo: {joint: [werewolf, avalon, onuw]}\n"


@pytest.mark.parametrize(
    "path",
    [
        "params.yaml",
        "configs/paper.yaml",
        "configs/study.yaml",
        "configs/limits.yaml",
        "tests/pipeline/micro_params.yaml",
    ],
)
def test_shipped_params_validate(path):
    params = load_params(ROOT / path)
    assert params.games == ["werewolf", "avalon", "onuw", "sotopia"]


def test_paper_scale_is_the_papers():
    p = load_params(ROOT / "configs/paper.yaml")
    assert (p.selfplay.games, p.select.instances, p.label.k, p.sample.n) == (500, 4000, 3, 8)
    assert (p.grpo.num_generations, p.grpo.epsilon, p.grpo.beta, p.grpo.learning_rate) == (
        8,
        0.2,
        0.04,
        1e-6,
    )
    assert (p.grpo.epochs, p.grpo.lora_r, p.grpo.loss_type) == (3.0, 16, "grpo")
    assert p.models.refiner.model == "Qwen/Qwen2.5-7B-Instruct"
    assert p.models.measurer.backend == "openai" and "72B" in p.models.measurer.model
    # the paper's 4 GPUs for GRPO; the Refiner sampled from a vLLM server of its own
    assert (p.grpo.launch, p.grpo.zero_stage, p.grpo.num_processes) == ("deepspeed", 2, 4)
    assert (p.models.refiner.backend, p.models.refiner.base_url) == (
        "openai",
        "http://localhost:8001/v1",
    )


@pytest.mark.parametrize(
    "text, words",
    [
        ("grpo: {learnin_rate: 0.1}\n", "grpo.learnin_rate"),
        ("grpo: {learning_rate: fast}\n", "grpo.learning_rate"),
        ("score: {terms: both}\n", "score.terms"),
        ("models: {measurer: {backend: gpt}}\n", "models.measurer.backend"),
        ("game_overrides: {werewolf: {grpo: {beta: -1}}}\n", "game_overrides.werewolf.grpo"),
        ("game_overrides: {werewolf: {training: {}}}\n", "training"),
        ("games: [chess]\n", "games.0"),
        ("grpo: [1, 2\n", "not valid YAML"),
        ("grpo: {loss_type: ppo}\n", "grpo.loss_type"),
        ("grpo: {vllm_server_timeout: 0}\n", "grpo.vllm_server_timeout"),
        ("score: {free_words: 300}\n", "free_words must be below full_penalty_words"),
        ("models: {backend: {backend: local}}\n", "'backend' is now 'labeler'"),
        ("orchestration: {task_runner: slurm}\n", "orchestration.task_runner"),
        (
            "orchestration: {address: 'tcp://10.0.0.5:8786'}\n",
            "orchestration.address: is for task_runner dask or ray, not threads",
        ),
        ("orchestration: {workers: 4}\n", "orchestration.workers: is for task_runner dask or ray"),
        ("orchestration: {task_runner: ray, workers: 0}\n", "orchestration.workers"),
    ],
)
def test_bad_params_are_one_line(tmp_path, text, words):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError) as err:
        load_params(path)
    assert words in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("score: {variant: pos_only}\n", "score.variant was renamed: use score.terms"),
        # refused before the section is read: the rename, not the bad clamp, is what it says
        ("score: {variant: full, clamp: -1}\n", "score.variant was renamed: use score.terms"),
        (
            "grpo: {variants: [speaker_only]}\n",
            "grpo.variants was renamed: use grpo.ablations (reward terms) or grpo.views "
            "(information views)",
        ),
        (
            "game_overrides: {werewolf: {score: {variant: neg_only}}}\n",
            "game_overrides.werewolf.score.variant was renamed: use score.terms",
        ),
        (
            "game_overrides: {avalon: {grpo: {variants: [pos_only]}}}\n",
            "game_overrides.avalon.grpo.variants was renamed: use grpo.ablations",
        ),
    ],
)
def test_renamed_keys_are_refused_in_one_line_naming_the_new_one(tmp_path, text, message):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError) as err:
        load_params(path)
    assert str(err.value).startswith(f"{path}: {message}") and "\n" not in str(err.value)


@pytest.fixture
def cluster_packages(monkeypatch):
    """Which of the cluster runners' packages params find installed (all, unless set)."""
    import importlib.util

    found = importlib.util.find_spec
    missing: set[str] = set()
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name in missing else found(name, *args) or object(),
    )
    return missing


@pytest.mark.parametrize("runner, package", [("dask", "prefect_dask"), ("ray", "prefect_ray")])
def test_a_cluster_runner_needs_its_package_when_params_load(
    tmp_path, cluster_packages, runner, package
):
    path = tmp_path / "params.yaml"
    path.write_text(f"orchestration: {{task_runner: {runner}}}\n")
    assert load_params(path).orchestration.task_runner == runner
    cluster_packages.add(package)
    with pytest.raises(ParamsError) as err:
        load_params(path)
    assert str(err.value).startswith(
        f"{path}: orchestration.task_runner: '{runner}' needs the 'cluster' extra: "
        "pip install -e '.[cluster]'"
    )


def test_a_cluster_address_is_kept_and_sizes_no_local_cluster(tmp_path, cluster_packages):
    path = tmp_path / "params.yaml"
    path.write_text("orchestration: {task_runner: dask, address: 'tcp://10.0.0.5:8786'}\n")
    assert load_params(path).orchestration.address == "tcp://10.0.0.5:8786"
    path.write_text(
        "orchestration: {task_runner: dask, address: 'tcp://10.0.0.5:8786', workers: 2}\n"
    )
    with pytest.raises(ParamsError, match="orchestration.workers: sizes the local cluster"):
        load_params(path)


def test_per_game_overrides_apply_to_one_game(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("game_overrides: {avalon: {grpo: {learning_rate: 0.5}}}\n")
    p = load_params(path)
    assert p.for_game("grpo", "avalon").learning_rate == 0.5
    assert p.for_game("grpo", "onuw").learning_rate == p.grpo.learning_rate


CLAUDE = "{backend: anthropic, model: claude-3-5-haiku-latest}"
GPT_URL = "https://api.openai.com/v1"
GPT = f"{{backend: openai, model: gpt-4o, base_url: '{GPT_URL}'}}"
EXACT = "{exact: follower}"


@pytest.mark.parametrize(
    "text, words",
    [
        (
            f"models: {{measurer: {CLAUDE}}}\n",
            "models.measurer: the Measurer scores responses by their log-probabilities, but "
            "the anthropic backend, model claude-3-5-haiku-latest gives none; use a local "
            "model or a vLLM server (backend: openai)",
        ),
        (f"models: {{measurer: {GPT}}}\n", "models.measurer: the Measurer scores"),
        (
            f"models: {{player: {CLAUDE}}}\nselfplay: {{choice: score}}\n",
            "models.player: selfplay.choice is 'score' (werewolf), but the anthropic backend, "
            "model claude-3-5-haiku-latest gives no log-probabilities; set choice: auto or "
            "generate, or use a model that can score",
        ),
        (
            f"models: {{player: [{{backend: local}}, {GPT}]}}\nevaluate: {{choice: score}}\n",
            "models.player[1]: evaluate.choice is 'score' (werewolf)",
        ),
        (
            f"models: {{player: {CLAUDE}}}\n"
            "game_overrides: {onuw: {evaluate: {choice: score}}}\n",
            "evaluate.choice is 'score' (onuw)",
        ),
        (
            f"models: {{refiner: {CLAUDE}}}\n",
            "models.refiner: GRPO trains a LoRA on the Refiner's base model, which then samples "
            "from the local backend or a vLLM server serving its adapters (backend: openai), "
            "not the anthropic backend, model claude-3-5-haiku-latest",
        ),
        (f"models: {{refiner: {GPT}}}\n", f"not the openai backend, model gpt-4o at {GPT_URL}"),
        (
            "models: {refiner: {backend: openai, model: qwen}}\n"
            "game_overrides: {onuw: {evaluate: {refiner_dtype: int8}}}\n",
            "evaluate.refiner_dtype (onuw): int8 is the local Refiner's; a Refiner on a server "
            "plays in the server's dtype (vllm serve --dtype): set auto",
        ),
        (
            "models: {refiner: {backend: openai, model: qwen, adapter: models/refiner/onuw}}\n",
            "models.refiner: adapter: on the openai backend, the name the server serves a LoRA "
            "adapter under (vllm serve --lora-modules NAME=FOLDER), not a folder",
        ),
        (
            "models: {player: {backend: anthropic, model: claude, scores: true}}\n",
            "scores: the anthropic backend returns no log-probabilities",
        ),
        ("models: {player: []}\n", "an empty list of models"),
        ("selfplay: {agents: 'scripted,random'}\n", "werewolf: agents: 2 kinds listed"),
        ("selfplay: {agents: robot}\n", "werewolf: unknown agent 'robot'"),
        ("selfplay: {agents: 'scripted,robot'}\n", "werewolf: unknown agent 'robot'"),
        ("evaluate: {conditions: [refiner+robot]}\n", "unknown agent 'robot'"),
        (
            "evaluate: {conditions: [recon, llm_ins, refiner+llm_ins]}\n",
            "werewolf: agent 'llm_ins' plays onuw only, not werewolf",
        ),
        ("selfplay: {agents: belief}\n", "werewolf: agent 'belief' plays onuw only"),
        ("selfplay: {choice: guess}\n", "selfplay.choice"),
        ("evaluate: {max_choice_attempts: 0}\n", "evaluate.max_choice_attempts"),
        ("selfplay: {max_speech_attempts: 0}\n", "selfplay.max_speech_attempts"),
        ("grpo: {ablations: [full]}\n", "'full' is score.terms, the game's own Refiner's"),
        ("grpo: {ablations: [pos_only, pos_only]}\n", "each reward's terms once"),
        ("grpo: {views: [speaker_only, speaker_only]}\n", "each view once"),
        ("evaluate: {best_of: [1, 0]}\n", "evaluate.best_of"),
        (
            "models: {unseen_follower: {backend: anthropic, model: claude}}\n",
            "models.unseen_follower: it rescored held-out candidates by log-probabilities",
        ),
        # the joint Refiner (grpo.joint) and the other view's (label.both_views)
        ("grpo: {joint: [werewolf]}\n", "grpo: joint ['werewolf']: a joint Refiner trains on two"),
        ("grpo: {joint: [onuw, onuw]}\n", "joint ['onuw', 'onuw']: each game once"),
        ("grpo: {joint: [werewolf, chess]}\n", "grpo.joint.1: unknown game 'chess'"),
        ("games: [werewolf, onuw]\n" + JOINT, "grpo.joint: avalon is not in games"),
        (
            "game_overrides: {avalon: {grpo: {joint: [werewolf, avalon]}}}\n",
            "game_overrides.avalon.grpo.joint: the joint Refiner is one for all games",
        ),
        (
            JOINT + "game_overrides: {onuw: {sample: {max_new_tokens: 64}}}\n",
            "grpo.joint: game_overrides.onuw changes the Refiner's prompt",
        ),
        (
            JOINT + "game_overrides: {avalon: {score: {max_penalty: 2.0}}}\n",
            "grpo.joint: game_overrides.avalon changes the Refiner's prompt, completion limit or",
        ),
        (
            "grpo: {views: [speaker_only]}\n",
            "grpo.views (werewolf): 'speaker_only' trains on the other view's intents; "
            "set label.both_views: true",
        ),
        (
            "label: {both_views: true}\ngrpo: {views: [full_information]}\n",
            "'full_information' is label.full_information's view",
        ),
        ("grpo: {views: [hidden_view]}\n", "grpo.views.0"),
        ("grpo: {ablations: [speaker_only]}\n", "grpo.ablations.0"),
        (
            "evaluate: {conditions: [direct, refiner-joint+direct]}\n",
            "refiner-joint+direct plays the joint Refiner; set grpo.joint",
        ),
        (
            "evaluate: {conditions: [direct, refiner-pos_only+direct]}\n",
            "no Refiner named 'pos_only' is trained",
        ),
        # the exact follower as the Measurer (persuasion.exact_follower)
        (
            f"models: {{measurer: {EXACT}}}\nlabel: {{scheme: scripted}}\n",
            "models.measurer: the exact follower plays werewolf, avalon, onuw, not sotopia",
        ),
        (
            f"games: [werewolf]\nmodels: {{measurer: {EXACT}}}\nlabel: {{scheme: per_response}}\n",
            "label.scheme is per_response (werewolf); set label.scheme: scripted",
        ),
        (
            f"games: [onuw]\nmodels: {{measurer: {EXACT}}}\nlabel: {{scheme: scripted}}\n"
            "evaluate: {behaviour: {responses: 2, followers: [measurer]}}\n",
            "the exact follower scores responses but writes none",
        ),
        ("models: {measurer: {exact: follower, temperature: 2}}\n", "temperature"),
        ("games: [sotopia]\nselfplay: {agents: scripted_sampled}\n", "not sotopia"),
        # a grammar warm start needs the scripted players' sentences, in a format they fit
        (
            "games: [werewolf, sotopia]\nwarm_start: {source: grammar}\n",
            "warm_start.source (sotopia): the speaker's grammar is the scripted players' "
            "sentences, in werewolf, avalon, onuw only",
        ),
        (
            "games: [onuw]\nwarm_start: {source: grammar}\nsample: {output_format: analysis}\n",
            "grammar targets are written as addition or speech, not sample.output_format analysis",
        ),
        (
            "games: [werewolf]\nwarm_start: {source: grammar}\ngrpo: {ablations: [pos_only]}\n",
            "the Refiners trained beside it (pos_only) would start from them",
        ),
        (
            "games: [werewolf, avalon]\nwarm_start: {source: grammar}\n"
            "grpo: {joint: [werewolf, avalon]}\n",
            "the Refiners trained beside it (joint) would start from them",
        ),
    ],
)
def test_impossible_pairings_are_refused_when_params_load(tmp_path, text, words):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError) as err:
        load_params(path)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_the_exact_follower_loads_as_the_measurer_of_the_games_it_models(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(
        f"games: [werewolf, avalon, onuw]\nmodels: {{measurer: {EXACT}}}\n"
        "label: {scheme: scripted}\n"
        "evaluate: {conditions: [scripted_sampled, refiner+scripted_sampled, best4+scripted_sampled], "
        "opponent: scripted_sampled}\n"
    )
    params = load_params(path)
    assert params.models.measurer.describe().startswith("the exact scripted follower")
    assert "models.measurer.exact" in {key for key, _, _ in explain()}


def test_the_persuasion_config_trains_against_the_exact_follower_among_its_listeners():
    params = load_params(ROOT / "configs/persuasion.yaml")
    assert params.games == ["werewolf", "avalon", "onuw"]
    assert params.models.measurer.exact == "follower"
    assert (params.selfplay.agents, params.evaluate.opponent) == ("scripted_sampled",) * 2
    assert "refiner+scripted_sampled" in params.evaluate.conditions
    assert params.evaluate.tournament_games >= 300
    assert params.label.full_information is False
    # GRPO goes on from a warm start on the grammar (from the base, its groups rarely differed)
    assert params.warm_start.source == "grammar"
    assert load_params(ROOT / "configs/paper.yaml").warm_start.source == "none"  # the paper's


def test_the_llm_trained_refiner_runs_the_persuasion_config_but_its_measurer():
    """configs/persuasion-llm.yaml is configs/persuasion.yaml (same instances, warm start,
    GRPO, tournament seeds) with the embedded model as the Measurer, and no best of N by it
    in tournaments."""
    exact = load_params(ROOT / "configs/persuasion.yaml")
    llm = load_params(ROOT / "configs/persuasion-llm.yaml")
    assert llm.models.measurer.model == "models/base"
    assert llm.evaluate.conditions == ["scripted_sampled", "refiner+scripted_sampled"]
    assert llm.tracking.experiment != exact.tracking.experiment
    for section in ("selfplay", "select", "label", "sample", "score", "warm_start", "grpo"):
        assert getattr(llm, section) == getattr(exact, section), section
    assert llm.game_overrides == exact.game_overrides
    assert llm.evaluate.tournament_games == exact.evaluate.tournament_games


def test_a_params_file_extends_another_section_by_section(tmp_path):
    (tmp_path / "base.yaml").write_text(
        "games: [werewolf]\nsample: {n: 3, temperature: 0.5}\n"
        "models: {measurer: {exact: follower}}\nlabel: {scheme: scripted}\n"
    )
    (tmp_path / "sub").mkdir()
    child = tmp_path / "sub" / "child.yaml"
    child.write_text(
        "extends: ../base.yaml\nsample: {n: 5}\n"
        "models: {measurer: {backend: local, model: models/base}}\n"
    )
    params = load_params(child)
    assert (params.sample.n, params.sample.temperature) == (5, 0.5)  # a key replaced, one kept
    assert params.models.measurer.model == "models/base"  # replaced whole, not mixed
    assert params.games == ["werewolf"]

    from flows.workspace import resolved_text

    text = resolved_text(child)
    assert text.startswith("#") and "extends" not in text.splitlines()[1]
    resolved = tmp_path / "resolved.yaml"
    resolved.write_text(text)
    assert load_params(resolved) == params  # DVC's params.yaml holds every value
    plain = tmp_path / "base.yaml"
    assert resolved_text(plain) == plain.read_text()  # comments and all, as written


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("extends: missing.yaml\n", "missing.yaml: no such params file"),
        ("extends: [a.yaml]\n", "extends names a params file"),
        ("extends: loop.yaml\n", "extends it back (a cycle)"),
    ],
)
def test_a_bad_extends_is_one_line(tmp_path, text, words):
    (tmp_path / "loop.yaml").write_text("extends: params.yaml\n")
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError) as err:
        load_params(path)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_the_joint_and_the_other_views_refiners_load_where_they_can_work(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(
        JOINT
        + "label: {both_views: true, full_information: false}\n"
        + "game_overrides: {werewolf: {grpo: {views: [full_information], ablations: [pos_only]}}}\n"
        + "evaluate: {conditions: [direct, refiner-joint+direct, refiner+direct]}\n"
    )
    params = load_params(path)
    assert params.grpo.joint == ["werewolf", "avalon", "onuw"]
    werewolf = params.for_game("grpo", "werewolf")
    assert werewolf.extra_refiners() == ["pos_only", "full_information"]
    limits = load_params(ROOT / "configs/limits.yaml")
    assert len(limits.grpo.joint) >= 2 and set(limits.games) - set(limits.grpo.joint)
    assert all(limits.for_game("label", g).both_views for g in limits.games)
    explained = {key for key, _, description in explain() if description}
    assert {"grpo.joint", "label.both_views"} <= explained


def test_the_onuw_baselines_load_where_they_play(tmp_path):
    path = tmp_path / "params.yaml"
    conditions = "[recon, refiner+recon, lasi, refiner+lasi]"
    onuw = "[belief, refiner+belief, llm_ins, refiner+llm_ins, recon]"
    path.write_text(
        f"evaluate: {{conditions: {conditions}}}\n"
        f"game_overrides: {{onuw: {{evaluate: {{conditions: {onuw}}}, selfplay: {{agents: llm_ins}}}}}}\n"
    )
    params = load_params(path)
    assert params.for_game("evaluate", "onuw").conditions[-1] == "recon"
    assert params.for_game("selfplay", "onuw").agent_options()["reasoning_tokens"] == 48


def test_which_models_can_score():
    from stackelberg.llm import LLMConfig

    assert LLMConfig().can_score()
    assert LLMConfig(backend="openai", model="q", base_url="http://gpu:8000/v1").can_score()
    assert not LLMConfig(backend="openai", model="gpt-4o", base_url=GPT_URL).can_score()
    gemini = "https://generativelanguage.googleapis.com/v1beta/openai/"
    assert not LLMConfig(backend="openai", model="gemini-2.5-flash", base_url=gemini).can_score()
    assert not LLMConfig(backend="anthropic", model="claude").can_score()
    assert not LLMConfig(backend="openai", model="q", scores=False).can_score()
    assert LLMConfig(backend="openai", model="gpt-4o", base_url=GPT_URL, scores=True).can_score()


def test_each_game_draws_its_model_from_its_seed_by_weight(tmp_path):
    from stackelberg.params import draw_model, entry_models

    path = tmp_path / "params.yaml"
    path.write_text(
        "models:\n  player:\n"
        "    - {backend: local, model: a, weight: 3}\n"
        "    - {backend: local, model: b, weight: 1}\n"
    )
    entry = load_params(path).models.player
    assert [m.model for m in entry_models(entry)] == ["a", "b"]
    drawn = [draw_model(entry, seed).model for seed in range(400)]
    assert drawn == [draw_model(entry, seed).model for seed in range(400)]  # by seed
    assert 0.65 < drawn.count("a") / 400 < 0.85  # 3:1 (a fixed draw: seeds 0..399)
    single = load_params(ROOT / "params.yaml").models.player
    assert draw_model(single, 7) == single


def test_a_bad_params_file_stops_the_pipeline_with_one_line_before_prefect(tmp_path):
    import os
    import subprocess
    import sys

    path = tmp_path / "params.yaml"
    path.write_text(f"models: {{measurer: {CLAUDE}}}\n")
    env = {**os.environ, "STACKELBERG_PARAMS": str(path), "PREFECT_API_URL": "http://0.0.0.0:9/api"}
    for command in (["flows.pipeline"], ["flows.run", "score", "werewolf"]):
        proc = subprocess.run(
            [sys.executable, "-m", *command], cwd=ROOT, env=env, capture_output=True, text=True
        )
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert len(lines) == 1 and "models.measurer: the Measurer scores" in lines[0]
        assert "Traceback" not in proc.stderr


def test_every_params_key_is_explained(capsys):
    """`stackelberg params --explain` lists every key of every section with a description."""
    from stackelberg.cli import main
    from stackelberg.params import Params, explain

    rows = {key: (default, text) for key, default, text in explain()}
    assert not [key for key, (_, text) in rows.items() if not text]
    for section, field in Params.model_fields.items():
        assert section in rows
        sub = getattr(field.annotation, "model_fields", {})
        assert all(f"{section}.{key}" in rows for key in sub if section != "models")
    assert rows["grpo.loss_type"][0] == '"grpo"' and rows["label.k"][0] == "3"
    assert "models.<role>.base_url" in rows and "models.<role>.weight" in rows
    assert main(["params", "--explain"]) == 0
    shown = capsys.readouterr().out
    assert "sample.output_format" in shown and "orchestration.task_retries" in shown


def test_params_check_prints_ok_or_one_line(tmp_path, capsys):
    from stackelberg.cli import main

    assert main(["params", str(ROOT / "configs/paper.yaml")]) == 0
    assert "paper.yaml: ok (4 games" in capsys.readouterr().out
    bad = tmp_path / "params.yaml"
    bad.write_text("label: {k: 0}\n")
    assert main(["params", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "label.k" in err and "\n" not in err
