"""The ``lspo`` policy: latent strategies from self-play speeches, then outcome-sampling
Monte Carlo CFR on the abstract Werewolf game they define.

1. Latent space. The speeches of each role, from the pipeline's self-play records and
   from ``candidate_games`` scripted games in which every speech turn proposes one
   candidate per speech act (LSPO's LLM proposes several distinct candidates per turn;
   here the acts' templates do), are clustered into ``k`` latent strategies per role
   (``agents.latent.clusters``).
2. Abstract game. The Werewolf engine, every seat the scripted player for night actions
   and votes, each speech of a strategic seat a latent strategy of the speaker's role,
   said as its act (``acts.LatentSpeaker``), so the scripted listeners react to it. With
   ``opponents: scripted`` the traverser is the one strategic seat and the others speak
   as the scripted player (the solution is a best response to them); with ``self`` every
   seat is strategic (self-play, as LSPO). An information set is
   the speaker's coarse view (``LatentSpeaker.info_set``), which forgets details: the
   abstraction has imperfect recall, so CFR's convergence guarantee does not carry over.
3. Solver. Each of ``iterations`` games has one traverser seat (drawn from its seed),
   which samples from regret matching mixed with ``exploration`` of the uniform choice;
   under ``self`` the others play regret matching. The traverser's regrets are updated from its outcome
   (win 1, draw 0.5, loss 0, less 0.5), importance-weighted by its own sampling; its
   average strategy accumulates weighted by its reach over its sampling's, the others'
   on-policy. The solution is the average strategy.

Deterministic: the same settings and speeches give the same policy. ``LSPO`` is this solve
as a ``TrainedBaseline`` (its stage, its files, its loader).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from stackelberg.agents import make_agent
from stackelberg.agents.latent.acts import ACT_NAMES, LatentSpeaker
from stackelberg.agents.latent.cfr import LatentPolicy, RegretTables, load_policy, save_policy
from stackelberg.agents.latent.clusters import Strategy, latent_strategies
from stackelberg.agents.runner import agent_rng
from stackelberg.games import make_game
from stackelberg.games.base import SPEAK
from stackelberg.progress import progress
from stackelberg.settings import Settings
from stackelberg.training.baseline import PairedWins, Trained, TrainedBaseline
from stackelberg.training.baseline_settings import EvalGames, GameOptions, Seed
from stackelberg.training.learner import EVAL_SEEDS, eval_seeds, play_learner_games

#: the game the policy plays (``lspo`` plays Werewolf only)
GAME = "werewolf"
#: candidate games' seeds start here, apart from the solver's and the held-out ones
CANDIDATE_SEEDS = 2_000_000


class LspoSettings(Settings):
    """The ``lspo`` section of params.yaml: the latent strategies and the CFR solve."""

    k: int = Field(6, ge=1, le=16, description="latent strategies per role (k-means clusters)")
    candidate_games: int = Field(
        100,
        ge=0,
        description="scripted games whose every speech turn adds one candidate speech per "
        "speech act to the speeches clustered (beside the self-play records')",
    )
    iterations: int = Field(
        3000, ge=1, lt=EVAL_SEEDS, description="abstract games of outcome-sampling MCCFR"
    )
    opponents: Literal["scripted", "self"] = Field(
        "scripted",
        description="the other seats of the abstract game: scripted (the scripted player's "
        "speeches: the policy is a best response to them) or self (latent strategies by "
        "the current regret matching: self-play, as LSPO solves its game)",
    )
    exploration: float = Field(
        0.6, gt=0, le=1, description="share of the uniform choice in the traverser's sampling"
    )
    eval_games: EvalGames = 400
    seed: Seed = 0
    options: GameOptions


def record_speeches(records: Iterable[dict]) -> dict[str, list[str]]:
    """Every speech of Werewolf records (docs/records.md), by the speaker's role."""
    by_role: dict[str, list[str]] = {}
    for record in records:
        roles = [p["role"] for p in record["players"]]
        for event in record["events"]:
            if event["type"] == "speech" and event["data"].get("text"):
                by_role.setdefault(roles[event["player"]], []).append(event["data"]["text"])
    return by_role


def speakers(seed: int, options: dict[str, Any]) -> tuple[Any, list[LatentSpeaker]]:
    """A game reset on ``seed`` with one ``LatentSpeaker`` per seat (seeded per seat)."""
    game = make_game(GAME, dict(options))
    game.reset(seed)
    seats = []
    for pid in range(game.n_players):
        speaker = LatentSpeaker()
        speaker.setup(game, pid, agent_rng(seed, pid))
        seats.append(speaker)
    return game, seats


