"""A persistent response cache: reruns are deterministic and a killed run does not pay twice.

One SQLite file in WAL mode (readers never block the writer; several processes may share it),
one row per response, keyed by the SHA-256 of everything that determines the response:
backend, model, prompt and sampling parameters including the seed. Each response is written
as soon as it arrives, so the work done before a crash is kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from stackelberg.llm.embedded import cache_dir

#: Bump when the meaning of a cached value changes (e.g. a new sampling algorithm).
KEY_VERSION = 1

_SCHEMA = """CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"""


def cache_key(payload: dict[str, Any]) -> str:
    """Stable key of a JSON-serialisable payload (dict order does not matter)."""
    text = json.dumps({"v": KEY_VERSION, **payload}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class ResponseCache:
    """Key-value store of JSON values in one SQLite file; safe across threads and processes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, timeout=60.0, isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The cached values of those keys that are present."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk
                ).fetchall()
                found.update((k, json.loads(v)) for k, v in rows)
        return found

    def get(self, key: str) -> Any | None:
        return self.get_many([key]).get(key)

    def put(self, key: str, value: Any) -> None:
        text = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)",
                (key, text, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def default_cache_path() -> Path:
    return cache_dir() / "llm-cache.sqlite"


def open_cache(setting: str | None) -> ResponseCache | None:
    """Open the cache a config asks for: "default", a file path, or "off"/None for none.

    The environment variable STACKELBERG_LLM_CACHE overrides the config: "off" switches the
    cache off, any other value is the path of the cache file.
    """
    env = os.environ.get("STACKELBERG_LLM_CACHE", "").strip()
    if env:
        setting = env
    if setting is None or setting.lower() in ("off", "none", "false", "0"):
        return None
    path = default_cache_path() if setting == "default" else Path(setting)
    return ResponseCache(path)
