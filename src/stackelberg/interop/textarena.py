"""The four games as TextArena environments (the ``textarena`` extra). Importing this module
registers ``Stackelberg-<Title>-v0`` for each game (``env_id``: ``Stackelberg-Werewolf-v0``,
``Stackelberg-OneNightUltimateWerewolf-v0``, ...), with the wrappers TextArena gives its own
conversational games (the whole observation as text, long actions clipped), and the ``-raw``
and ``-train`` variants TextArena registers beside each game.

>>> import textarena as ta, stackelberg.interop.textarena        # doctest: +SKIP
>>> env = ta.make("Stackelberg-Werewolf-v0", allow_abstain=False)  # game options, validated
>>> env.reset(num_players=7, seed=3)

Only a translation: the engine plays the game. Each player reads its LLM player's words
(``interop.seat``): the rules and who it is first (TextArena's prompt), then every event it
sees as it happens (a speech from its speaker, anything else from the game), and when its
turn comes the question: a speech, or a choice as a numbered list, answered with the
option's number or its words (``agents.choice.parse_choice``). An answer that names no legal
option is an invalid move: the player is told why and asked again; a second one in a row
plays a random legal option (seeded by the game's seed) and marks the player's
``invalid_move``. At the end each player's reward is ``interop.seat.final_rewards``'s and
``close()`` returns it with each player's role and the result's reason.
"""

from __future__ import annotations

import random
from typing import Any

from stackelberg.agents.choice import parse_choice
from stackelberg.agents.prompts import SPEECH, describe_event
from stackelberg.games import GAMES, GameError, game_spec, make_game
from stackelberg.games.base import player_name
from stackelberg.interop import require
from stackelberg.interop.seat import final_rewards, option_labels, seat_spec

ta = require("textarena", "textarena")
from textarena.envs import CONVERSATIONAL_WRAPPERS  # noqa: E402 (after the extra's check)
from textarena.envs.registration import ENV_REGISTRY, register_with_versions  # noqa: E402

#: the field of a game's options that sets its table size (the others fix it otherwise)
TABLE_SIZE_OPTION = "n_players"


def env_id(game: str) -> str:
    """The TextArena id of a game: ``Stackelberg-`` and its title without spaces, ``-v0``."""
    return f"Stackelberg-{game_spec(game).title.replace(' ', '')}-v0"


class GameEnv(ta.Env):
    """One of the games as a TextArena environment (see the module docstring)."""

    def __init__(self, game: str, **options: Any) -> None:
        self.game_name = game
        self.options = options
        self.game = make_game(game, options)  # an unknown option or a bad value stops here

    def reset(self, num_players: int, seed: int | None = None) -> None:
        """A new game of ``num_players`` (a game whose options set its table size takes it;
        the others must match theirs) dealt from ``seed`` (None: a random one)."""
        options = dict(self.options)
        if TABLE_SIZE_OPTION in self.game.Config.model_fields:
            options.setdefault(TABLE_SIZE_OPTION, num_players)
        self.game = make_game(self.game_name, options)
        self.seed = random.randrange(2**31) if seed is None else seed
        self.game.reset(self.seed)
        if self.game.n_players != num_players:
            raise GameError(
                f"{self.game_name}: this table has {self.game.n_players} players, not "
                f"{num_players} (its options fix the number)"
            )
        self._fallback = random.Random(f"{self.seed}:invalid moves")
        self._told = 0
        self.state = ta.TeamMultiPlayerState(num_players=num_players, seed=seed)
        self.state.reset(
            game_state={"game": self.game_name, "seed": self.seed},
            player_prompt_function=lambda player_id, game_state: (
                seat_spec(self.game, player_id).system
            ),
            role_mapping={p: player_name(p) for p in range(num_players)},
            secret_roles={p.id: p.role for p in self.game.players},
        )
        self._tell()
        self._ask()

    def step(self, action: str) -> tuple[bool, dict[str, Any]]:
        decision = self.game.decision()
        player = decision.player
        if decision.options is None:
            self.game.step(action)
        else:
            labels = option_labels(decision)
            parsed = parse_choice(action, labels)
            index = parsed.index
            if index is None:
                if not self.state.set_invalid_move(f"{parsed.reason}."):
                    return self.state.step(rotate_player=False)  # asked again
                self.state.made_invalid_move = False  # no more tries: a random option
                index = self._fallback.randrange(len(labels))
                self.state.add_observation(
                    to_id=player,
                    message=f"{player_name(player)} answered badly twice; played: {labels[index]}.",
                    observation_type=ta.ObservationType.GAME_ADMIN,
                )
            self.game.step(decision.options[index])
        self._tell()
        if self.game.done:
            self._finish()
        else:
            self._ask()
        return self.state.step(rotate_player=False)

    def record(self, agents: list[str] | None = None) -> dict[str, Any]:
        """The finished game's record, the engine's own (``agents``: each seat's name)."""
        return self.game.record(agents)

    def _tell(self) -> None:
        """Each player's lines for the events logged since the last call: a speech from its
        speaker (TextArena shows it as that player's message), the rest from the game."""
        for event in self.game.events[self._told :]:
            for player in range(self.game.n_players):
                if not event.visible(player):
                    continue
                if event.type == SPEECH:
                    self.state.add_observation(
                        from_id=event.player,
                        to_id=player,
                        message=event.data["text"],
                        observation_type=ta.ObservationType.PLAYER_ACTION,
                    )
                elif line := describe_event(self.game, event, player):
                    self.state.add_observation(
                        to_id=player,
                        message=line,
                        observation_type=ta.ObservationType.GAME_MESSAGE,
                    )
        self._told = len(self.game.events)

    def _ask(self) -> None:
        """The question of the player whose turn it is, and the turn to them."""
        player = self.game.decision().player
        self.state.manually_set_current_player_id(player)
        self.state.add_observation(
            to_id=player,
            message=seat_spec(self.game, player).question,
            observation_type=ta.ObservationType.GAME_MESSAGE,
        )

    def _finish(self) -> None:
        result = self.game.result()
        self.state.rewards = dict(enumerate(final_rewards(self.game)))
        for player in range(self.game.n_players):
            self.state.game_info[player]["reason"] = result["reason"]
        self.state.done = True


def register_games() -> list[str]:
    """Register every game of the registry (once; again is a no-op); returns their ids."""
    ids = [env_id(name) for name in GAMES]
    for name, game_id in zip(GAMES, ids, strict=True):
        if game_id not in ENV_REGISTRY:
            register_with_versions(
                id=game_id,
                entry_point=GameEnv,
                wrappers={"default": CONVERSATIONAL_WRAPPERS, "-train": CONVERSATIONAL_WRAPPERS},
                game=name,
            )
    return ids


ENV_IDS = register_games()

__all__ = ["ENV_IDS", "GameEnv", "env_id", "register_games"]
