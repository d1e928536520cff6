"""The strategist's value: the chance that a player's camp wins, from what the player knows.

The features are read from a scripted Avalon player's bookkeeping (``AvalonScripted``: its
posterior and suspicion of each player, what it saw) and the public state, so they mean the
same whoever plays the seat, in self-play and at the leaves of a search. The size does not
depend on the number of players: players are summarised, never listed. The model is one
logistic regression per camp (the same feature helps one camp and hurts the other), fitted
by Newton's method with a small ridge, saved as JSON with its feature names (a load checks
them, so a stale file is refused).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from stackelberg.agents.scripted.avalon import AvalonScripted, fails_likelihood
from stackelberg.games.avalon import EVIL, GOOD, WINS_NEEDED
from stackelberg.games.base import ConfigError
from stackelberg.io import atomic_writer

CAMPS = (GOOD, EVIL)
VALUE_FILE = "value.json"

#: the name of each feature, in vector order
FEATURES: tuple[str, ...] = (
    "bias",
    "quests:mine",  # quests my camp has taken, of three
    "quests:theirs",
    "rejections",  # teams rejected in a row in this quest, of four
    "quest",  # the quest under way, of five
    "leader:mine",  # how likely the leader is of my camp, as I see it
    "team:clean",  # how likely the team of me and those I trust most is free of evil
    "evil:exposed",  # how suspect the evil players look to the table (quest results only)
    "me:exposed",  # how suspect I look to the table
    "certainty",  # how sure I am of who is evil (the mean of my top evil probabilities)
    "merlin:guess",  # evil: how sure its Merlin guess is (softmax of its Merlin scores)
    "role:merlin",
    "role:percival",
    "role:assassin",
)


@lru_cache(maxsize=64)
def evil_sets(n_players: int, n_evil: int) -> tuple[frozenset[int], ...]:
    return tuple(frozenset(h) for h in itertools.combinations(range(n_players), n_evil))


@lru_cache(maxsize=4096)
def public_p_evil(
    n_players: int, n_evil: int, quests: tuple[tuple[tuple[int, ...], int], ...]
) -> tuple[float, ...]:
    """Each player's probability of being evil given the quest results alone (team, fails),
    every evil set equally likely before them: how suspect the table finds each player."""
    weights = []
    for hs in evil_sets(n_players, n_evil):
        w = 1.0
        for team, fails in quests:
            w *= fails_likelihood(len(hs.intersection(team)), fails)
        weights.append(w)
    total = sum(weights)
    if not total:  # the results contradict the model (e.g. double fails): no information
        return (n_evil / n_players,) * n_players
    out = [0.0] * n_players
    for hs, w in zip(evil_sets(n_players, n_evil), weights, strict=True):
        for p in hs:
            out[p] += w / total
    return tuple(out)


def quest_history(view: AvalonScripted) -> tuple[tuple[tuple[int, ...], int], ...]:
    """(team, fails) of every quest so far (public events)."""
    return tuple(
        (tuple(e.data["team"]), e.data["fails"]) for e in view.game.events if e.type == "quest"
    )


def my_p_evil(view: AvalonScripted) -> list[float]:
    """How likely each player is evil as the seat sees it: an evil seat (and Merlin) knows
    the evil players it was shown; another good seat has its posterior."""
    if view.evil or view.my_role == "merlin":
        return [float(p in view.known_evil) for p in range(view.n)]
    return [0.0 if p == view.player else x for p, x in enumerate(view.p_evil)]


def features(view: AvalonScripted) -> list[float]:
    """The vector of ``FEATURES`` for the seat of ``view`` (it must have observed the events)."""
    game, me, n = view.game, view.player, view.n
    good = not view.evil
    mine, theirs = (view.successes, view.failures) if good else (view.failures, view.successes)
    p_evil = my_p_evil(view)
    public = public_p_evil(n, view.n_evil, quest_history(view))
    size = view.sizes[min(game.quest, len(view.sizes)) - 1]
    trusted = sorted((p for p in range(n) if p != me), key=lambda p: (p_evil[p], p))
    team = [me, *trusted[: size - 1]]
    clean = math.prod(1.0 - p_evil[p] for p in team)
    leader_evil = p_evil[game.leader]
    exposed = sum(p_evil[p] * public[p] for p in range(n)) / view.n_evil
    top = sorted((p_evil[p] for p in range(n) if p != me), reverse=True)[: view.n_evil]
    guess = 0.0
    if view.evil:
        scores = [view.merlinish[p] for p in range(n) if p not in view.known_evil]
        if scores:
            peak = max(scores)
            guess = 1.0 / sum(math.exp(s - peak) for s in scores)
    vector = [
        1.0,
        mine / WINS_NEEDED,
        theirs / WINS_NEEDED,
        (game.attempt - 1) / 4.0,
        (game.quest - 1) / 4.0,
        (1.0 - leader_evil) if good else leader_evil,
        clean,
        exposed,
        public[me],
        sum(top) / max(len(top), 1),
        guess,
        float(view.my_role == "merlin"),
        float(view.my_role == "percival"),
        float(view.my_role == "assassin"),
    ]
    assert len(vector) == len(FEATURES)
    return vector


class ValueModel:
    """P(my camp wins | features): one weight vector per camp; no weights is the flat
    value 0.5 everywhere (the untrained baseline: the search then sees only finished games)."""

    def __init__(self, weights: dict[str, list[float]] | None = None) -> None:
        self.weights = {c: np.asarray(w, dtype=float) for c, w in (weights or {}).items()}

    def value(self, vector: Sequence[float], camp: str) -> float:
        w = self.weights.get(camp)
        if w is None:
            return 0.5
        return float(1.0 / (1.0 + math.exp(-float(np.dot(w, vector)))))

    def of(self, view: AvalonScripted) -> float:
        return self.value(features(view), view.team)


def fit_logistic(x: np.ndarray, y: np.ndarray, ridge: float, steps: int = 25) -> np.ndarray:
    """Ridge-penalised logistic regression by Newton's method (deterministic, a few steps)."""
    w = np.zeros(x.shape[1])
    penalty = ridge * np.eye(x.shape[1])
    penalty[0, 0] = 0.0  # the bias is not shrunk
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + penalty @ w
        hess = (x * (p * (1 - p))[:, None]).T @ x + penalty
        w = w - np.linalg.solve(hess, grad)
    return w


