"""``lspo`` (after LSPO, Xu et al. 2025, "Learning Strategic Language Agents in the
Werewolf Game with Iterative Latent Space Policy Optimization"): before each Werewolf
speech a policy solved by CFR on the abstract game (``latent.cfr``) picks one of its
role's latent strategies (clusters of self-play speeches, ``latent.clusters``) from the
speaker's information set (``latent.acts``); the player then speaks in it.

Two ways to speak (``speech``):

- ``llm``: one LLM call, the strategy's description, typical words and its realisation
  at this moment shown before the speech question. Votes and night actions are chosen
  as ``direct`` chooses (one call), since the abstract game plays them by rule. 1 LLM
  call per decision.
- ``template``: no LLM; the speech is the strategy's act as the scripted player says it,
  night actions and votes are the scripted player's. The lspo stage solves the policy so.

The strategy goes into the record as the player's private ``reasoning`` (step
``latent_strategy``), with no LLM call. Without a solved policy (self-play runs before
the lspo stage, as LSPO's first iteration runs before any latent space exists) the
latent strategies are the speech acts themselves, chosen uniformly.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, ClassVar

from stackelberg.agents.latent.acts import ACT_NAMES, LatentSpeaker
from stackelberg.agents.latent.cfr import LatentPolicy
from stackelberg.agents.latent.clusters import Strategy
from stackelberg.agents.llm_agents import StepsAgent, TemplateSpeech
from stackelberg.agents.prompting import IN_LATENT_STRATEGY, REASONING_STEPS
from stackelberg.games.base import Decision

#: the route (``evaluation.tournament.build_agent``) whose object is this kind's policy
LSPO_ROUTE = "lspo"
#: the step name of the chosen strategy in the record
STEP = "latent_strategy"


def act_strategies(role: str) -> tuple[Strategy, ...]:
    """The latent space before any clustering: one strategy per speech act."""
    share = 1.0 / len(ACT_NAMES)
    return tuple(Strategy(role, i, act, share, ()) for i, act in enumerate(ACT_NAMES))


class LSPOAgent(TemplateSpeech, StepsAgent):
    kind = "lspo"
    games: ClassVar[tuple[str, ...] | None] = ("werewolf",)
    #: named routes handed to the constructor: the solved policy of a tournament
    route_args: ClassVar[dict[str, str]] = {LSPO_ROUTE: "policy"}
    #: it self-plays without its route's policy (the speech acts, chosen uniformly)
    plays_untrained: ClassVar[bool] = True

    def __init__(
        self, llm: Any = None, policy: Any = None, speech: str = "llm", **options: Any
    ) -> None:
        self.set_speech_mode(speech)
        super().__init__(llm, **options)
        if isinstance(policy, str | Path):
            from stackelberg.agents.latent.cfr import load_policy

            policy = load_policy(policy)
        self.policy: LatentPolicy | None = policy

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        #: its own stream: the strategy draws do not move the scripted player's choices
        self.speaker = LatentSpeaker()
        self.speaker.setup(game, player, random.Random(rng.getrandbits(64)))
        #: (information set, strategy) of every speech
        self.choices: list[tuple[str, Strategy]] = []

    def strategy(self) -> Strategy:
        """Pick the latent strategy of the speech about to be made, and note it."""
        key = self.speaker.info_set()
        role = self.speaker.my_role
        if self.policy is not None and self.policy.strategies.get(role):
            chosen = self.policy.choose(role, key, self.rng)
        else:
            options = act_strategies(role)
            chosen = options[self.rng.randrange(len(options))]
        self.choices.append((key, chosen))
        self.note(STEP, f"{chosen.name}: {chosen.description}")
        return chosen

    def template_speech(self) -> str:
        return self.speaker.speech(self.strategy().act)

    def act_line(self, decision: Decision) -> str:
        if decision.options is not None:
            return ""
        chosen = self.strategy()
        example = self.speaker.speech(chosen.act)  # how the abstract game says it now
        label = REASONING_STEPS[STEP][0]
        typical = f' Typical words: "{chosen.exemplars[0]}"' if chosen.exemplars else ""
        return (
            f"{label}: {chosen.description}.{typical}\n"
            f'{IN_LATENT_STRATEGY} For instance: "{example}"'
        )


__all__ = ["LSPO_ROUTE", "LSPOAgent", "act_strategies"]
