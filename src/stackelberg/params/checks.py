"""The load-time cross-checks: one-line refusals of what the sections allow alone, not together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackelberg.llm.config import LLMConfig
from stackelberg.params.models import ModelEntry, entry_models
from stackelberg.params.schema import Params, ParamsError
from stackelberg.persuasion.measurer import member_names

#: params keys that were renamed (docs/records.md), as (section, key): what to write instead
RENAMED = {
    ("score", "variant"): "score.terms",
    ("grpo", "variants"): "grpo.ablations (reward terms) or grpo.views (information views)",
    ("grpo", "max_completion_length"): "sample.max_new_tokens (the Refiner's one token limit)",
}


def check_renamed(raw: Mapping[str, Any]) -> None:
    """Refuse a renamed key (``RENAMED``) of a section or of a game's overrides, in one line
    naming the new one, before the sections are read."""
    overrides = raw.get("game_overrides")
    places = [("", raw)] + [
        (f"game_overrides.{game}.", sections)
        for game, sections in (overrides.items() if isinstance(overrides, Mapping) else ())
        if isinstance(sections, Mapping)
    ]
    for prefix, sections in places:
        for (section, key), new in RENAMED.items():
            body = sections.get(section)
            if isinstance(body, Mapping) and key in body:
                raise ParamsError(f"{prefix}{section}.{key} was renamed: use {new}")


def _where(role: str, entry: ModelEntry, i: int) -> str:
    return f"models.{role}[{i}]" if isinstance(entry, list) else f"models.{role}"


def unscoring(role: str, entry: ModelEntry) -> tuple[str, LLMConfig] | None:
    """The first model of ``models.<role>`` that gives no log-probabilities, with its place
    (``models.player[1]``); None when every one can score."""
    for i, config in enumerate(entry_models(entry)):
        if not config.can_score():
            return _where(role, entry, i), config
    return None


def check_pairings(params: Params) -> None:
    """Refuse, before anything starts, what cannot work: a role on a backend that cannot do
    what the role needs, and agents that do not exist or do not fit the game."""
    from stackelberg.agents import LLM_AGENT_KINDS, llm_agent_class, seat_agents
    from stackelberg.evaluation.routes import TRAINED_BASELINES
    from stackelberg.evaluation.tournament import build_agent, parse_condition
    from stackelberg.games import ConfigError, make_game
    from stackelberg.persuasion.best_of import MEASURER_ROUTE, REFINER_BASE_ROUTE
    from stackelberg.persuasion.intents import SCRIPTED

    models = params.models
    if found := unscoring("measurer", models.measurer):
        raise ParamsError(
            f"{found[0]}: the Measurer scores responses by their log-probabilities, but the "
            f"{found[1].describe()} gives none; use a local model or a vLLM server "
            "(backend: openai)"
        )
    check_followers(params)
    check_warm_start(params)
    unseen = models.unseen_follower
    if unseen is not None and not unseen.can_score():
        raise ParamsError(
            f"models.unseen_follower: it rescored held-out candidates by log-probabilities, "
            f"but the {unseen.describe()} gives none; use a local model or a vLLM server"
        )
    check_refiner_backend(params)
    for game in params.games:
        terms = params.for_game("score", game).terms
        if terms in params.for_game("grpo", game).ablations:
            raise ParamsError(
                f"grpo.ablations ({game}): {terms!r} is score.terms, the game's own Refiner's; "
                "list only other terms"
            )
        for stage in ("selfplay", "evaluate"):
            section = params.for_game(stage, game)
            if section.choice != "score":
                continue
            if found := unscoring("player", models.player):
                raise ParamsError(
                    f"{found[0]}: {stage}.choice is 'score' ({game}), but the "
                    f"{found[1].describe()} gives no log-probabilities; set choice: auto or "
                    "generate, or use a model that can score"
                )
        selfplay, evaluate = params.for_game("selfplay", game), params.for_game("evaluate", game)
        try:
            n = make_game(game, selfplay.options).reset(selfplay.seed).n_players
            for kind in seat_agents(selfplay.agents, n):
                build_agent(kind, game, {"default": _NoModel()} if kind in LLM_AGENT_KINDS else {})
                if kind in LLM_AGENT_KINDS and needs_later_model(llm_agent_class(kind)):
                    raise ParamsError(
                        f"{game}: selfplay.agents: {kind} plays with a trained model of a later "
                        "stage (rl_ins: the tactics stage's policy); name it in "
                        "evaluate.conditions instead"
                    )
            named = (parse_condition(c).refiner_route for c in evaluate.conditions)
            routes = ("default", "refiner", REFINER_BASE_ROUTE, MEASURER_ROUTE, *named)
            for condition in (*evaluate.conditions, evaluate.opponent):
                build_agent(condition, game, dict.fromkeys(routes, _NoModel()))
            make_game(game, evaluate.options)
        except ConfigError as err:
            raise ParamsError(f"{game}: {err}") from None
        scheme = params.for_game("label", game).scheme
        searched = [c for c in evaluate.conditions if parse_condition(c).best_of]
        if searched and scheme != SCRIPTED:
            raise ParamsError(
                f"evaluate.conditions ({game}): {searched[0]} labels speeches at play time with "
                f"label.scheme: {SCRIPTED}, not {scheme}; set label.scheme: {SCRIPTED} or drop it"
            )
    for baseline in TRAINED_BASELINES.values():
        try:
            make_game(baseline.game, getattr(params, baseline.name).options)
        except ConfigError as err:
            raise ParamsError(f"{baseline.name}.options: {err}") from None
    check_refiners_beside(params)


def check_refiner_backend(params: Params) -> None:
    """Refuse a Refiner that GRPO cannot train or its trained adapters cannot run on: GRPO
    trains a LoRA on ``models.refiner.model`` loaded locally, and the Refiner samples from
    the local backend or from a vLLM server (backend: openai) serving that base model and
    the adapters as LoRA modules, in the server's dtype."""
    refiner = params.models.refiner
    if refiner.backend == "local":
        return
    if not (refiner.backend == "openai" and refiner.can_score()):
        raise ParamsError(
            f"models.refiner: GRPO trains a LoRA on the Refiner's base model, which then "
            f"samples from the local backend or a vLLM server serving its adapters "
            f"(backend: openai), not the {refiner.describe()}"
        )
    for game in params.games:
        if (dtype := params.for_game("evaluate", game).refiner_dtype) != "auto":
            raise ParamsError(
                f"evaluate.refiner_dtype ({game}): {dtype} is the local Refiner's; a Refiner "
                "on a server plays in the server's dtype (vllm serve --dtype): set auto"
            )


