"""Intent identification (the method's step 1): K desired and K undesired follower responses.

The labeler reads the rules, the game so far, the speaker's role (or, with
``full_information``, every role) and the base utterance (or, without
``show_base_utterance``, as the paper's release does, only that the speaker is about to
talk), and writes responses in the follower's own voice. Three schemes: ``per_response``
asks an LLM for one sentence per generation, with a concrete example, which a 135M model
can follow; ``json`` asks a strong model for all 2K at once; ``scripted`` needs no LLM: it
writes them from the game's truth in the scripted players' sentences (``truth``), since a
135M labeler's sentences rarely say who to trust or vote for. Unusable LLM output is asked
again with a stricter (repair) prompt, a bounded number of times; an instance still short
of K+K valid responses is dropped and counted. A labeler that drops more than
``max_dropped_share`` of its instances stops the stage (``Dropped.check``), quoting one of
its answers: its answers are not in the asked form, and later stages would have nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from stackelberg.agents.prompting import (
    PromptSpec,
    clean_speech,
    fitted_messages,
    identity,
    rules_text,
)
from stackelberg.datasets import NothingToWorkWithError
from stackelberg.llm import GenerateRequest
from stackelberg.persuasion.context import InstanceView
from stackelberg.persuasion.truth import scripted_intents
from stackelberg.settings import SamplingSettings

DESIRED, UNDESIRED = "desired", "undesired"
#: the rule-based scheme, and the labeler it names in the intents dataset
SCRIPTED = "scripted"
_EXAMPLES = {
    DESIRED: ("I agree with {s}.", "{s} makes a good point, I trust {s}.", "I will vote with {s}."),
    UNDESIRED: ("I think {s} is lying.", "I do not trust {s}.", "{s} is suspicious to me."),
}
_JUNK = re.compile(r"game so far|analysis:|response:|desired|undesired|\{|\}|example", re.I)


class LabelSettings(SamplingSettings):
    """How intents are labeled: the ``label`` section of params.yaml."""

    k: int = Field(3, ge=1, description="desired and undesired responses per instance")
    full_information: bool = Field(
        True,
        description="the labeler sees every role (paper; scripted: the game's truth, ONUW's "
        "cards at the end of the night); false: the speaker's view (release)",
    )
    show_base_utterance: bool = Field(
        True,
        description="the labeler reads the speech it labels (false: the release labels "
        "before the speaker talks)",
    )
    scheme: Literal["per_response", "json", "scripted"] = Field(
        "per_response",
        description="per_response: one LLM generation per response (small models); json: "
        "all of them in one LLM answer (strong models); scripted: no LLM, the scripted "
        "players' sentences about who to trust, suspect or vote for (Sotopia: agree to the "
        "speaker's goal or refuse), chosen by the game's truth (models.labeler unused)",
    )
    max_attempts: int = Field(
        3, ge=1, description="LLM schemes: tries per response before dropping"
    )
    max_new_tokens: int = Field(32, ge=8, description="LLM schemes: new tokens per labeler answer")
    max_dropped_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="the share of a labeler's instances it may leave short of k desired and k "
        "undesired usable responses (dropped); above it the label stage stops, naming the "
        "labeler and quoting one of its answers (1: never stop)",
    )


@dataclass
class Labels:
    desired: list[str] = field(default_factory=list)
    undesired: list[str] = field(default_factory=list)
    attempts: int = 0
    #: the first labeler answer that gave no usable response (quoted by ``Dropped.check``)
    unusable: str | None = None

    def reject(self, answer: str) -> None:
        if self.unusable is None:
            self.unusable = answer

    def missing(self, polarity: str, k: int) -> int:
        return max(0, k - len(getattr(self, polarity)))

    def complete(self, k: int) -> bool:
        return not self.missing(DESIRED, k) and not self.missing(UNDESIRED, k)


def _system(view: InstanceView, full_information: bool) -> str:
    game = view.game
    if full_information:
        who = f"Everyone's secret roles: {view.role_list()}."
    else:
        who = identity(game, view.speaker)
    return f"{rules_text(game)}\n\n{who}"


def _role(view: InstanceView) -> str:
    return view.game.players[view.speaker].role.replace("_", " ")


def _situation(view: InstanceView, show_base_utterance: bool) -> str:
    """The speech being labeled, or (release) only that its speaker is about to talk."""
    s = view.speaker_name
    if show_base_utterance:
        return f'{s} (secretly {_role(view)}) just said: "{view.base_utterance}"'
    return f"{s} (secretly {_role(view)}) is about to speak."


def per_response_question(
    view: InstanceView, polarity: str, k: int, repair: bool, show_base_utterance: bool = True
) -> str:
    s, f = view.speaker_name, view.follower_name
    want = "WANTS" if polarity == DESIRED else "does NOT want"
    example = _EXAMPLES[polarity][k % len(_EXAMPLES[polarity])].format(s=s)
    question = (
        f"{_situation(view, show_base_utterance)}\n"
        f"{f} speaks next. Write one sentence that {f} could say, which {s} {want} to hear. "
        f'For example: "{example}"'
    )
    if repair:
        question += f"\nAnswer with that one sentence only, in the first person, as {f}."
    return question


def json_question(
    view: InstanceView, k: int, repair: bool, show_base_utterance: bool = True
) -> str:
    s, f = view.speaker_name, view.follower_name
    question = (
        f"{_situation(view, show_base_utterance)}\n"
        f"{f} speaks next. Write {k} things {f} could say that {s} wants to hear (desired) "
        f"and {k} that {s} does not want to hear (undesired), each one sentence in {f}'s "
        f'own voice. Answer with JSON only: {{"desired": [...], "undesired": [...]}}'
    )
    if repair:
        question += f"\nYour last answer was not valid JSON with {k} strings in each list."
    return question


def valid_response(text: str, view: InstanceView, taken: Sequence[str]) -> str | None:
    """A cleaned response, or None if it is not a usable follower sentence."""
    text = clean_speech(text, max_sentences=2)
    words = len(text.split())
    if not 3 <= words <= 40 or _JUNK.search(text):
        return None
    norm = text.lower()
    if norm == view.base_utterance.lower() or norm in (t.lower() for t in taken):
        return None
    return text


def label_views(
    llm: Any, views: Sequence[InstanceView], settings: LabelSettings, seeds: Sequence[int]
) -> list[Labels]:
    """Label every view, batching all open requests of an attempt into one call.

    Per response scheme: one prompt per instance and polarity, sampled n times for the
    missing responses (the prompt is read once for its n samples). Scripted scheme: no
    ``llm`` (None) and no attempts; the seeds pick among the sentences.
    """
    if settings.scheme == SCRIPTED:
        return [
            scripted_labels(view, settings, seed) for view, seed in zip(views, seeds, strict=True)
        ]
    labels = [Labels() for _ in views]
    for attempt in range(settings.max_attempts):
        requests, owners = [], []
        for i, (view, lab) in enumerate(zip(views, labels, strict=True)):
            if lab.complete(settings.k):
                continue
            lab.attempts += 1
            repair = attempt > 0
            system = _system(view, settings.full_information)
            if settings.scheme == "json":
                tokens = settings.max_new_tokens * 2 * settings.k
                spec = PromptSpec(
                    system, json_question(view, settings.k, repair, settings.show_base_utterance)
                )
                messages = _fit(llm, spec, view, settings, tokens)
                requests.append(_request(messages, settings, seeds[i] * 100 + attempt, tokens, 1))
                owners.append((i, None))
                continue
            for polarity in (DESIRED, UNDESIRED):
                if missing := lab.missing(polarity, settings.k):
                    k_index = len(getattr(lab, polarity))
                    question = per_response_question(
                        view, polarity, k_index, repair, settings.show_base_utterance
                    )
                    spec = PromptSpec(system, question)
                    messages = _fit(llm, spec, view, settings, settings.max_new_tokens)
                    seed = (seeds[i] * 100 + attempt) * 2 + (polarity == UNDESIRED)
                    requests.append(
                        _request(messages, settings, seed, settings.max_new_tokens, missing)
                    )
                    owners.append((i, polarity))
        if not requests:
            break
        answers = llm.run_batch(requests)
        for (i, polarity), texts in zip(owners, answers, strict=True):
            lab, view = labels[i], views[i]
            for text in texts:
                if polarity is None:
                    if not _take_json(text, view, lab, settings.k):
                        lab.reject(text)
                    continue
                got = getattr(lab, polarity)
                if len(got) < settings.k:
                    if ok := valid_response(text, view, lab.desired + lab.undesired):
                        got.append(ok)
                    else:
                        lab.reject(text)
    return labels


@dataclass(frozen=True)
class Dropped:
    """The instances one labeler left short of k desired and k undesired usable responses,
    summed over a stage's batches: too many stop the stage (``check``)."""

    instances: int = 0
    dropped: int = 0
    #: one of its answers that gave no usable response, quoted by ``check``
    answer: str | None = None

    @classmethod
    def of(cls, labels: Sequence[Labels], k: int) -> Dropped:
        short = [lab for lab in labels if not lab.complete(k)]
        answer = next((lab.unusable for lab in short if lab.unusable is not None), None)
        return cls(len(labels), len(short), answer)

    def __add__(self, other: Dropped) -> Dropped:
        answer = self.answer if self.answer is not None else other.answer
        return Dropped(self.instances + other.instances, self.dropped + other.dropped, answer)

    def check(self, labeler: str, settings: LabelSettings) -> None:
        """Stop in one line when ``labeler`` dropped more than ``max_dropped_share`` of its
        instances: its answers are not in the asked form, and later stages would have
        (nearly) nothing to work with."""
        if not self.instances or self.dropped / self.instances <= settings.max_dropped_share:
            return
        quote = (
            "none came back" if self.answer is None else NothingToWorkWithError.quote(self.answer)
        )
        raise NothingToWorkWithError(
            f"labeler {labeler} dropped {self.dropped} of {self.instances} instances "
            f"({self.dropped / self.instances:.0%}), more than label.max_dropped_share "
            f"{settings.max_dropped_share:g}: its answers gave fewer than {settings.k} desired "
            f"and {settings.k} undesired usable responses ({settings.scheme} scheme); one "
            f"answer: {quote}"
        )


