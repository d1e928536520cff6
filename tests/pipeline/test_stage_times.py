"""The pipeline ends with where its time went: each stage's wall time, slowest first, and
the memory peak."""

from __future__ import annotations

import pytest

from flows.pipeline import stage_order, stage_time_table


def test_stage_times_are_listed_slowest_first_with_their_total():
    table = stage_time_table(
        [("label@onuw", 24.3, 1.25), ("grpo@onuw", 158.1, 3.5), ("report", 1.5, 3.5)]
    )
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["stage", "wall", "s"]
    assert [line.split() for line in lines[2:]] == [
        ["grpo@onuw", "158.1", "3.50"],
        ["label@onuw", "24.3", "1.25"],
        ["report", "1.5", "3.50"],
        ["total", "183.9", "3.50"],
    ]


def test_stages_run_in_dvc_yaml_order_with_sample_score_grpo_game_by_game():
    """Each game's sample, score and grpo run back to back (the Measurer's contexts of the
    train instances are still stored when GRPO rewards them), after every game's label (the
    labeler loads once); every stage after its dependencies."""
    import networkx as nx
    from dvc.repo import Repo

    from flows.context import current_params
    from flows.pipeline import GAME_CHAIN

    order = stage_order()
    games = current_params().games
    assert order[0] == "base_model" and order[-1] == "report"
    for game in games:
        at = order.index(f"{GAME_CHAIN[0]}@{game}")
        assert order[at : at + len(GAME_CHAIN)] == [f"{s}@{game}" for s in GAME_CHAIN]
        assert all(order.index(f"label@{g}") < at for g in games)
    with Repo(".") as repo:
        graph = repo.index.graph
        position = {name: i for i, name in enumerate(order)}
        for stage in graph.nodes:
            for needed in nx.descendants(graph, stage):
                assert position[needed.addressing] < position[stage.addressing]


@pytest.mark.slow
def test_stage_subflows_send_no_heartbeats_of_their_own():
    """A heartbeat thread costs its flow run up to a second at the end; the stages run
    inside the pipeline's flow, whose heartbeats already cover them."""
    from prefect import flow
    from prefect.settings import get_current_settings

    from flows.stage import no_heartbeats

    @flow
    def stage_like() -> int | None:
        return get_current_settings().flows.heartbeat_frequency

    @flow
    def pipeline_like() -> tuple[int | None, int | None]:
        with no_heartbeats():
            inside = stage_like()
        return inside, get_current_settings().flows.heartbeat_frequency

    inside, outside = pipeline_like()
    assert inside is None
    assert outside is not None  # the pipeline's own flow, and everything after it, keep them
