"""The four games as PettingZoo AEC environments (the ``pettingzoo`` extra).

>>> from stackelberg.interop.pettingzoo import env            # doctest: +SKIP
>>> table = env("werewolf", allow_abstain=False)                # any game option, validated
>>> table.reset(seed=3)                                         # the engine's game of seed 3

Only a translation: the engine (``stackelberg.games``) plays the game. Seat ``p`` is agent
``player_p``; the engine's pending decision names the agent to act, one at a time.

- Action: ``{"choice": i, "speech": text}``. A decision with legal options takes the ``i``-th
  of them (``infos[agent]["action_mask"]["choice"]`` marks the legal indices, in the order
  of the numbered list in the text view); a speech takes ``text``, and the other key is
  ignored. A bare int or str is read as that key alone.
- Observation: ``{"text": ..., "data": ...}``: the seat's view as its LLM players read it
  (``interop.seat``), and the engine's structured observation (``Game.observation``) as JSON.
- Reward: at the end only (``interop.seat.final_rewards``); no truncation.
- Seeds: ``reset(seed=s)`` plays the engine's game of seed ``s``, so the same actions give
  the engine's record byte for byte (``record()``); a reset without a seed plays the next
  seed drawn from the last one given. ``reset``'s ``options`` are unused: the game's options
  are given to ``env``.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Mapping
from math import comb
from typing import Any

from stackelberg.agents.prompting import transcript_line
from stackelberg.games import Decision, GameError, IllegalActionError, make_game
from stackelberg.interop import require
from stackelberg.interop.seat import final_rewards, option_labels, seat_view

require("pettingzoo", "pettingzoo")
import numpy as np  # noqa: E402 (after the check that names the missing extra)
from gymnasium import logger, spaces  # noqa: E402
from pettingzoo import AECEnv  # noqa: E402
from pettingzoo.utils import wrappers  # noqa: E402

#: the longest speech an action may carry, in characters
SPEECH_CHARS = 1000
#: the longest text an observation holds (a whole game, every speech at its longest)
VIEW_CHARS = 2**22
#: choice slots: the most legal options a decision has at the games' largest tables (an
#: Avalon team of 5 out of 10 players); a larger table may need ``max_choices``
MAX_CHOICES = comb(10, 5)
#: what a sampled speech is made of (a real one may hold any character)
SAMPLED_CHARACTERS = string.ascii_letters + string.digits + string.punctuation + " "


class AnyText(spaces.Text):
    """Text of any characters, at most ``max_length``: a game's words come in any script (a
    scenario's café, a player's emoji), so membership checks the type and the length only;
    ``sample`` draws from ``SAMPLED_CHARACTERS``."""

    def __init__(self, max_length: int, min_length: int = 0) -> None:
        super().__init__(max_length, min_length=min_length, charset=SAMPLED_CHARACTERS)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


def agent_name(seat: int) -> str:
    return f"player_{seat}"


class GameEnv(AECEnv):
    """One of the games as an AEC environment (see the module docstring)."""

    metadata = {"render_modes": ["human", "ansi"], "is_parallelizable": False}

    def __init__(
        self,
        game: str,
        render_mode: str | None = None,
        max_choices: int = MAX_CHOICES,
        **options: Any,
    ) -> None:
        super().__init__()
        self.game = make_game(game, options)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise GameError(
                f"render_mode={render_mode!r}; choose one of: {', '.join(self.metadata['render_modes'])}"
            )
        if isinstance(max_choices, bool) or not isinstance(max_choices, int) or max_choices < 1:
            raise GameError(f"max_choices must be an integer of 1 or more, got {max_choices!r}")
        self.metadata = {**self.metadata, "name": f"stackelberg_{game}_v0"}
        self.render_mode = render_mode
        self.max_choices = max_choices
        seats = make_game(game, options).reset(0).n_players  # the options fix the table
        self.possible_agents = [agent_name(p) for p in range(seats)]
        self.action_spaces = {
            a: spaces.Dict(
                {"choice": spaces.Discrete(max_choices), "speech": AnyText(SPEECH_CHARS)}
            )
            for a in self.possible_agents
        }
        self.observation_spaces = {
            a: spaces.Dict({"text": AnyText(VIEW_CHARS), "data": AnyText(VIEW_CHARS)})
            for a in self.possible_agents
        }
        self._seeds = random.Random()
        self._rendered = 0

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is None:
            seed = self._seeds.randrange(2**31)
        elif isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise GameError(f"seed must be an integer, got {seed!r}")
        self._seeds = random.Random(int(seed))
        self.game.reset(int(seed))
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self._rendered = 0
        self._next_turn()

    def observe(self, agent: str) -> dict[str, str]:
        seat = self.possible_agents.index(agent)
        return {
            "text": seat_view(self.game, seat),
            "data": json.dumps(self.game.observation(seat).data),
        }

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        decision = self.game.decision()
        self.game.step(self._engine_action(agent, decision, action))
        self._cumulative_rewards[agent] = 0.0
        if self.game.done:
            for a, reward in zip(self.possible_agents, final_rewards(self.game), strict=True):
                self.rewards[a] = reward
                self.terminations[a] = True
            self.infos = {a: {"action_mask": self._mask(a, None)} for a in self.agents}
        else:
            self._clear_rewards()
            self._next_turn()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | None:
        """The game master's lines (every event, private ones marked) since the last render:
        printed (``human``) or returned (``ansi``)."""
        if self.render_mode is None:
            logger.warn("render() needs a render_mode: 'human' or 'ansi'")
            return None
        events = self.game.events[self._rendered :]
        self._rendered = len(self.game.events)
        text = "\n".join(line for e in events if (line := transcript_line(self.game, e)))
        if self.render_mode == "ansi":
            return text
        if text:
            print(text)
        return None

    def close(self) -> None:
        """Nothing to release: the engine holds no resources."""

    def record(self, agents: list[str] | None = None) -> dict[str, Any]:
        """The finished game's record, the engine's own (``agents``: each seat's name)."""
        return self.game.record(agents)

    def _next_turn(self) -> None:
        decision = self.game.decision()
        self.agent_selection = agent_name(decision.player)
        self.infos = {a: {"action_mask": self._mask(a, decision)} for a in self.agents}

    def _mask(self, agent: str, decision: Decision | None) -> dict[str, Any]:
        """What ``agent`` may do now: the legal choice indices, and the speech (None: any
        text; ``(0, None)``: only the empty text, which is ignored)."""
        choice = np.zeros(self.max_choices, dtype=np.int8)
        if decision is None or agent != agent_name(decision.player):
            return {"choice": choice, "speech": (0, None)}
        if decision.options is None:
            return {"choice": choice, "speech": None}
        if len(decision.options) > self.max_choices:
            raise GameError(
                f"{self.game.name}: a decision has {len(decision.options)} legal options, more "
                f"than max_choices={self.max_choices}; make the env with a larger max_choices"
            )
        choice[: len(decision.options)] = 1
        return {"choice": choice, "speech": (0, None)}

    def _engine_action(self, agent: str, decision: Decision, action: Any) -> Any:
        """The engine's action for ``action`` (see the module docstring), or an
        IllegalActionError in one line."""
        if isinstance(action, Mapping):
            choice, speech = action.get("choice"), action.get("speech")
        else:
            choice, speech = (None, action) if isinstance(action, str) else (action, None)
        if decision.options is None:
            if not isinstance(speech, str):
                raise IllegalActionError(
                    f"{agent} must speak: the action is {{'speech': text}}, got {action!r}"
                )
            if len(speech) > SPEECH_CHARS:
                raise IllegalActionError(
                    f"{agent}: a speech holds at most {SPEECH_CHARS} characters, got {len(speech)}"
                )
            return speech
        legal = len(decision.options)
        if isinstance(choice, bool) or not isinstance(choice, int | np.integer):
            raise IllegalActionError(
                f"{agent} must choose: the action is {{'choice': index}} with index 0 to "
                f"{legal - 1}, got {action!r}"
            )
        if not 0 <= choice < legal:
            raise IllegalActionError(
                f"{agent}: choice {int(choice)} is not legal now; legal: 0 to {legal - 1} "
                f"({'; '.join(option_labels(decision))})"
            )
        return decision.options[int(choice)]


def raw_env(game: str, render_mode: str | None = None, **options: Any) -> GameEnv:
    """The environment without PettingZoo's order checks."""
    return GameEnv(game, render_mode=render_mode, **options)


def env(game: str, render_mode: str | None = None, **options: Any) -> AECEnv:
    """The AEC environment of ``game`` with ``options`` (checked: an unknown option or a bad
    value raises a one-line error), wrapped in PettingZoo's order checks."""
    return wrappers.OrderEnforcingWrapper(raw_env(game, render_mode=render_mode, **options))


__all__ = ["MAX_CHOICES", "SPEECH_CHARS", "AnyText", "GameEnv", "agent_name", "env", "raw_env"]
