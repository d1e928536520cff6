"""What tournament tables play with, by route (``tournament.build_agent`` hands each seat the
route it names): the players' models, the trained Refiner, the trained models of later
stages that some kinds read (``route_args``: rl_ins's tactic policy, the strategist's value
model, lspo's policy), the untrained Refiner and the Measurer of a ``bestN+X`` speaker, and a
scored game's LLM evaluator. Each is loaded only when a kind
played needs it; a trained model by its ``TrainedBaseline``'s ``load``, which imports what
reads it only then (the tactic policy's needs torch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from stackelberg.agents import LLM_AGENT_KINDS, llm_agent_class
from stackelberg.evaluation.tournament import parse_condition
from stackelberg.llm import LLMConfig
from stackelberg.persuasion.best_of import MEASURER_ROUTE, REFINER_BASE_ROUTE
from stackelberg.persuasion.measurer import load_measurer
from stackelberg.training.lspo import LSPO
from stackelberg.training.strategist import STRATEGIST
from stackelberg.training.tactics import TACTICS

#: the route of a scored game's LLM evaluator (``judge.judge_tournament``), no seat's
JUDGE = "judge"
#: the trained baselines, by the route an agent class names in ``route_args``: each reads
#: the folder its stage wrote
TRAINED_BASELINES = {baseline.name: baseline for baseline in (TACTICS, STRATEGIST, LSPO)}


def trained_routes(kinds: Iterable[str], folder_of: Callable[[str], Any]) -> dict[str, Any]:
    """The trained models the agent ``kinds`` play with, by route, each read once from
    ``folder_of(route)`` (None: no folder; the kind plays untrained, as its class allows; a
    folder that holds no such model is a ConfigError, one line)."""
    routes: dict[str, Any] = {}
    for kind in dict.fromkeys(kinds):
        if kind not in LLM_AGENT_KINDS:
            continue
        for route in getattr(llm_agent_class(kind), "route_args", {}):
            folder = folder_of(route)
            if route not in routes and folder is not None:
                routes[route] = TRAINED_BASELINES[route].load(folder)
    return routes


def tournament_routes(
    played: Iterable[str],
    load: Callable[[Any], Any],
    seat_models: Iterable[str],
    refiner: Any,
    folder_of: Callable[[str], Any],
    judge: Any = None,
    untrained_refiner: Any = None,
    measurer: Any = None,
    named_refiner: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """What the tables of the conditions ``played`` (their opponent among them) play with,
    by route: the players' models (``seat_models``: each config's JSON, the route
    ``play_matrix``'s ``route_of_seed`` names) when an LLM kind plays, the ``refiner`` when a
    refined condition does (``refiner-NAME+X``: ``named_refiner(NAME)``'s config), the
    ``untrained_refiner`` and the ``measurer`` when a best-of condition does, the trained
    models the kinds read (``trained_routes``), and the ``judge`` under ``JUDGE`` when one
    is given. ``load``: a model config to its backend."""
    parsed = [parse_condition(c) for c in played]
    kinds = [c.kind for c in parsed]
    routes: dict[str, Any] = {}
    if any(kind in LLM_AGENT_KINDS for kind in kinds):  # only the models seats play with
        routes = {key: load(LLMConfig.model_validate_json(key)) for key in seat_models}
    for c in parsed:
        if not c.refined or c.refiner_route in routes:
            continue
        if c.refiner and named_refiner is None:
            raise ValueError(f"refiner-{c.refiner}+X plays with a named Refiner: none given")
        routes[c.refiner_route] = load(named_refiner(c.refiner) if c.refiner else refiner)
    if any(c.best_of for c in parsed):
        if untrained_refiner is None or measurer is None:
            raise ValueError(
                "a best-of condition plays with the untrained Refiner and the Measurer"
            )
        routes[REFINER_BASE_ROUTE] = load(untrained_refiner)
        routes[MEASURER_ROUTE] = load_measurer(measurer, load)  # an ensemble: its members
    routes |= trained_routes(kinds, folder_of)
    if judge is not None:
        routes[JUDGE] = load(judge)
    return routes


__all__ = ["JUDGE", "TRAINED_BASELINES", "tournament_routes", "trained_routes"]
