"""The pipeline ends with where its time went: each stage's wall time, slowest first, and
the memory peak."""

from __future__ import annotations

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


def test_stages_run_game_by_game_in_dvc_yaml_order_and_after_what_they_need():
    """One game's chain runs together (score right before grpo: the Measurer's contexts of
    the train instances are still stored when GRPO rewards them); every stage after its
    dependencies."""
    import networkx as nx
    from dvc.repo import Repo

    from flows.context import current_params

    order = stage_order()
    games = current_params().games
    first = games[0]
    # (its evaluate waits for every game's policy stage: rl_ins, strategist and lspo play)
    chain = [s for s in order if s.endswith(f"@{first}") and not s.startswith("evaluate@")]
    assert order[: len(chain) + 1] == ["base_model", *chain]
    assert chain.index(f"score@{first}") + 1 == chain.index(f"grpo@{first}")
    assert order[-1] == "report"
    with Repo(".") as repo:
        graph = repo.index.graph
        position = {name: i for i, name in enumerate(order)}
        for stage in graph.nodes:
            for needed in nx.descendants(graph, stage):
                assert position[needed.addressing] < position[stage.addressing]
