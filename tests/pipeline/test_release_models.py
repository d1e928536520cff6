"""Loaded models are dropped when no longer needed: after a stage, those no role names;
inside a stage, all but the roles still to be used (the evaluate stage's tournaments keep
the players and drop the held-out reward's Measurer and Refiners)."""

from __future__ import annotations

import pytest

from flows import context
from stackelberg.params import Params


class Loaded:
    def __init__(self) -> None:
        self.cleared = False
        self.prefix_store = object()  # backends of the same weights share one

    def clear_prefix_cache(self) -> None:
        self.cleared = True


@pytest.fixture
def params():
    return Params(
        models={
            "labeler": {"backend": "local", "model": "models/base", "dtype": "int8"},
            "refiner": {"backend": "local", "model": "models/base"},
            "measurer": {"backend": "local", "model": "models/base", "context_window": 1024},
            "player": {"backend": "local", "model": "models/base", "dtype": "int8"},
        }
    )


@pytest.fixture
def loaded(monkeypatch, params):
    models = params.models
    trained = models.refiner.model_copy(update={"adapter": "models/refiner/werewolf"})
    configs = {
        "refiner": models.refiner,
        "measurer": models.measurer,
        "player": models.player,  # the labeler's config too (the same model and dtype)
        "trained": trained,
    }
    backends = {name: Loaded() for name in configs}
    table = {c.model_dump_json(): backends[name] for name, c in configs.items()}
    monkeypatch.setattr(context, "_LLMS", table)
    return backends


def kept(loaded) -> set[str]:
    return {name for name, b in loaded.items() if b in context._LLMS.values()}


def test_after_a_stage_the_models_no_role_names_go(params, loaded):
    context.release_models(params)
    assert kept(loaded) == {"refiner", "measurer", "player"}
    assert all(b.cleared for b in loaded.values())  # prefix stores emptied


def test_inside_a_stage_only_the_named_roles_stay(params, loaded, monkeypatch):
    trimmed = []
    monkeypatch.setattr(context, "return_freed_memory", lambda: trimmed.append(True))
    context.release_models(params, ("player", "labeler"))
    assert kept(loaded) == {"player"}
    assert trimmed  # the freed memory is handed back to the system


def test_a_model_kept_by_its_config(params, loaded):
    trained = params.models.refiner.model_copy(update={"adapter": "models/refiner/werewolf"})
    context.release_models(params, ("player",), also=(trained,))
    assert kept(loaded) == {"player", "trained"}


def test_a_stage_context_releases_by_role(params, loaded):
    context.StageContext("evaluate", "werewolf", params).release_models("measurer")
    assert kept(loaded) == {"measurer"}


def test_the_score_stages_measurer_contexts_stay_for_grpo(params, loaded):
    """The Measurer's store is kept (with the Refiner base's, the same weights' store) when
    a role asks for it; the other stores are emptied, the unnamed models dropped."""
    from stages import score

    loaded["refiner"].prefix_store = loaded["measurer"].prefix_store
    context.release_models(params, keep_prefixes=score.KEEP_PREFIXES)
    assert kept(loaded) == {"refiner", "measurer", "player"}
    assert not loaded["measurer"].cleared and not loaded["refiner"].cleared
    assert loaded["player"].cleared and loaded["trained"].cleared
    # inside grpo: the Measurer stays, with its contexts; the players go
    context.StageContext("grpo", "werewolf", params).release_models(
        "refiner", "measurer", keep_prefixes=("measurer",)
    )
    assert kept(loaded) == {"refiner", "measurer"} and not loaded["measurer"].cleared


def test_a_served_measurer_keeps_no_store(params, loaded):
    """A backend without a prefix store (vLLM, an API) is kept or dropped as before."""
    del loaded["measurer"].prefix_store
    context.release_models(params, keep_prefixes=("measurer",))
    assert kept(loaded) == {"refiner", "measurer", "player"}
    assert loaded["player"].cleared