def check_refiners_beside(params: Params) -> None:
    """Refuse Refiners trained beside the games' own that cannot be trained or found: a
    joint Refiner (``grpo.joint``) on a game the run does not have, set per game, or on a
    game whose overrides change the Refiner's prompt or reward (it trains with the shared
    sections, so that one game's overrides do not retrain it); a Refiner on the other view's
    intents without them (``label.both_views``) or on the view the game's own has; a
    ``refiner-NAME+X`` condition whose Refiner no stage trains."""
    from stackelberg.evaluation.tournament import parse_condition
    from stackelberg.training.grpo_outputs import JOINT_REFINER

    joint = params.grpo.joint
    if missing := [g for g in joint if g not in params.games]:
        raise ParamsError(
            f"grpo.joint: {missing[0]} is not in games {params.games}; a joint Refiner trains "
            "on games the run has (add it to games or drop it from grpo.joint)"
        )
    for game, sections in params.game_overrides.items():
        if "joint" in (sections.get("grpo") or {}):
            raise ParamsError(
                f"game_overrides.{game}.grpo.joint: the joint Refiner is one for all games; "
                "set grpo.joint"
            )
    shared = params.refiner_profile(None)
    for game in joint:
        own = params.refiner_profile(game)
        if (own.style, own.max_prompt_tokens) != (shared.style, shared.max_prompt_tokens) or (
            params.for_game("score", game) != params.score
        ):
            raise ParamsError(
                f"grpo.joint: game_overrides.{game} changes the Refiner's prompt, completion "
                "limit or reward (sample's rules, output_format, speech_words, max_new_tokens, "
                "max_prompt_tokens; score); the joint Refiner "
                f"trains with the shared sections: set the value there or leave {game} out"
            )
    for game in params.games:
        label = params.for_game("label", game)
        grpo = params.for_game("grpo", game)
        for view in grpo.views:
            if view == label.view:
                raise ParamsError(
                    f"grpo.views ({game}): {view!r} is label.full_information's view, the "
                    "game's own Refiner's; list the other view"
                )
            if not label.both_views:
                raise ParamsError(
                    f"grpo.views ({game}): {view!r} trains on the other view's intents; "
                    "set label.both_views: true"
                )
        named = [*grpo.ablations, *grpo.views]
        for condition in params.for_game("evaluate", game).conditions:
            name = parse_condition(condition).refiner
            if name == JOINT_REFINER and not joint:
                raise ParamsError(
                    f"evaluate.conditions ({game}): {condition} plays the joint Refiner; set "
                    "grpo.joint (the games it trains on)"
                )
            if name and name != JOINT_REFINER and name not in named:
                raise ParamsError(
                    f"evaluate.conditions ({game}): {condition}: no Refiner named {name!r} is "
                    f"trained; name {JOINT_REFINER} (grpo.joint) or one of grpo.ablations and "
                    f"grpo.views {named}"
                )


