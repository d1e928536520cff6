"""``rl_ins`` (after "Learning to Discuss Strategically", Jin et al. 2024, RL-instructed):
before each ONUW speech a trained policy (``tactics.policy``) picks one of the six tactics
from the player's features (``tactics.features``); the player then speaks in it.

Two ways to speak (``speech``):

- ``llm``: ``llm_ins`` with the policy in place of the LLM's tactic step: the belief step
  before a speech or vote (the paper's framework keeps belief modelling before the
  tactic; ``belief: false`` drops it), then the speech in the chosen tactic. Speech and
  vote 2 LLM calls, night actions 1.
- ``template``: no LLM; the speech is the tactic's template (``tactics.speech``), night
  actions and votes are the scripted player's. The tactics stage trains the policy so.

The tactic goes into the record as the player's private ``reasoning`` (step ``tactic``),
as ``llm_ins`` records its own. Without a policy the tactic is drawn uniformly: the
untrained baseline the trained policy is measured against.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, ClassVar

from stackelberg.agents.baselines import BeliefAgent
from stackelberg.agents.llm_agents import SPEECH_MODES, TemplateSpeech
from stackelberg.agents.prompting import IN_TACTIC, REASONING_STEPS
from stackelberg.agents.prompts.onuw import TACTICS
from stackelberg.agents.tactics.features import features
from stackelberg.agents.tactics.speech import TACTIC_NAMES, TacticSpeaker
from stackelberg.games.base import Decision

#: the route (``evaluation.tournament.build_agent``) whose object is this kind's policy
TACTICS_ROUTE = "tactics"


class RLInstructedAgent(TemplateSpeech, BeliefAgent):
    kind = "rl_ins"
    #: named routes handed to the constructor: the trained policy of a tournament
    route_args: ClassVar[dict[str, str]] = {TACTICS_ROUTE: "policy"}

    def __init__(
        self,
        llm: Any = None,
        policy: Any = None,
        speech: str = "llm",
        belief: bool = True,
        **options: Any,
    ) -> None:
        self.set_speech_mode(speech)
        super().__init__(llm, **options)
        if isinstance(policy, str | Path):
            from stackelberg.agents.tactics.policy import load_policy

            policy = load_policy(policy)
        self.policy = policy
        self.belief = belief

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        #: its own stream: the tactic draws do not move the scripted player's choices
        self.speaker = TacticSpeaker()
        self.speaker.setup(game, player, random.Random(rng.getrandbits(64)))
        #: (features, tactic index) of every speech, for training
        self.choices: list[tuple[list[float], int]] = []

    def tactic(self) -> str:
        """Pick the tactic of the speech about to be made, and note it."""
        self.speaker.observe()
        vector = features(self.speaker)
        if self.policy is None:
            index = self.rng.randrange(len(TACTIC_NAMES))
        else:
            index = self.policy.choose(vector, self.rng)
        self.choices.append((vector, index))
        name, meaning = TACTICS[index]
        self.note("tactic", f"{name}: {meaning}")
        return name

    def template_speech(self) -> str:
        return self.speaker.speech(self.tactic())

    def steps(self, decision: Decision) -> tuple[str, ...]:
        return super().steps(decision) if self.belief else ()

    def act_line(self, decision: Decision) -> str:
        if decision.options is not None:
            return ""
        name = self.tactic()
        self.speaker.spoken += 1  # the LLM speaks in its place; the features count it
        label = REASONING_STEPS["tactic"][0]
        return f"{label}: {name}: {dict(TACTICS)[name]}\n{IN_TACTIC}"


__all__ = ["SPEECH_MODES", "TACTICS_ROUTE", "RLInstructedAgent"]