def candidate_speeches(games: int, options: dict[str, Any], seed: int = 0) -> dict[str, list[str]]:
    """At every speech turn of ``games`` scripted games, one candidate per speech act, by
    the speaker's role; the speech played is one of them, drawn uniformly."""
    by_role: dict[str, list[str]] = {}
    for s in range(CANDIDATE_SEEDS + seed, CANDIDATE_SEEDS + seed + games):
        game, seats = speakers(s, options)
        while (decision := game.decision()) is not None:
            seat = seats[decision.player]
            if decision.kind != SPEAK:
                game.step(seat.act(decision))
                continue
            candidates = [seat.realise(act) for act in ACT_NAMES]
            by_role.setdefault(seat.my_role, []).extend(candidates)
            game.step(seat.speech(ACT_NAMES[seat.rng.randrange(len(ACT_NAMES))]))
    return by_role


def build_strategies(
    speeches: dict[str, Sequence[str]], settings: LspoSettings
) -> dict[str, tuple[Strategy, ...]]:
    """The latent strategies of every role of the game's deal that has speeches."""
    game = make_game(GAME, dict(settings.options))
    n = game.reset(settings.seed).n_players
    roles = sorted(set(game.config.roles))
    return {
        role: tuple(latent_strategies(speeches[role], role, n, settings.k, settings.seed))
        for role in roles
        if speeches.get(role)
    }


Chooser = Callable[[LatentSpeaker, str, int], int]


def play_abstract(
    seed: int, choose: Chooser, options: dict[str, Any], strategies, latent: Sequence[int]
) -> Any:
    """One abstract game: every speech of a ``latent`` seat is the strategy that
    ``choose(speaker, info set, n)`` picks among its role's, said as its act; the other
    seats speak as the scripted player. Returns the finished game."""
    game, seats = speakers(seed, options)
    while (decision := game.decision()) is not None:
        seat = seats[decision.player]
        options_ = strategies.get(seat.my_role, ())
        if decision.kind != SPEAK or not options_ or seat.player not in latent:
            game.step(seat.act(decision))
            continue
        index = choose(seat, seat.info_set(), len(options_))
        game.step(seat.speech(options_[index].act))
    return game


def outcome(result: dict[str, Any], player: int) -> float:
    """A game's result for ``player``: win 1, draw 0.5, loss 0."""
    return 0.5 if result["winner"] == "draw" else float(player in result["winners"])


class Traversal:
    """One game of the solver: every seat's sampling, and the traverser's regret update."""

    def __init__(self, tables: RegretTables, traverser: int, exploration: float, seed: int):
        self.tables, self.traverser, self.eps = tables, traverser, exploration
        self.draw = random.Random(f"lspo-sample:{seed}")
        #: the traverser's (information set, action, regret matching, sampling probability)
        self.visits: list[tuple[str, int, list[float], float]] = []
        self.reach = 1.0  # the traverser's reach under regret matching over its sampling's

    def choose(self, seat: LatentSpeaker, key: str, n: int) -> int:
        sigma = self.tables.current(key, n)
        if seat.player != self.traverser:
            self.tables.add_strategy(key, sigma)  # sampled on-policy: weight 1
            return self.draw.choices(range(n), weights=sigma)[0]
        self.tables.add_strategy(key, sigma, self.reach)
        sample = [(1 - self.eps) * p + self.eps / n for p in sigma]
        a = self.draw.choices(range(n), weights=sample)[0]
        self.visits.append((key, a, sigma, sample[a]))
        self.reach *= sigma[a] / sample[a]
        return a

    def update(self, won: float) -> None:
        """The sampled counterfactual regrets of the traverser's visits, from its outcome."""
        sampled = 1.0
        for _, _, _, q in self.visits:
            sampled *= q
        weight = (won - 0.5) / sampled
        tail = 1.0  # regret matching's probability of the traverser's later actions
        for key, a, sigma, _ in reversed(self.visits):
            regret = [-weight * tail * sigma[a]] * len(sigma)
            regret[a] = weight * tail * (1 - sigma[a])
            self.tables.add_regret(key, regret)
            tail *= sigma[a]


