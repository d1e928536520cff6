"""The service on the embedded model with a real LoRA adapter: the openai client's requests
of two games answered concurrently, and the Measurer's reward (slow: loads the model)."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest
from llm.test_adapter import adapter_dir  # noqa: F401 (a fixture: a tiny trained-like adapter)

from serving.conftest import WAIT_S, refine_message
from stackelberg.params import Params
from stackelberg.serving.bodies import ServeLimits
from stackelberg.serving.server import bind, load_service, running


@pytest.mark.slow
def test_the_embedded_refiner_serves_the_openai_client(adapter_dir):  # noqa: F811
    params = Params(models={"refiner": {"model": "embedded"}, "measurer": {"model": "embedded"}})
    service = load_service(adapter_dir, params, params.models.measurer)
    assert "+lora:" in service.refiner.model  # the adapter runs beside the weights
    requests = [
        refine_message(game="avalon", speaker=1, next_speaker=2, speaker_role="merlin"),
        refine_message(game="sotopia", speaker=1, next_speaker=2, history=[]),
    ]
    try:
        with running(service, bind("127.0.0.1", 0), ServeLimits()) as (url, _):
            client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
            with ThreadPoolExecutor(2) as pool:
                answers = list(
                    pool.map(
                        lambda m: client.chat.completions.create(
                            model="refiner", messages=[m], seed=1, max_tokens=16
                        ),
                        requests,
                    )
                )
            measured = httpx.post(
                f"{url}/measure",
                json={
                    "game": "werewolf",
                    "speaker": 2,
                    "follower": 3,
                    "candidates": ["Player 4 is a wolf.", "I trust everyone."],
                    "desired": ["I will vote for Player 4."],
                    "undesired": ["I will vote for Player 2."],
                },
                timeout=WAIT_S,
            ).json()
    finally:
        service.close()
    for answer in answers:
        [choice] = answer.choices
        assert choice.message.content.strip() and choice.finish_reason in ("stop", "length")
        assert answer.usage.prompt_tokens > 50 and answer.usage.completion_tokens > 0
    assert len(measured["rewards"]) == 2 and all(math.isfinite(r) for r in measured["rewards"])