def fit_value(rows: Sequence[tuple[list[float], str, bool]], ridge: float = 1.0) -> ValueModel:
    """The model fitted on (features, camp, whether that camp won) rows, one fit per camp."""
    weights = {}
    for camp in CAMPS:
        mine = [(v, won) for v, c, won in rows if c == camp]
        if mine:
            x = np.asarray([v for v, _ in mine], dtype=float)
            y = np.asarray([float(won) for _, won in mine])
            weights[camp] = fit_logistic(x, y, ridge).tolist()
    return ValueModel(weights)


def save_value(model: ValueModel, folder: str | Path, **facts: object) -> Path:
    """Write the model (atomically) with ``facts`` (e.g. how it was trained)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "features": FEATURES,
        "weights": {c: w.tolist() for c, w in model.weights.items()},
        **facts,
    }
    with atomic_writer(folder / VALUE_FILE) as fh:
        json.dump(data, fh, indent=1)
    return folder


def load_value(folder: str | Path) -> ValueModel:
    """The model saved in ``folder``; ConfigError (one line) when it is missing or was fitted
    on other features."""
    folder = Path(folder)
    try:
        data = json.loads((folder / VALUE_FILE).read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"no strategist value model in {folder} (fit one: python -m flows.run strategist avalon)"
        ) from None
    if tuple(data.get("features", ())) != FEATURES:
        raise ConfigError(
            f"strategist value model {folder}: fitted on other features than this code has; "
            "refit it"
        )
    return ValueModel(data["weights"])


__all__ = [
    "CAMPS",
    "FEATURES",
    "VALUE_FILE",
    "ValueModel",
    "features",
    "fit_value",
    "load_value",
    "public_p_evil",
    "save_value",
]