def solve(
    strategies: dict[str, tuple[Strategy, ...]],
    settings: LspoSettings,
    on_step: Callable[[int], None] | None = None,
) -> tuple[RegretTables, list[dict[str, float]]]:
    """Outcome-sampling MCCFR over ``settings.iterations`` abstract games; the tables and a
    curve (per tenth of the games: the traversers' win rate, the information sets seen)."""
    tables = RegretTables()
    history, wins, chunk = [], 0.0, max(settings.iterations // 10, 1)
    n_players = make_game(GAME, dict(settings.options)).config.n_players
    for t in range(settings.iterations):
        seed = settings.seed + t
        traverser = random.Random(f"lspo:{seed}").randrange(n_players)
        traversal = Traversal(tables, traverser, settings.exploration, seed)
        latent = range(n_players) if settings.opponents == "self" else (traverser,)
        game = play_abstract(seed, traversal.choose, settings.options, strategies, latent)
        won = outcome(game.result(), traverser)
        traversal.update(won)
        wins += won
        if (t + 1) % chunk == 0 or t + 1 == settings.iterations:
            done = len(history) * chunk
            history.append(
                {
                    "games": t + 1,
                    "win_rate": wins / max(t + 1 - done, 1),
                    "information_sets": len(tables.regret),
                }
            )
            wins = 0.0
        if on_step is not None:
            on_step(t + 1)
    return tables, history


def play_learner(policy: LatentPolicy, seeds: Sequence[int], options: dict[str, Any]):
    """Games on ``seeds`` with one seat (drawn from the seed) ``lspo`` playing ``policy``
    with template speeches, the others scripted: whether that seat won, per game."""

    def learner():
        return make_agent("lspo", GAME, policy=policy, speech="template")

    games = play_learner_games(GAME, seeds, options, learner)
    return [outcome(rec["result"], seat) for seat, rec, _ in games]


class Lspo(TrainedBaseline):
    """The lspo policy as a trained baseline: solved from the self-play records (the
    selfplay stage's), then one seat plays the solved and the uniform choice over latent
    strategies on the same held-out seeds; saved as ``latent.cfr`` saves it."""

    name = "lspo"
    game = GAME
    settings_class = LspoSettings
    verb = "solve"

    def train(self, settings: LspoSettings, path_of: Callable[[str], Path]) -> Trained:
        from stackelberg.datasets import read_dataset  # polars, only when training

        rows = read_dataset(path_of("selfplay"), "selfplay")["record"].to_list()
        bar = progress(settings.iterations, f"{self.name}@{self.game} solving", "game")
        policy, history = train_lspo(
            (json.loads(r) for r in rows), settings, on_step=lambda t: bar.update(t - bar.n)
        )
        bar.close()
        seeds = eval_seeds(settings)
        solved = play_learner(policy, seeds, settings.options)
        uniform = play_learner(LatentPolicy(policy.strategies, {}), seeds, settings.options)
        strategies = {r: [s.to_dict() for s in ss] for r, ss in policy.strategies.items()}
        return Trained(
            model={"strategies": strategies, "table": policy.table},
            held_out=PairedWins(("uniform", "solved"), uniform, solved),
            curve=history,
            counts={
                "self_play_records": len(rows),
                "information_sets": len(policy.table),
                "latent_strategies": sum(len(ss) for ss in strategies.values()),
            },
        )

    def save(self, model: Any, folder: Path, game: str, settings: dict[str, Any]) -> Path:
        strategies = {
            r: tuple(Strategy.from_dict(s) for s in ss) for r, ss in model["strategies"].items()
        }
        policy = LatentPolicy(strategies, model["table"])
        return save_policy(policy, folder, game=game, settings=settings)

    def load(self, folder: str | Path) -> LatentPolicy:
        return load_policy(folder)


#: lspo's policy, the trained baseline of the lspo stage
LSPO = Lspo()


def train_lspo(
    records: Iterable[dict],
    settings: LspoSettings,
    on_step: Callable[[int], None] | None = None,
) -> tuple[LatentPolicy, list[dict[str, float]]]:
    """The solved ``LatentPolicy`` from self-play ``records`` (and the candidate games) and
    the solver's curve."""
    speeches = record_speeches(records)
    candidates = candidate_speeches(settings.candidate_games, settings.options, settings.seed)
    for role, texts in candidates.items():
        speeches.setdefault(role, []).extend(texts)
    strategies = build_strategies(speeches, settings)
    tables, history = solve(strategies, settings, on_step)
    return LatentPolicy(strategies, tables.average()), history


__all__ = [
    "GAME",
    "LSPO",
    "Lspo",
    "LspoSettings",
    "build_strategies",
    "candidate_speeches",
    "eval_seeds",
    "play_abstract",
    "play_learner",
    "record_speeches",
    "solve",
    "train_lspo",
]
