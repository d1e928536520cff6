"""A local HTTP server speaking the parts of the vLLM/OpenAI and Anthropic APIs we use.

Tokens are characters (id = code point, BOS = 1), or, with ``FakeServer(tokens="words")``,
words that take the space before them, and the log-probability of token t after
token p is a fixed function, so tests know every expected value. Faults can be queued per
path ("429", "429long" (an hour's Retry-After), "500", "529", "hang", "badjson", "401",
"409", "400ctx") or attached to prompts that
contain a marker string (a fault that never clears).

By default chat answers echo the prompt; ``answer`` replaces them with a function of the
conversation (``game_policy.play_answer`` plays games), and ``models`` lists the model
names served (several API models behind one loopback server); ``adapters`` the LoRA modules
served beside them (name -> base model), listed in /v1/models as vLLM lists them (with a
``parent`` and no ``max_model_len``). Completions answer ``n`` samples per request.
"""

from __future__ import annotations

import json
import re
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BOS = 1
MODEL = "fake-model"
CONTEXT = 4096


def check_retry_after_within_bound(llm: Any, server: FakeServer, path: str, log: str) -> None:
    """A backend waits the Retry-After a 429 asks for, and gives up at once (one line) when
    the next asks for more than the retry policy's total bound (``retry_max_total_s=5``)."""
    from stackelberg.llm import RetriesExhaustedError

    server.faults[path] = ["429", "429long"]
    try:
        llm.generate(["x"])
    except RetriesExhaustedError as err:
        assert "gave up after 2 attempts" in str(err) and "\n" not in str(err)
    else:
        raise AssertionError("a Retry-After past the total bound was waited for")
    assert server.count(path) == 2
    assert "retry 1 in 0.10s" in log()


def fake_logprob(prev: int, tok: int) -> float:
    return -((prev * 31 + tok * 7) % 97) / 10.0


def tokenize(text: str, special: bool) -> list[int]:
    return ([BOS] if special else []) + [ord(c) for c in text]


#: The "words" tokenizer: pretokens as byte-level BPE tokenizers cut them (a space joins the
#: word after it, a word is one token), so pieces tokenized one by one differ from the whole
#: text at their boundaries, as with real tokenizers.
_WORDS = re.compile(r"<[a-z]+>| ?[A-Za-z]+| ?\d+| ?[^\sA-Za-z\d]+|\s+(?!\S)|\s+")
_WORD_TEXT: dict[int, str] = {}


