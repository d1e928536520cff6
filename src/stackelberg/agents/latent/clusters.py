"""Latent strategies: self-play speeches of one role embedded and clustered.

The embedding is TF-IDF over word unigrams and bigrams of the speech with every player's
name made "Player N" (``acts.anonymous``), L2-normalised: deterministic, and fast enough
for thousands of speeches on a CPU, where a forward pass of an LLM per speech is not. The
clusters are k-means (k-means++ seeding from a seeded generator, Lloyd's iterations), so
the same speeches and seed give the same strategies. A strategy keeps the speeches
nearest its centroid as exemplars, and the act that most of its speeches do
(``acts.speech_act``): the abstract game plays a strategy as that act.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from stackelberg.agents.latent.acts import SPEECH_ACTS, anonymous, speech_act

_WORD = re.compile(r"[a-z]+|\d+")


def tokens(text: str) -> list[str]:
    words = _WORD.findall(anonymous(text).lower())
    return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]


def tfidf(texts: Sequence[str]) -> np.ndarray:
    """One L2-normalised TF-IDF row per text (vocabulary in sorted order)."""
    docs = [Counter(tokens(t)) for t in texts]
    vocab = sorted({w for d in docs for w in d})
    index = {w: i for i, w in enumerate(vocab)}
    df = Counter(w for d in docs for w in d)
    idf = np.array([math.log((1 + len(docs)) / (1 + df[w])) + 1.0 for w in vocab])
    matrix = np.zeros((len(docs), len(vocab)))
    for row, d in enumerate(docs):
        for w, count in d.items():
            matrix[row, index[w]] = count
    matrix *= idf
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def kmeans(
    points: np.ndarray, k: int, seed: int = 0, iterations: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """(labels, centroids) of k-means with k-means++ seeding; k is cut to the number of
    distinct points, so no cluster is empty."""
    rng = np.random.default_rng(seed)
    distinct = np.unique(points, axis=0)
    k = min(k, len(distinct))
    centroids = [distinct[rng.integers(len(distinct))]]
    for _ in range(1, k):
        d2 = np.min([((distinct - c) ** 2).sum(1) for c in centroids], axis=0)
        centroids.append(distinct[rng.choice(len(distinct), p=d2 / d2.sum())])
    centres = np.array(centroids)
    labels = np.zeros(len(points), dtype=int)
    for _ in range(iterations):
        d2 = ((points[:, None, :] - centres[None]) ** 2).sum(-1)
        new = d2.argmin(1)
        for j in range(k):  # an emptied cluster takes the point farthest from its centre
            if not (new == j).any():
                new[d2[np.arange(len(points)), new].argmax()] = j
        if (new == labels).all() and _ > 0:
            break
        labels = new
        centres = np.array([points[labels == j].mean(0) for j in range(k)])
    return labels, centres


@dataclass(frozen=True)
class Strategy:
    """One latent strategy of a role: the act it is played as, its share of the role's
    speeches, and the speeches nearest its centroid."""

    role: str
    index: int
    act: str
    share: float
    exemplars: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.role} strategy {self.index + 1} ({self.act})"

    @property
    def description(self) -> str:
        return SPEECH_ACTS[self.act]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> Strategy:
        return cls(**{**raw, "exemplars": tuple(raw["exemplars"])})


def latent_strategies(
    speeches: Sequence[str], role: str, n_players: int, k: int, seed: int = 0, exemplars: int = 3
) -> list[Strategy]:
    """The ``k`` latent strategies of ``role`` from its speeches (fewer when the speeches
    have fewer distinct embeddings), largest first."""
    if not speeches:
        return []
    points = tfidf(speeches)
    labels, centres = kmeans(points, k, seed)
    found = []
    for j in range(len(centres)):
        members = np.flatnonzero(labels == j)
        acts = [speech_act(speeches[i], n_players) for i in members]
        count = Counter(acts)
        act = min(count, key=lambda a: (-count[a], a))
        # the exemplars say what the strategy is played as: its act's speeches, nearest first
        doing = members[np.array([a == act for a in acts])]
        distance = ((points[doing] - centres[j]) ** 2).sum(1)
        order = doing[np.argsort(distance, kind="stable")]
        nearest = list(dict.fromkeys(speeches[i] for i in order))
        found.append((len(members), act, tuple(nearest[:exemplars])))
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    return [
        Strategy(role, i, act, size / len(speeches), near)
        for i, (size, act, near) in enumerate(found)
    ]


__all__ = ["Strategy", "kmeans", "latent_strategies", "tfidf", "tokens"]
