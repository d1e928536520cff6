"""``strategist`` (after Strategist, Light et al. 2024): an Avalon player whose moves come
from a search, whose belief is moved by the LLM's ratings, and whose speech pushes the move
it intends.

- Moves (team proposal, team vote, quest card, assassination): a determinized lookahead
  (``lookahead.search``) over the legal options, ``determinizations`` role assignments
  drawn from its belief, leaves valued by the value model the ``strategist`` stage fits on
  scripted self-play (``lookahead.value``; without one, a flat 0.5 where the game is not
  over). A proposal weighs the scripted player's team and the ``max_teams`` teams its
  belief likes best. The scripted player's pick is the default, left only for an option
  whose value beats it by more than ``margin``. No LLM call.
- Belief (``lookahead.belief``): logits per player for evil and for Merlin, from its own
  scripted bookkeeping (posterior, suspicion, "looks like Merlin"); after each discussion
  round, at its proposal or vote, one LLM call rates every other player -2..+2 for evil and
  for Merlin, added as logits (an answer that rates nobody is asked again, at most
  ``max_choice_attempts`` times, then the belief stays as it was).
- Speech, 2 LLM calls: its intended action (the leader: the team its search picks; after
  the leader has announced a team: its searched vote on it; otherwise the players it trusts
  and suspects) and its belief go into the role's dialogue guide (``prompts.avalon.GUIDE``),
  whose answers go into the speech that pushes that action without revealing the role.

With ``speech: template`` it needs no LLM: the belief is the scripted player's alone and
each speech is the scripted player's template around the intended action (its listeners
parse it). The intended action of every searched move and speech (``plan``), the ratings
(``ratings``) and the guide's answers (``guide``) go into the record as its private
reasoning. The choice mode (scored options or answers in words) is accepted as for every
LLM player; its moves come from the search either way, so neither is used.
"""

from __future__ import annotations

import math
import random
from collections.abc import Generator
from pathlib import Path
from typing import Any, ClassVar

from stackelberg.agents.llm_agents import NO_ANSWER, StepsAgent, check_speech_mode
from stackelberg.agents.lookahead.belief import (
    RoleBelief,
    belief_summary,
    parse_ratings,
    rating_summary,
)
from stackelberg.agents.lookahead.search import best, cycle_of, lookahead, reach
from stackelberg.agents.lookahead.value import (
    ValueModel,
    load_value,
    public_p_evil,
    quest_history,
)
from stackelberg.agents.prompting import (
    INTENDED_ACTION,
    PUSH_ACTION,
    option_label,
    player_spec,
)
from stackelberg.agents.prompts import avalon
from stackelberg.agents.scripted.avalon import AvalonScripted, parse_claims
from stackelberg.games.avalon import team_options
from stackelberg.games.base import SPEAK, ConfigError, Decision

#: the route (``evaluation.tournament.build_agent``) whose object is this kind's value model
STRATEGIST_ROUTE = "strategist"
#: new tokens per other player of a rating answer ("Player 2: evil +1, Merlin 0; ")
RATING_TOKENS = 12