def word_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each token of ``text`` under the "words" tokenizer."""
    return [m.span() for m in _WORDS.finditer(text)]


def word_tokenize(text: str, special: bool) -> list[int]:
    ids = []
    for start, end in word_spans(text):
        tid = 2 + zlib.crc32(text[start:end].encode()) % 50_000
        _WORD_TEXT[tid] = text[start:end]
        ids.append(tid)
    return ([BOS] if special else []) + ids


def render(messages: list[dict[str, str]]) -> str:
    return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


class FakeServer:
    def __init__(self, tokens: str = "chars") -> None:
        #: the tokenizer of /tokenize and /detokenize: "chars" (one per character) or "words"
        self.tokenize = {"chars": tokenize, "words": word_tokenize}[tokens]
        self.detokenize = {"chars": chr, "words": _WORD_TEXT.__getitem__}[tokens]
        self.faults: dict[str, list[str]] = {}
        self.poison: dict[str, str] = {}  # marker in the prompt -> fault, every time
        self.requests: list[tuple[str, dict[str, Any]]] = []
        #: (system text or None, messages, sample index) -> the assistant's answer
        self.answer: Any = None
        self.models: set[str] = {MODEL}
        self.adapters: dict[str, str] = {}  # LoRA module name -> its base model
        self.hang_s = 1.0
        self.delay_s = 0.0
        self.inflight = 0
        self.max_inflight = 0
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def listed(self) -> list[dict[str, Any]]:
        """/v1/models: the fake model with its window, the other models (whose windows the
        server does not say), the adapters with their parent."""
        others = [{"id": m, "object": "model"} for m in sorted(self.models - {MODEL})]
        adapters = [
            {"id": name, "object": "model", "parent": parent, "root": f"/adapters/{name}"}
            for name, parent in sorted(self.adapters.items())
        ]
        return [{"id": MODEL, "object": "model", "max_model_len": CONTEXT}, *others, *adapters]

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if p == path)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            # keep-alive, as vLLM's server: a connection (and a thread here) per client
            # connection, not per request; without Nagle's delay between headers and body
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                self.done()  # before the client can read the answer and send the next request
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                try:
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a "hang" past its timeout)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self.send(200, {"data": server.listed()})
                else:
                    self.send(404, {"error": {"message": "no route"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                with server._lock:
                    server.requests.append((self.path, body))
                    self.in_flight = True
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                    queue = server.faults.get(self.path, [])
                    fault = queue.pop(0) if queue else None
                text = json.dumps(body) if server.poison else ""
                for marker, f in server.poison.items():
                    if marker in text:
                        fault = f
                try:
                    if server.delay_s:
                        time.sleep(server.delay_s)
                    if fault and self.fault(fault):
                        return
                    self.route(body)
                finally:
                    self.done()

            def done(self) -> None:
                """This request no longer counts as in flight (once)."""
                with server._lock:
                    if getattr(self, "in_flight", False):
                        self.in_flight = False
                        server.inflight -= 1

            def fault(self, fault: str) -> bool:
                """Answer with the fault; False when the fault only delays ("hang")."""
                anthropic = self.path.startswith("/v1/messages")
                if fault == "hang":
                    time.sleep(server.hang_s)
                    return False
                if fault == "badjson":
                    self.send(200, b'{"choices": [ this is not json')
                elif fault in ("429", "429long"):
                    wait = "3600" if fault == "429long" else "0.1"
                    self.send(429, {"error": {"message": "slow down"}}, {"retry-after": wait})
                elif fault == "409":  # the Anthropic SDK would retry it; we do not
                    self.send(409, {"error": {"type": "conflict_error", "message": "conflict"}})
                elif fault in ("500", "529"):
                    self.send(int(fault), {"error": {"type": "api_error", "message": "boom"}})
                elif fault == "401":
                    self.send(
                        401, {"error": {"type": "authentication_error", "message": "bad key"}}
                    )
                elif fault == "400ctx":
                    msg = (
                        "prompt is too long: 300000 tokens > 200000 maximum"
                        if anthropic
                        else "This model's maximum context length is 4096 tokens."
                    )
                    self.send(
                        400,
                        {
                            "type": "error",
                            "error": {"type": "invalid_request_error", "message": msg},
                        },
                    )
                return True

            def route(self, body: dict[str, Any]) -> None:
                model = body.get("model")
                if self.path in ("/v1/chat/completions", "/v1/completions", "/v1/messages"):
                    if model not in server.models and model not in server.adapters:
                        err = {
                            "type": "not_found_error",
                            "message": f"The model `{model}` does not exist.",
                        }
                        self.send(404, {"type": "error", "error": err})
                        return
                if self.path == "/tokenize":
                    if "messages" in body:
                        tokens = server.tokenize(render(body["messages"]), True)
                    else:
                        special = body.get("add_special_tokens", True)
                        tokens = server.tokenize(body["prompt"], special)
                    self.send(
                        200, {"count": len(tokens), "max_model_len": CONTEXT, "tokens": tokens}
                    )
                elif self.path == "/detokenize":
                    text = "".join(server.detokenize(t) for t in body["tokens"] if t != BOS)
                    self.send(200, {"prompt": text})
                elif self.path == "/v1/chat/completions":
                    last = body["messages"][-1]["content"]
                    choices = [
                        {
                            "index": i,
                            "message": {"role": "assistant", "content": self.chat(body, i)},
                        }
                        for i in range(body.get("n", 1))
                    ]
                    self.send(200, {"choices": choices})
                elif self.path == "/v1/completions":
                    prompt = body["prompt"]
                    choice: dict[str, Any] = {"index": 0, "text": "x"}
                    if isinstance(prompt, list):
                        entries: list[Any] = [None]
                        for prev, tok in zip(prompt, prompt[1:], strict=False):
                            entries.append(
                                {str(tok): {"logprob": fake_logprob(prev, tok), "rank": 3}}
                            )
                        choice["prompt_logprobs"] = entries
                        self.send(200, {"choices": [choice]})
                    else:
                        n = body.get("n", 1)
                        self.send(
                            200,
                            {
                                "choices": [
                                    {"index": i, "text": self.text(prompt, body, i)}
                                    for i in range(n)
                                ]
                            },
                        )
                elif self.path == "/v1/messages":
                    last = body["messages"][-1]["content"]
                    text = f"claude:{last[-12:]}|sys={body.get('system')}|stop={body.get('stop_sequences')}"
                    if server.answer is not None:
                        text = server.answer(body.get("system"), body["messages"], 0)
                    self.send(
                        200,
                        {
                            "id": "msg_1",
                            "type": "message",
                            "role": "assistant",
                            "model": model,
                            "content": [{"type": "text", "text": text}],
                            "stop_reason": "end_turn",
                            "stop_sequence": None,
                            "usage": {"input_tokens": 3, "output_tokens": 5},
                        },
                    )
                else:
                    self.send(404, {"error": {"message": f"no route {self.path}"}})

            def chat(self, body: dict[str, Any], i: int) -> str:
                messages = body["messages"]
                if server.answer is None:
                    return self.text(messages[-1]["content"], body, i)
                system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
                rest = [m for m in messages if m["role"] != "system"]
                return server.answer(system or None, rest, i)

            @staticmethod
            def text(prompt: str, body: dict[str, Any], i: int) -> str:
                return (
                    f"echo:{prompt[-12:]}|seed={body.get('seed')}|i={i}|t={body.get('temperature')}"
                )

        return Handler
