"""REINFORCE for the ``rl_ins`` tactic policy, on scripted self-play of the ONUW engine.

Each game has one learner seat (drawn from the seed) played by ``rl_ins`` with template
speeches; every other seat is the scripted player. The reward of the learner's speeches is
1 when its final camp wins, else 0; the baseline is a running mean of that reward per
final camp (fixed by the night, before any speech, so it does not bias the gradient). Games
are played ``batch_games`` at a time, one policy update per batch. The same settings give
the same policy: the games are seeded, the update runs on one thread.

``TACTICS`` is this training as a ``TrainedBaseline`` (its stage, its file, its loader).
Importing this module does not import torch; training, saving and loading do.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from stackelberg.agents import make_agent
from stackelberg.games.onuw import ROLE_TEAM
from stackelberg.progress import progress
from stackelberg.settings import Settings
from stackelberg.training.baseline import PairedWins, Trained, TrainedBaseline
from stackelberg.training.baseline_settings import EvalGames, GameOptions, Seed
from stackelberg.training.learner import EVAL_SEEDS, eval_seeds, play_learner_games

#: the game the policy plays (``rl_ins`` plays ONUW only)
GAME = "onuw"


class TacticsSettings(Settings):
    """The ``tactics`` section of params.yaml: how the rl_ins tactic policy is trained."""

    episodes: int = Field(
        4000, ge=1, lt=EVAL_SEEDS, description="self-play games the policy learns from"
    )
    batch_games: int = Field(100, ge=1, description="games per policy update (played at once)")
    learning_rate: float = Field(0.02, gt=0, description="Adam's learning rate")
    hidden: int = Field(32, ge=1, description="units of the policy's hidden layer")
    entropy: float = Field(
        0.01, ge=0, description="entropy bonus: keeps the choice from collapsing early"
    )
    baseline_decay: float = Field(
        0.9, ge=0, lt=1, description="running mean of the reward per camp: weight of the past"
    )
    eval_games: EvalGames = 400
    seed: Seed = 0
    options: GameOptions


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one thread inside the block (the same sums in the same order: the same
    weights on any machine), the caller's thread count restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def play_learner(policy: Any, seeds: Sequence[int], options: dict[str, Any] | None = None):
    """Games on ``seeds``, the learner seat ``rl_ins`` with ``policy`` (None: the uniform
    choice) and template speeches, the others scripted. Per game: (won, final camp of the
    learner, its (features, tactic) choices)."""

    def learner():
        return make_agent("rl_ins", GAME, policy=policy, speech="template")

    return [
        (
            seat in rec["result"]["winners"],
            ROLE_TEAM[rec["result"]["final_roles"][seat]],
            table.agents[seat].choices,
        )
        for seat, rec, table in play_learner_games(GAME, seeds, options, learner)
    ]


class Tactics(TrainedBaseline):
    """The tactic policy as a trained baseline: REINFORCE, then the trained and the uniform
    tactic choice on the same held-out seeds; saved as ``agents.tactics.policy`` saves it."""

    name = "tactics"
    game = GAME
    settings_class = TacticsSettings
    verb = "train"

    def train(self, settings: TacticsSettings, path_of: Callable[[str], Path]) -> Trained:
        import torch

        bar = progress(settings.episodes, f"{self.name}@{self.game} training", "game")
        policy, history = train_tactics(settings, on_step=lambda s: bar.update(s["games"] - bar.n))
        bar.close()
        seeds = eval_seeds(settings)
        with one_thread():
            trained = [won for won, _, _ in play_learner(policy, seeds, settings.options)]
            uniform = [won for won, _, _ in play_learner(None, seeds, settings.options)]
        weights = io.BytesIO()
        torch.save(policy.state_dict(), weights)
        return Trained(
            model={"hidden": settings.hidden, "weights": weights.getvalue()},
            held_out=PairedWins(("uniform", "trained"), uniform, trained),
            curve=history,
            counts={"updates": len(history)},
        )

    def save(self, model: Any, folder: Path, game: str, settings: dict[str, Any]) -> Path:
        import torch

        from stackelberg.agents.tactics.policy import TacticPolicy, save_policy

        policy = TacticPolicy(model["hidden"])
        policy.load_state_dict(torch.load(io.BytesIO(model["weights"]), weights_only=True))
        return save_policy(policy, folder, game=game, settings=settings)

    def load(self, folder: str | Path) -> Any:
        from stackelberg.agents.tactics.policy import load_policy

        return load_policy(folder)


#: rl_ins's tactic policy, the trained baseline of the tactics stage
TACTICS = Tactics()


def train_tactics(
    settings: TacticsSettings, on_step: Callable[[dict[str, float]], None] | None = None
) -> tuple[Any, list[dict[str, float]]]:
    """The trained ``TacticPolicy`` and its training curve (one entry per update)."""
    import torch

    from stackelberg.agents.tactics.policy import TacticPolicy

    with one_thread():
        torch.manual_seed(settings.seed)
        policy = TacticPolicy(settings.hidden)
        optimizer = torch.optim.Adam(policy.parameters(), lr=settings.learning_rate)
        baseline: dict[str, float] = {}
        history = []
        first = settings.seed
        for start in range(0, settings.episodes, settings.batch_games):
            size = min(settings.batch_games, settings.episodes - start)
            policy.eval()
            games = play_learner(
                policy, range(first + start, first + start + size), settings.options
            )
            vectors, actions, advantages = [], [], []
            for won, camp, choices in games:
                advantage = float(won) - baseline.get(camp, 0.5)
                for vector, action in choices:
                    vectors.append(vector)
                    actions.append(action)
                    advantages.append(advantage)
            for camp in {camp for _, camp, _ in games}:
                mean = sum(w for w, c, _ in games if c == camp) / sum(
                    c == camp for _, c, _ in games
                )
                old = baseline.get(camp, mean)
                baseline[camp] = (
                    settings.baseline_decay * old + (1 - settings.baseline_decay) * mean
                )
            step = {"games": start + size, "win_rate": sum(w for w, _, _ in games) / size}
            if vectors:
                policy.train()
                logp = torch.log_softmax(policy(torch.tensor(vectors)), -1)
                chosen = logp[torch.arange(len(actions)), torch.tensor(actions)]
                entropy = -(logp.exp() * logp).sum(-1).mean()
                loss = -(chosen * torch.tensor(advantages)).mean() - settings.entropy * entropy
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                step |= {"loss": loss.item(), "entropy": entropy.item()}
            history.append(step)
            if on_step is not None:
                on_step(step)
        policy.eval()
    return policy, history


__all__ = [
    "EVAL_SEEDS",
    "GAME",
    "TACTICS",
    "Tactics",
    "TacticsSettings",
    "eval_seeds",
    "one_thread",
    "play_learner",
    "train_tactics",
]
