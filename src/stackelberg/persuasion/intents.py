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

With ``both_views`` every instance is labeled from both views, full information and the
speaker's own (``VIEWS``): the other view's responses go beside the first's (``Labels.other``;
the intents' ``other_desired`` and ``other_undesired`` columns), so that a Refiner can train
on either and every Refiner can be scored against both (the paper's second named limit).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

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
#: the labeler's two views of a speech: every role known (the paper), or only what the
#: speaker knows (what a player has at play time)
FULL_INFORMATION, SPEAKER_ONLY = "full_information", "speaker_only"
View = Literal["full_information", "speaker_only"]
VIEWS: tuple[str, ...] = get_args(View)
#: the intents' columns of the other view's responses (``both_views``; null without it)
OTHER_DESIRED, OTHER_UNDESIRED = "other_desired", "other_undesired"
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
    both_views: bool = Field(
        False,
        description="also label every instance from the other view (full_information's "
        "opposite) into the intents' other_desired and other_undesired columns: for a Refiner "
        "trained on that view (grpo.views: speaker_only or full_information) and the "
        "held-out table of both views; an LLM labeler labels twice (an instance is kept when "
        "both views are complete), the scripted one at no cost",
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

    @property
    def view(self) -> str:
        """The view these settings label from (``VIEWS``)."""
        return view_name(self.full_information)

    def other_view(self) -> LabelSettings:
        """The same labeling from the other view."""
        return self.model_copy(update={"full_information": not self.full_information})


def view_name(full_information: bool) -> str:
    return FULL_INFORMATION if full_information else SPEAKER_ONLY


def other_view_row(row: dict[str, Any]) -> dict[str, Any]:
    """An intents row with the other view's responses as its desired and undesired ones
    (``both_views``): what a Refiner trained on that view, or scored against it, reads."""
    if not row.get(OTHER_DESIRED) or not row.get(OTHER_UNDESIRED):
        raise NothingToWorkWithError(
            f"instance {row['instance_id']}: no other view's intents; set label.both_views: "
            "true and run the label stage again"
        )
    return {**row, DESIRED: row[OTHER_DESIRED], UNDESIRED: row[OTHER_UNDESIRED]}


@dataclass
class Labels:
    desired: list[str] = field(default_factory=list)
    undesired: list[str] = field(default_factory=list)
    attempts: int = 0
    #: the first labeler answer that gave no usable response (quoted by ``Dropped.check``)
    unusable: str | None = None
    #: the same instance labeled from the other view (``both_views``)
    other: Labels | None = None

    def reject(self, answer: str) -> None:
        if self.unusable is None:
            self.unusable = answer

    def missing(self, polarity: str, k: int) -> int:
        return max(0, k - len(getattr(self, polarity)))

    def complete(self, k: int) -> bool:
        """k desired and k undesired responses, from each view labeled."""
        own = not self.missing(DESIRED, k) and not self.missing(UNDESIRED, k)
        return own and (self.other is None or self.other.complete(k))

    @property
    def total_attempts(self) -> int:
        return self.attempts + (self.other.attempts if self.other else 0)

    @property
    def first_unusable(self) -> str | None:
        if self.unusable is not None or self.other is None:
            return self.unusable
        return self.other.unusable


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
    """Label every view (``label_one_view``); with ``both_views``, again from the other
    view, into each label's ``other``."""
    labels = label_one_view(llm, views, settings, seeds)
    if settings.both_views:
        others = label_one_view(llm, views, settings.other_view(), seeds)
        for lab, other in zip(labels, others, strict=True):
            lab.other = other
    return labels


def label_one_view(
    llm: Any, views: Sequence[InstanceView], settings: LabelSettings, seeds: Sequence[int]
) -> list[Labels]:
    """Label every view from ``settings``' view, batching all open requests of an attempt
    into one call.

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
        answer = next((a for lab in short if (a := lab.first_unusable) is not None), None)
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
