"""This project's agents in a seat of TextArena's own SecretMafia-v0 (the ``textarena`` extra).

SecretMafia is a Werewolf variant that TextArena wrote, with its own rules and words: Mafia,
a Doctor, a Detective and Villagers; each night the Mafia vote on a victim, the Doctor
protects and the Detective investigates; each day three rounds of discussion (the speaking
order drawn once and repeated), then a vote (a tie drawn at random). An agent of this
project sees a game only as one of this project's engines shows it, so ``MafiaView`` reads
the seat's TextArena observation (the text of TextArena's ``LLMObservationWrapper``, which
SecretMafia-v0 comes with) into a view of this project's Werewolf: Mafia are werewolves,
the Detective is the seer, the Doctor the doctor; the night's votes, protections and
findings, the deaths, speeches and votes are Werewolf's events, worded as Werewolf's
prompts word them. ``SeatedAgent`` is a TextArena agent that plays one of this project's
agents (``refiner+X`` included) on that view and answers in SecretMafia's format.

What is lost or guessed in the translation:

- The agent reads this project's Werewolf rules (guardian and witch named as roles that may
  exist, one speech a day, abstention), not SecretMafia's prompt; its decisions say the
  discussion round and what is asked.
- TextArena names players from 0, this project from 1: "Player k" in speeches is renamed
  both ways (only names of seats at the table).
- TextArena does not say who speaks next. In the first discussion round of a day the
  Refiner is asked without a named follower ("the next speaker"); from the last speech of
  the first round on, the order seen so far repeats and names the follower.
- A player removed for invalid moves, and TextArena's admin messages, have no Werewolf event
  and are not shown to the agent (the legal options still leave that player out).
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Generator, Sequence
from typing import Any

from stackelberg.agents.base import Agent
from stackelberg.agents.runner import agent_rng, run_requests
from stackelberg.games.base import SPEAK, Decision, Game, GameError, Player, player_name
from stackelberg.games.werewolf import ROLE_TEAM, Werewolf
from stackelberg.interop import require

ta = require("textarena", "textarena")
from textarena.envs.SecretMafia.env import VoteHandler  # noqa: E402 (after the extra's check)

ENV_ID = "SecretMafia-v0"
#: SecretMafia's roles as this project's Werewolf roles
ROLE_OF = {"Mafia": "werewolf", "Detective": "seer", "Doctor": "doctor", "Villager": "villager"}
#: a message of the wrapper's text: "[GAME] ..." or "[Player 3] ..." at a line's start
_MESSAGE = re.compile(r"\n\[(GAME|Player \d+)\] ")
_WELCOME = re.compile(r"Welcome to Secret Mafia! You are Player (\d+)\.\nYour role: (\w+)")
_PLAYERS = re.compile(r"^Players: (.*)$", re.M)
_TEAMMATES = re.compile(r"^Your teammates are: (.*)\.$", re.M)
_NAME = re.compile(r"\b(player\s*)(\d+)\b", re.I)
_OPTION = re.compile(r"\[(\d+)\]")
_DAY = re.compile(r"^Day breaks\. Discuss for (\d+) rounds")
_KILLED = re.compile(r"^Player (\d+) was killed during the night\.")
_VOTED_OUT = re.compile(r"^Player (\d+) was eliminated by vote\.")
_REMOVED = re.compile(r"^Player (\d+) has been eliminated by making an invalid move\.")
_FOUND = re.compile(r"^Player (\d+) IS( NOT)? a Mafia member\.")
#: the first words of the messages that ask a seat a question: -> the Werewolf decision kind
_ASKS = {
    "Night has fallen. Mafia, agree on a victim.": "wolf_kill",
    "Night phase - choose one player to protect": "protect",
    "Night phase - choose one player to investigate": "inspect",
    "Voting phase - submit one vote": "vote",
}


def parse_messages(observation: str) -> list[tuple[int | None, str]]:
    """The messages of an observation text as (sender, text); sender None: the game."""
    parts = _MESSAGE.split("\n" + observation.lstrip("\n"))
    return [
        (None if tag == "GAME" else int(tag.split()[1]), text.strip("\n"))
        for tag, text in zip(parts[1::2], parts[2::2], strict=True)
    ]


def renamed(text: str, shift: int, seats: int) -> str:
    """``text`` with every "Player k" of a seat at the table renamed by ``shift`` (+1: from
    TextArena's names, which count from 0, to this project's; -1: back)."""

    def rename(m: re.Match) -> str:
        k = int(m.group(2))
        seat = k if shift > 0 else k - 1
        return f"{m.group(1)}{k + shift}" if 0 <= seat < seats else m.group(0)

    return _NAME.sub(rename, text)


class MafiaView(Game):
    """One seat's view of a SecretMafia game, as this project's Werewolf (see the module
    docstring). Not an engine: ``follow`` adds what the seat was told; ``decision`` is the
    question it was asked last."""

    spec = Werewolf.spec

    def __init__(self) -> None:
        super().__init__(Werewolf.Config(allow_abstain=False))
        self.me: int | None = None
        self.alive: list[int] = []
        self.wolves: tuple[int, ...] = ()
        self.rounds = 1  # discussion rounds a day
        self.day_speakers: list[int] = []
        self._asked: tuple[str, tuple[int, ...]] | None = None

    # ---- reading TextArena's messages ---------------------------------------------------
    def follow(self, messages: Sequence[tuple[int | None, str]]) -> None:
        for sender, text in messages:
            if sender is None:
                self._game_message(text)
            else:
                self._player_message(sender, text)

    def _game_message(self, text: str) -> None:
        if welcome := _WELCOME.match(text):
            self._seat(int(welcome.group(1)), welcome.group(2), text)
        elif kind := next((k for words, k in _ASKS.items() if text.startswith(words)), None):
            if kind != "vote":
                self._night()
            else:
                self.phase = "vote"
            self._asked = (kind, tuple(int(t) for t in _OPTION.findall(text)))
        elif day := _DAY.match(text):
            self.rounds = int(day.group(1))
            self.phase, self.round = "day", self._night_round()
            self.day_speakers = []
            self._asked = (SPEAK, ())
        elif killed := _KILLED.match(text):
            self._dawn([int(killed.group(1))])
        elif text.startswith("No one was killed tonight."):
            self._dawn([])
        elif out := _VOTED_OUT.match(text):
            self._out(int(out.group(1)))
            self.log("eliminate", None, {"player": int(out.group(1))})
        elif text.startswith("No consensus - nobody was eliminated."):
            self.log("eliminate", None, {"player": None})
        elif removed := _REMOVED.match(text):
            self._out(int(removed.group(1)))
        elif found := _FOUND.match(text):
            is_wolf = found.group(2) is None
            self.log(
                "inspect",
                self.me,
                {"target": int(found.group(1)), "is_werewolf": is_wolf},
                (self.me,),
            )

    def _player_message(self, sender: int, text: str) -> None:
        if self.phase == "day":
            self.day_speakers.append(sender)
            self.log("speech", sender, {"text": renamed(text, +1, self.n_players)})
            return
        target = VoteHandler.parse(text)  # SecretMafia's own reading of "[X]"
        if self.phase == "vote":
            self.log("vote", sender, {"target": target})
        elif sender in self.wolves:
            self.log("wolf_choice", sender, {"target": target}, self.wolves)
        elif sender == self.me and self.players[self.me].role == "doctor":
            self.log("protect", sender, {"target": target}, (self.me,))

    def _seat(self, me: int, role_name: str, welcome: str) -> None:
        if role_name not in ROLE_OF:
            raise GameError(
                f"SecretMafia dealt the role {role_name!r}, which this adapter does not know "
                f"(it reads textarena 0.7's roles: {', '.join(ROLE_OF)})"
            )
        seats = len(_PLAYERS.search(welcome).group(1).split(","))
        role = ROLE_OF[role_name]
        mates = _TEAMMATES.search(welcome)
        self.wolves = tuple(int(p) for p in re.findall(r"\d+", mates.group(1))) if mates else ()
        self.players = [
            Player(p, player_name(p), role, ROLE_TEAM[role])
            if p == me or p in self.wolves
            else Player(p, player_name(p), "unknown", "unknown")
            for p in range(seats)
        ]
        self.me, self.alive = me, list(range(seats))
        if self.wolves:
            self.log("werewolves", None, {"werewolves": list(self.wolves)}, self.wolves)

    def _night_round(self) -> int:
        """Night k is followed by day k, as in this project's Werewolf."""
        return self.round + (self.phase not in ("night", "day"))

    def _night(self) -> None:
        if self.phase != "night":
            self.phase, self.round = "night", self.round + 1

    def _dawn(self, dead: list[int]) -> None:
        self.phase, self.round = "day", self._night_round()
        for p in dead:
            self._out(p)
        self.log("death", None, {"players": dead})

    def _out(self, player: int) -> None:
        if player in self.alive:
            self.alive.remove(player)

    # ---- what the seat's agent reads ----------------------------------------------------
    def decision(self) -> Decision | None:
        """The question the seat was asked last (a speech: with its discussion round)."""
        if self._asked is None:
            return None
        kind, options = self._asked
        if kind == SPEAK:
            heard = len(self.day_speakers) // max(len(self.alive), 1) + 1
            prompt = (
                f"Day {self.round}, discussion round {heard} of {self.rounds}: speak to everyone."
            )
            return Decision(self.me, SPEAK, None, prompt)
        prompts = {
            "wolf_kill": f"Night {self.round}: choose a player for the Mafia to kill.",
            "protect": f"Night {self.round}: choose a player to protect tonight.",
            "inspect": f"Night {self.round}: choose a player to investigate.",
            "vote": f"Day {self.round}: vote to eliminate a player.",
        }
        return Decision(self.me, kind, options, prompts[kind])

    def next_speaker(self) -> int | None:
        """Who speaks after this seat's speech now: known once the day's first round is
        heard (the order repeats), None in the first round and after the last speech."""
        spoken, seats = len(self.day_speakers), len(self.alive)
        if spoken + 1 >= seats * self.rounds or spoken + 1 < seats:
            return None
        return self.day_speakers[(spoken + 1) % seats]

    def answer(self, decision: Decision, action: Any) -> str:
        """An action in SecretMafia's words: "[X]" for a choice, a speech with its players
        renamed to TextArena's names."""
        if decision.options is not None:
            return f"[{action}]"
        return renamed(action, -1, self.n_players)

    # ---- not an engine ------------------------------------------------------------------
    def _setup(self, roles: list[str] | None) -> None:
        raise GameError("a MafiaView follows a TextArena game; it is not dealt")

    def _apply(self, decision: Decision, action: Any) -> None:
        raise GameError("a MafiaView follows a TextArena game; its actions go to TextArena")

    def result(self) -> dict[str, Any]:
        raise GameError("a MafiaView has no result: TextArena's close() gives the rewards")


