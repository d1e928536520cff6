"""Benchmark: LLM calls per game when players choose by scoring and by generating.

Every seat is a ``direct`` player against the project's loopback test server
(tests/llm/fake_server.py), which answers as a pretend chat model that plays games: it
names options by number, by their words, by an illegal player, or by nothing, and about one
choice in eleven it never gives a usable answer (so the re-asks run out). Two ways:

- ``generate``: the Anthropic messages protocol (Claude's); a choice is a numbered list
  answered in words, re-asked with a reason when the answer names no legal option;
- ``score``: vLLM's protocol; a choice scores each option's words through prompt_logprobs.

Counts are HTTP requests the server received, per game (speech and react thoughts
included; /tokenize calls listed apart). Prints one JSON line per game kind and way.

    python bench/choice_calls.py [--games 10] [--agent direct]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from llm.fake_server import FakeServer  # noqa: E402
from llm.game_policy import play_answer  # noqa: E402

from stackelberg.agents import make_agent  # noqa: E402
from stackelberg.agents.runner import Table, play_tables  # noqa: E402
from stackelberg.games import GAMES, make_game  # noqa: E402
from stackelberg.llm import make_llm  # noqa: E402

MODELS = {"generate": "claude-3-5-haiku-latest", "score": "Qwen/Qwen2.5-72B-Instruct"}


def backend(way: str, url: str):
    if way == "generate":
        os.environ.setdefault("ANTHROPIC_API_KEY", "bench")
        return make_llm(backend="anthropic", model=MODELS[way], base_url=url, cache="off")
    return make_llm(backend="openai", model=MODELS[way], base_url=f"{url}/v1", cache="off")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--agent", default="direct")
    args = parser.parse_args()
    for name in GAMES:
        for way in ("generate", "score"):
            with FakeServer() as server:
                server.answer, server.models = play_answer, set(MODELS.values())
                llm = backend(way, server.url)
                tables = []
                for seed in range(args.games):
                    n = make_game(name).reset(seed).n_players
                    agents = [make_agent(args.agent, name, llm=llm) for _ in range(n)]
                    tables.append(Table(make_game(name), agents, seed))
                records = play_tables(tables, llm)
                llm.close()
                calls = Counter(path for path, _ in server.requests)
            seats = [s for r in records for s in r["players"]]
            generated = calls["/v1/messages"] + calls["/v1/chat/completions"]
            per_game = lambda x: round(x / args.games, 1)  # noqa: E731
            print(
                json.dumps(
                    {
                        "game": name,
                        "way": way,
                        "games": args.games,
                        "decisions_per_game": per_game(sum(t.decisions for t in tables)),
                        "generate_calls_per_game": per_game(generated),
                        "score_calls_per_game": per_game(calls["/v1/completions"]),
                        "tokenize_calls_per_game": per_game(calls["/tokenize"]),
                        "choice_asks_per_game": per_game(sum(s["choice_asks"] for s in seats)),
                        "reasks_per_game": per_game(sum(s["choice_reasks"] for s in seats)),
                        "invalid_choices_per_game": per_game(
                            sum(s["invalid_choices"] for s in seats)
                        ),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
