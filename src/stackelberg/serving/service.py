"""The Refiner and the Measurer behind the endpoints, without HTTP: a batch of jobs in, one
answer (or error) per job out.

The refine jobs of a batch share one ``run_batch`` call, as the tournaments' tables do. Each
runs the game's Refiner profile, as training and play do (``Params.refiner_profile``: its
prompt and budget, and its token limit, temperature and top_p unless the request sets
them), and its completions are read as training reads them (``RefinerProfile.read``). A
batch whose call fails runs again one job at a time, so that a request the model cannot
take fails alone. A measure job is one ``measure`` call, the
pipeline's: the follower's history fitted with room for a Refiner completion, so a candidate
gets the reward the score stage would give it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from stackelberg.agents.refiner import Candidate, RefinerProfile, completion_tokens
from stackelberg.games import GameError
from stackelberg.llm import ContextLengthError, GenerateRequest
from stackelberg.params import Params
from stackelberg.persuasion.context import InstanceView
from stackelberg.persuasion.measurer import measure
from stackelberg.serving.bodies import MeasureBody, RefineContext, RequestError

#: the served models' ids (GET /v1/models)
REFINER_ID = "refiner"
MEASURER_ID = "measurer"


@dataclass(frozen=True)
class RefineJob:
    """One refine request: its context and how to sample (None: as the Refiner was trained)."""

    context: RefineContext
    n: int = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class MeasureJob:
    body: MeasureBody


class Refined(NamedTuple):
    """A refine job's answer: its completions read, and the tokens of its prompt and of each
    completion."""

    candidates: list[Candidate]
    prompt_tokens: int
    completion_tokens: list[int]


@dataclass(frozen=True)
class ToldView(InstanceView):
    """An instance a client tells as text: the follower's history lines are given, not
    rebuilt from a record's events (the Measurer reads them as its follower's view or, under
    ``score.follower_history: global_log``, as the log)."""

    history: tuple[str, ...] = ()

    def lines(self, viewer: int) -> list[str]:
        return list(self.history)

    def global_lines(self) -> list[str]:
        return list(self.history)


class _Prepared(NamedTuple):
    request: GenerateRequest
    job: RefineJob
    profile: RefinerProfile


def as_request_error(err: Exception) -> Exception:
    """A user's mistake found while serving (a bad game option, a prompt over the model's
    window) as a RequestError; any other error stays what it is (a server error)."""
    if isinstance(err, GameError | ContextLengthError):
        return RequestError(str(err))
    return err


class RefinerService:
    """The loaded models and the params that say how the Refiner was trained."""

    def __init__(self, refiner: Any, params: Params, measurer: Any = None) -> None:
        self.refiner = refiner
        self.params = params
        self.measurer = measurer

    def close(self) -> None:
        for llm in (self.refiner, self.measurer):
            if llm is not None:
                llm.close()

    @property
    def models(self) -> list[str]:
        return [REFINER_ID] + ([MEASURER_ID] if self.measurer is not None else [])

    def serve(self, jobs: Sequence[RefineJob | MeasureJob]) -> list[Any]:
        """Each job's answer (``Refined``, or a measure's dict) or the error it met, in order."""
        answers: list[Any] = [None] * len(jobs)
        prepared: dict[int, _Prepared] = {}
        for i, job in enumerate(jobs):
            try:
                if isinstance(job, RefineJob):
                    prepared[i] = self._prepare(job)
                else:
                    answers[i] = self._measure(job.body)
            except Exception as err:  # noqa: BLE001 (one job's error is its own answer)
                answers[i] = as_request_error(err)
        for i, answer in zip(prepared, self._generate(list(prepared.values())), strict=True):
            answers[i] = answer
        return answers

    def _prepare(self, job: RefineJob) -> _Prepared:
        """The job's generation request: the Refiner's trained prompt for the context."""
        context = job.context
        game = context.table()
        profile = self.params.refiner_profile(context.game).overridden(
            job.max_tokens, job.temperature, job.top_p
        )
        follower = context.next_speaker - 1 if context.next_speaker is not None else None
        messages = profile.messages(
            self.refiner, game, context.speaker - 1, follower, context.draft, context.history
        )
        return _Prepared(profile.request(messages, job.n, job.seed), job, profile)

    def _generate(self, prepared: list[_Prepared]) -> list[Any]:
        """Every prepared job's completions from one batched call; after a failed call, from
        one call per job (each failing alone)."""
        if not prepared:
            return []
        try:
            outputs: list[Any] = self.refiner.run_batch([p.request for p in prepared])
        except Exception:  # noqa: BLE001 (retried one by one below)
            outputs = []
            for p in prepared:
                try:
                    outputs.extend(self.refiner.run_batch([p.request]))
                except Exception as err:  # noqa: BLE001
                    outputs.append(as_request_error(err))
        return [
            texts if isinstance(texts, Exception) else self._read(p, texts)
            for p, texts in zip(prepared, outputs, strict=True)
        ]

    def _read(self, prepared: _Prepared, texts: list[str]) -> Refined:
        draft = prepared.job.context.draft
        return Refined(
            [prepared.profile.read(self.refiner, t, draft) for t in texts],
            int(self.refiner.count_tokens(prepared.request.prompt)),
            [completion_tokens(self.refiner, t) for t in texts],
        )

    def _measure(self, body: MeasureBody) -> dict[str, Any]:
        """The Measurer's reward of each candidate, its parts, and the history lines cut."""
        if self.measurer is None:
            raise RequestError(
                "the Measurer is not served here; start the server with --measurer", 404
            )
        game = body.table()
        view = ToldView(
            game, body.speaker - 1, body.follower - 1, len(game.events), "", {}, tuple(body.history)
        )
        settings = self.params.for_game("score", body.game)
        room = self.params.refiner_profile(body.game).token_limit
        parts, cut = measure(
            self.measurer, view, body.candidates, body.desired, body.undesired, settings, room
        )
        return {
            "rewards": [p.reward for p in parts],
            "parts": [p.as_dict() for p in parts],
            "history_lines_cut": cut,
        }