class SeatedAgent(ta.Agent):
    """A TextArena agent that plays one of this project's agents in a SecretMafia seat.

    ``build`` makes a fresh agent for each game (e.g. ``evaluation.tournament.build_agent``
    for ``refiner+direct``); ``llm`` answers its LLM requests (a backend, or routes such as
    ``{"default": players, "refiner": refiner}``: ``runner.run_requests``); each game's agent
    draws from its own seeded stream (``runner.agent_rng``: ``seed`` plus the games this
    seat played before). ``respond`` is the same answer as LLM requests to batch with other
    tables' (as ``runner.play_tables`` batches them).
    """

    def __init__(self, build: Callable[[], Agent], llm: Any = None, seed: int = 0) -> None:
        self.build = build
        self.llm = llm
        self.seed = seed
        self.games = 0
        self.view: MafiaView | None = None
        self.agent: Agent | None = None
        self._seen: list[tuple[int | None, str]] = []

    def __call__(self, observation: str) -> str:
        answer = self.respond(observation)
        try:
            requests = next(answer)
            while True:
                requests = answer.send(run_requests(self.llm, requests))
        except StopIteration as stop:
            return stop.value

    def respond(self, observation: str) -> Generator[list[Any], list[Any], str]:
        """The answer to ``observation`` in SecretMafia's words; yields the agent's LLM
        requests and receives their results."""
        decision = self._follow(observation)
        action = self.agent.act(decision)
        if isinstance(action, types.GeneratorType):
            action = yield from action
        self.agent.take_notes()  # no record here to keep them in
        return self.view.answer(decision, action)

    def _follow(self, observation: str) -> Decision:
        """Read what is new in ``observation`` (a new game: a new view and agent); the
        question the seat owes."""
        messages = parse_messages(observation)
        if self.view is None or messages[: len(self._seen)] != self._seen:
            self.view, self.agent, self._seen = MafiaView(), None, []
            self.games += 1
        self.view.follow(messages[len(self._seen) :])
        self._seen = messages
        if self.view.me is None:
            raise GameError(f"not a {ENV_ID} observation: no welcome names the seat")
        if self.agent is None:
            self.agent = self.build()
            rng = agent_rng(self.seed + self.games - 1, self.view.me)
            self.agent.setup(self.view, self.view.me, rng)
        decision = self.view.decision()
        if decision is None:
            raise GameError(f"{ENV_ID}: the seat is asked to act before any question")
        return decision


__all__ = [
    "ENV_ID",
    "ROLE_OF",
    "MafiaView",
    "SeatedAgent",
    "parse_messages",
    "renamed",
]