def check_exact_measurer(params: Params) -> None:
    """Refuse an exact-follower Measurer where it is none: a game whose scripted players
    have no opinion, labels that are not the scripted sentences it says, the followers'
    responses it would have to write."""
    from stackelberg.agents.scripted import OPINION_GAMES
    from stackelberg.persuasion.exact_follower import ExactFollowerConfig
    from stackelberg.persuasion.intents import SCRIPTED

    if not isinstance(params.models.measurer, ExactFollowerConfig):
        return
    for game in params.games:
        if game not in OPINION_GAMES:
            raise ParamsError(
                f"models.measurer: the exact follower plays {', '.join(OPINION_GAMES)}, not "
                f"{game}; drop {game} from games or use a model"
            )
        if (scheme := params.for_game("label", game).scheme) != SCRIPTED:
            raise ParamsError(
                f"models.measurer: the exact follower scores the scripted labeler's sentences, "
                f"but label.scheme is {scheme} ({game}); set label.scheme: scripted"
            )
        behaviour = params.for_game("evaluate", game).behaviour
        if behaviour.responses and "measurer" in behaviour.followers:
            raise ParamsError(
                f"evaluate.behaviour.followers ({game}): the exact follower scores responses "
                "but writes none; list unseen only, or set evaluate.behaviour.responses: 0"
            )


def check_warm_start(params: Params) -> None:
    """Refuse a grammar warm start where there is no grammar: a game whose scripted players
    say no sentences, an output format a grammar sentence cannot be written in."""
    from stackelberg.agents.scripted import OPINION_GAMES
    from stackelberg.persuasion.grammar_targets import GRAMMAR_FORMATS
    from stackelberg.training.grpo_outputs import JOINT_REFINER
    from stackelberg.training.warm_start import GRAMMAR

    for game in params.games:
        if params.for_game("warm_start", game).source != GRAMMAR:
            continue
        if game not in OPINION_GAMES:
            raise ParamsError(
                f"warm_start.source ({game}): the speaker's grammar is the scripted players' "
                f"sentences, in {', '.join(OPINION_GAMES)} only; set source: none for {game}"
            )
        if (fmt := params.for_game("sample", game).output_format) not in GRAMMAR_FORMATS:
            raise ParamsError(
                f"warm_start.source ({game}): grammar targets are written as "
                f"{' or '.join(GRAMMAR_FORMATS)}, not sample.output_format {fmt}"
            )
        grpo = params.for_game("grpo", game)
        joint = [JOINT_REFINER] if game in params.grpo.joint else []
        if beside := [*grpo.extra_refiners(), *joint]:
            # their own objectives would need their own targets; from this one's, no
            # comparison with the game's Refiner would be like for like
            raise ParamsError(
                f"warm_start.source ({game}): the warm start's targets are the game's Refiner's; "
                f"the Refiners trained beside it ({', '.join(beside)}) would start from them. "
                "Drop grpo.ablations, views, member_refiners and joint, or set source: none"
            )
        if grpo.launch == "deepspeed" and grpo.zero_stage == 3:
            raise ParamsError(
                f"warm_start.source ({game}): a warm-started adapter loads in float32 beside a "
                "bfloat16 base, mixed dtypes ZeRO-3 cannot shard; use grpo.zero_stage 2"
            )


def check_followers(params: Params) -> None:
    """Refuse what the ensemble-vs-single comparison and the behaviour check cannot do: a
    Refiner against a member the Measurer does not have, a response from an unseen follower
    that is not set."""
    check_exact_measurer(params)
    measurer = params.models.measurer
    members = member_names(measurer) if isinstance(measurer, list) else []
    for game in params.games:
        for name in params.for_game("grpo", game).member_refiners:
            if name not in members:
                have = f"its members: {', '.join(members)}" if members else "it is one model"
                raise ParamsError(
                    f"grpo.member_refiners ({game}): {name!r} is no member of models.measurer "
                    f"({have}); name a member of an ensemble Measurer (a list)"
                )
        behaviour = params.for_game("evaluate", game).behaviour
        if (
            behaviour.responses
            and "unseen" in behaviour.followers
            and not params.models.unseen_follower
        ):
            raise ParamsError(
                f"evaluate.behaviour.followers ({game}): the unseen follower responds, but "
                "models.unseen_follower is null; set it, or list measurer only"
            )


def needs_later_model(cls: type) -> bool:
    """Whether a kind plays with a model of a later stage it cannot do without (rl_ins's
    policy; strategist's value and lspo's policy are optional: without them the search
    values only finished games, the speech acts are drawn uniformly, so they self-play)."""
    return bool(getattr(cls, "route_args", None)) and not getattr(cls, "plays_untrained", False)


class _NoModel:
    """A stand-in backend for checking agent names without loading a model."""

    name, model, can_score, context_window = "check", "check", True, 4096
