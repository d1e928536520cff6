"""The HTTP endpoints (FastAPI): OpenAI's chat completions and model list, and the Measurer.

- ``POST /v1/chat/completions``: an OpenAI chat request whose last message holds the refine
  request (``bodies.RefineContext``); each choice is a rewrite of the draft, with the raw
  completion beside it (``choices[i].refiner``).
- ``GET /v1/models``: the served ids, ``refiner`` (and ``measurer``).
- ``POST /v1/measure``: the Measurer's reward of candidates (``bodies.MeasureBody``).

Every error is OpenAI's error object with one line (``{"error": {"message", "type",
"param", "code"}}``): 400 for a malformed request, 404 for an unknown model or path, 413 for
a body over the limit, 503 with ``Retry-After`` when the queue is full, 500 (logged here, one
line there) for a failure of the server's own. The body is read and checked here; the work
goes to the collector's model thread.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from stackelberg.serving.bodies import (
    ChatBody,
    MeasureBody,
    RequestError,
    ServeLimits,
    checked,
    parse_json,
)
from stackelberg.serving.collector import Busy, Collector
from stackelberg.serving.service import (
    MEASURER_ID,
    REFINER_ID,
    MeasureJob,
    Refined,
    RefineJob,
    RefinerService,
)

log = logging.getLogger(__name__)
#: what an oversized body may still send, read and dropped, before the answer (413): a client
#: that is still writing its body when the answer comes reads a broken connection instead
DRAIN_FACTOR = 16
#: the status of a request whose client left before its answer (nginx's; nobody reads it)
CLIENT_GONE = 499
#: the seeds a request without one draws from
SEEDS = 2**31


def error_response(message: str, status: int, kind: str, headers: dict | None = None) -> Response:
    code = {404: "not_found", 413: "body_too_large", 503: "server_busy"}.get(status)
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, or a 413 RequestError once it passes ``limit`` bytes."""
    body = bytearray()
    seen = 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen <= limit:
            body += chunk
        elif seen > limit * DRAIN_FACTOR:
            break
    if seen > limit:
        raise RequestError(f"body: over {limit} bytes; this server takes at most {limit}", 413)
    return bytes(body)


async def client_gone(request: Request) -> None:
    """Returns when the client disconnects (the body is read: what comes next is that)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def answered(request: Request, future: Any) -> Any:
    """The job's answer; None if the client left first (its job is then cancelled, dropped
    from the queue if its batch has not started)."""
    waiting = asyncio.wrap_future(future)
    gone = asyncio.ensure_future(client_gone(request))
    done, _ = await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
    if waiting in done:
        gone.cancel()
        return waiting.result()
    waiting.cancel()
    return None


def completion(refined: Refined) -> dict[str, Any]:
    """A refine job's answer as OpenAI's chat completion object."""
    used = sum(refined.completion_tokens)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": REFINER_ID,
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": c.utterance},
                "finish_reason": "stop" if c.ended else "length",
                "logprobs": None,
                "refiner": {"raw": c.raw, "parsed": c.parsed, "ended": c.ended},
            }
            for i, c in enumerate(refined.candidates)
        ],
        "usage": {
            "prompt_tokens": refined.prompt_tokens,
            "completion_tokens": used,
            "total_tokens": refined.prompt_tokens + used,
        },
    }


def create_app(service: RefinerService, collector: Collector, limits: ServeLimits) -> FastAPI:
    """The endpoints over ``service``, its work queued on ``collector`` (started by the
    caller)."""
    app = FastAPI(title="Stackelberg Refiner", docs_url=None, redoc_url=None, openapi_url=None)
    started = int(time.time())

    async def queued(request: Request, job: Any) -> Any:
        return await answered(request, collector.submit(job))

    async def respond(request: Request, handle: Any) -> Response:
        try:
            answer = await handle(request)
        except ClientDisconnect:  # gone while sending its body
            return Response(status_code=CLIENT_GONE)
        except RequestError as err:
            return error_response(str(err), err.status, err.kind)
        except Busy as err:
            return error_response(
                str(err), 503, "server_busy", {"Retry-After": str(err.retry_after)}
            )
        except Exception as err:  # noqa: BLE001 (the server answers every request)
            log.exception("request failed")
            line = str(err).split("\n")[0] or type(err).__name__
            return error_response(f"the server failed: {line}", 500, "server_error")
        if answer is None:
            return Response(status_code=CLIENT_GONE)
        return JSONResponse(answer)

    async def chat(request: Request) -> Any:
        data = parse_json(await read_body(request, limits.max_body_bytes), "body")
        body = checked(ChatBody, data, "body").check(limits)
        if body.model != REFINER_ID:
            raise RequestError(
                f"model {body.model!r} is not served here; use {REFINER_ID!r}",
                404,
                "not_found_error",
            )
        seed = body.seed if body.seed is not None else secrets.randbelow(SEEDS)
        job = RefineJob(
            body.context(limits), body.n, body.temperature, body.top_p, body.token_limit, seed
        )
        refined = await queued(request, job)
        return None if refined is None else completion(refined)

    async def measured(request: Request) -> Any:
        data = parse_json(await read_body(request, limits.max_body_bytes), "body")
        body = checked(MeasureBody, data, "body").check(limits)
        answer = await queued(request, MeasureJob(body))
        return None if answer is None else {"object": "measure", "model": MEASURER_ID, **answer}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        return await respond(request, chat)

    @app.post("/v1/measure")
    async def measure(request: Request) -> Response:
        return await respond(request, measured)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        data = [
            {"id": m, "object": "model", "created": started, "owned_by": "stackelberg"}
            for m in service.models
        ]
        return {"object": "list", "data": data}

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException) -> Response:
        """An unknown path (404) or method (405), as OpenAI's error object."""
        message = f"{request.method} {request.url.path}: {err.detail}"
        return error_response(message, err.status_code, "invalid_request_error", err.headers)

    return app