def scripted_labels(view: InstanceView, settings: LabelSettings, seed: int) -> Labels:
    desired, undesired = scripted_intents(
        view, settings.k, settings.full_information, settings.show_base_utterance, seed
    )
    return Labels(desired, undesired)


def _fit(llm: Any, spec: PromptSpec, view: InstanceView, settings: LabelSettings, reserve: int):
    limit = min(settings.max_prompt_tokens, llm.context_window)
    messages, _ = fitted_messages(llm, spec, view.lines(view.speaker), reserve, limit)
    return messages


def _request(
    messages: list[dict], settings: LabelSettings, seed: int, tokens: int, n: int
) -> GenerateRequest:
    return GenerateRequest(
        messages,
        n=n,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_new_tokens=tokens,
        stop=("\n",) if settings.scheme == "per_response" else (),
        seed=seed,
    )


def _take_json(text: str, view: InstanceView, lab: Labels, k: int) -> int:
    """Take the usable responses of a JSON answer; how many it gave."""
    match = re.search(r"\{.*\}", text, re.S)
    try:
        data = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        return 0
    if not isinstance(data, dict):
        return 0
    before = len(lab.desired) + len(lab.undesired)
    for polarity in (DESIRED, UNDESIRED):
        items = data.get(polarity)
        if not isinstance(items, list):
            continue
        got = getattr(lab, polarity)
        for item in items:
            if len(got) < k and isinstance(item, str):
                if ok := valid_response(item, view, lab.desired + lab.undesired):
                    got.append(ok)
    return len(lab.desired) + len(lab.undesired) - before