class StrategistAgent(StepsAgent):
    kind = "strategist"
    games: ClassVar[tuple[str, ...] | None] = ("avalon",)
    #: named routes handed to the constructor: the fitted value model of a tournament
    route_args: ClassVar[dict[str, str]] = {STRATEGIST_ROUTE: "value"}
    #: without its value model it still plays (the flat value), so self-play may seat it
    plays_untrained: ClassVar[bool] = True

    def __init__(
        self,
        llm: Any = None,
        value: Any = None,
        speech: str = "llm",
        determinizations: int = 6,
        max_teams: int = 4,
        margin: float = 0.02,
        rating_tokens: int | None = None,
        **options: Any,
    ) -> None:
        check_speech_mode(speech)
        if determinizations < 1 or max_teams < 1:
            raise ConfigError(
                f"strategist: determinizations and max_teams must be at least 1, got "
                f"{determinizations} and {max_teams}"
            )
        super().__init__(llm, **options)
        if isinstance(value, str | Path):
            value = load_value(value)
        self.value = value if value is not None else ValueModel()
        self.speech = speech
        self.determinizations = determinizations
        self.max_teams = max_teams
        self.margin = margin
        #: new tokens of a rating answer (None: ``RATING_TOKENS`` per other player)
        self.rating_tokens = rating_tokens

    @classmethod
    def needs_llm(cls, options: dict[str, Any]) -> bool:
        return options.get("speech", "llm") != "template"

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        #: its own bookkeeping of the game (the scripted player's), on its own stream
        self.view = AvalonScripted()
        self.view.setup(game, player, random.Random(rng.getrandbits(64)))
        self.belief = RoleBelief(self.view)
        self.search_rng = random.Random(rng.getrandbits(64))
        self.rated: tuple[int, int] | None = None  # the team cycle whose discussion it rated
        self.rating_reasks = 0
        self.intended = ""

    def seat_facts(self) -> dict[str, Any]:
        return super().seat_facts() if self.speech == "llm" else {}

    # ---- the search -------------------------------------------------------------------------
    def _search(self, options: list[Any], prepare=None) -> list[float] | None:
        samples = self.belief.sample(self.determinizations, self.search_rng)
        seed = self.search_rng.getrandbits(32)
        return lookahead(self.game, self.player, samples, options, self.value, seed, prepare)

    def candidates(self, decision: Decision, default: Any) -> list[Any]:
        """The options the search weighs, ``default`` (the scripted player's pick) first:
        every one, but for a proposal the ``max_teams`` teams with this seat that its belief
        likes best (good: the likeliest clean; evil: the least suspect to the table)."""
        if decision.kind != "propose":
            return [default, *(o for o in decision.options if o != default)]
        me, view = self.player, self.view
        if view.evil:
            public = public_p_evil(view.n, view.n_evil, quest_history(view))
            prior = {p: -public[p] for p in range(view.n)}
        else:
            evil, _ = self.belief.marginals()
            prior = {p: math.log(max(1.0 - evil[p], 1e-9)) for p in range(view.n)}
        teams = [t for t in decision.options if me in t and t != default]
        teams.sort(key=lambda t: (-sum(prior[p] for p in t), t))
        return [default, *teams[: self.max_teams]]

    def move(self, decision: Decision) -> Any:
        """The searched option (the scripted player's when no assignment replays)."""
        options = self.candidates(decision, self.view.act(decision))
        values = self._search(options)
        if values is None:
            self.note("plan", f"{option_label(options[0], decision.kind)} (no search)")
            return options[0]
        choice = best(options, values, self.margin)
        ranked = sorted(zip(values, range(len(options)), strict=True), key=lambda x: (-x[0], x[1]))[
            :3
        ]
        shown = ", ".join(f"{option_label(options[j], decision.kind)} {v:.2f}" for v, j in ranked)
        self.note("plan", f"{option_label(choice, decision.kind)} (search values: {shown})")
        return choice

    def intend(self) -> tuple[str, Any]:
        """What its next speech pushes: ("propose", team), ("approve"/"reject", the team the
        leader announced) or ("trust", (trusted, suspect))."""
        me, view, game = self.player, self.view, self.game
        cycle = cycle_of(game)
        size = view.sizes[game.quest - 1]
        if game.leader == me:
            probe = Decision(me, "propose", team_options(view.n, size), "")
            teams = self.candidates(probe, view.choose_team(size))
            values = self._search(teams, lambda w: reach(w, me, "propose", cycle))
            return "propose", best(teams, values, self.margin) if values else teams[0]
        plan = view.leader_plan
        if plan and len(plan) == size:
            votes = [view.approves(plan, False)]
            votes.append(not votes[0])
            values = self._search(votes, lambda w: reach(w, me, "vote", cycle, forced_team=plan))
            approve = best(votes, values, self.margin) if values else votes[0]
            return ("approve" if approve else "reject"), plan
        others = [p for p in range(view.n) if p != me]
        if view.evil:  # the table's view: back the least suspect, blame a good player
            public = public_p_evil(view.n, view.n_evil, quest_history(view))
            order = sorted(others, key=lambda p: (public[p], p))
            blamed = [p for p in reversed(order) if p not in view.known_evil] or order[-1:]
            return "trust", (tuple(sorted(order[:2])), blamed[0])
        evil, _ = self.belief.marginals()
        order = sorted(others, key=lambda p: (evil[p], p))
        return "trust", (tuple(sorted(order[:2])), order[-1])

    @staticmethod
    def describe(intended: tuple[str, Any]) -> str:
        """The intended action in words, for its prompts and its record."""
        what, arg = intended
        if what == "propose":
            return f"propose the team {option_label(arg)}"
        if what in ("approve", "reject"):
            return f"{what} the team {option_label(arg)} that the leader announced"
        trusted, suspect = arg
        return f"back a team of {option_label(trusted)}; keep Player {suspect + 1} off it"

    def template_speech(self, intended: tuple[str, Any]) -> str:
        """The scripted player's words around the intended action (its listeners parse them)."""
        what, arg = intended
        if what == "propose":
            first = f"I propose {option_label(arg)}."
        elif what == "approve":
            first = "I will approve this team."
        elif what == "reject":
            first = "I vote to reject this team."
        else:
            first = f"{option_label(arg[0])} look trustworthy."
        opinion = self.view.templated_opinion() or ""
        backed = arg if what in ("propose", "approve") else arg[0] if what == "trust" else ()
        if any(p in backed and sign < 0 for p, sign in parse_claims(opinion)):
            opinion = ""  # it would accuse a player it backs
        return f"{first} {opinion}".strip()

    # ---- decisions --------------------------------------------------------------------------
    def _speak_plan(self) -> tuple[str, Any]:
        intended = self.intend()
        self.intended = self.describe(intended)
        self.note("plan", self.intended)
        return intended

    def act(self, decision: Decision) -> Any:
        if self.speech == "llm":
            return super().act(decision)
        self.view.observe()
        if decision.options is not None and len(decision.options) == 1:
            return decision.options[0]
        if decision.kind == SPEAK:
            return self.template_speech(self._speak_plan())
        return self.move(decision)

    def _act(self, decision: Decision, private: str = "") -> Generator[list[Any], list[Any], Any]:
        self.view.observe()
        if decision.options is not None and len(decision.options) == 1:
            self._refresh()
            return decision.options[0]
        if decision.kind == SPEAK:
            self._speak_plan()
            return (yield from super()._act(decision, private))
        self._refresh()
        if self.rated != cycle_of(self.game):  # the first move after a discussion round
            self.rated = cycle_of(self.game)
            yield from self._rate(decision)
        return self.move(decision)

    def steps(self, decision: Decision) -> tuple[str, ...]:
        return ("guide",) if decision.kind == SPEAK else ()

    def step_context(self, name: str) -> str:
        evil, merlin = self.belief.marginals()
        return (
            f"{INTENDED_ACTION}: {self.intended}.\n"
            f"Your belief: {belief_summary(evil, merlin, self.player)}.\n"
            f"{avalon.guide_questions(self.view.my_role)}"
        )

    def act_line(self, decision: Decision) -> str:
        return f"{INTENDED_ACTION}: {self.intended}.\n{PUSH_ACTION}" if self.intended else ""

    def _rate(self, decision: Decision) -> Generator[list[Any], list[Any], None]:
        """The belief step: one LLM call (and its re-asks) rating every other player."""
        n, me = self.game.n_players, self.player
        others = [p for p in range(n) if p != me]
        example = avalon.rating_example(others)
        question = avalon.RATING_QUESTION.format(example=example)
        spec = player_spec(self.game, me, f"{decision.prompt}\n{question}")
        tokens = self.rating_tokens or RATING_TOKENS * len(others)
        messages = self._messages(spec, tokens * self.max_choice_attempts)
        for attempt in range(self.max_choice_attempts):
            self.rating_reasks += attempt > 0
            [[answer]] = yield [self._generate(messages, tokens)]
            if ratings := parse_ratings(answer, n, me):
                self.belief.rate(ratings)
                self.note("ratings", rating_summary(ratings))
                return
            messages = [
                *messages,
                {"role": "assistant", "content": answer.strip() or NO_ANSWER},
                {"role": "user", "content": avalon.RATING_REASK.format(example=example)},
            ]
        self.note("ratings", "(no usable rating: the belief is unchanged)")


__all__ = ["STRATEGIST_ROUTE", "StrategistAgent"]
