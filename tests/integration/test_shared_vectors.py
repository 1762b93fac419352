"""Vectors shared between worker processes through Redis (`SharedVectorCache`): a chain
head's batch is left for the process that runs the chain's next writes; a single write's own
vector is not stored (no one else asks for it, and its write is waiting). Real Redis, the
real local model; each cache below stands for another process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import redis

from worker.embeddings import SharedVectorCache

BATCH = ["User prefers aisle seats.", "User's manager is Dana.", "User runs on Sundays."]


class CountingModel:
    """The real local model, counting the texts it is asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.asked.extend(texts)
        return list(self.inner.embed(texts))


def _local_model(embedder: Any) -> Any:
    while hasattr(embedder, "inner"):
        embedder = embedder.inner
    return embedder


def _stored(redis_url: str) -> list[bytes]:
    return sorted(redis.Redis.from_url(redis_url).keys("memory:vec:*"))


def test_a_batch_is_left_for_the_next_process(services, embedder):
    head = CountingModel(_local_model(embedder))
    vectors = SharedVectorCache(head, services.redis_url, 60).embed(BATCH)
    assert head.asked == BATCH and len(_stored(services.redis_url)) == len(BATCH)

    other = CountingModel(_local_model(embedder))
    again = SharedVectorCache(other, services.redis_url, 60).embed(BATCH[1:])
    assert other.asked == []  # found in Redis, not computed again
    for got, expected in zip(again, vectors[1:], strict=True):
        np.testing.assert_array_equal(got, expected)


def test_a_single_writes_vector_is_not_stored(services, embedder):
    model = CountingModel(_local_model(embedder))
    cache = SharedVectorCache(model, services.redis_url, 60)
    [vector] = cache.embed(["User prefers window seats."])
    assert vector.shape == (384,) and _stored(services.redis_url) == []
    # A chain's later write in another process still finds what its head's batch left.
    SharedVectorCache(model, services.redis_url, 60).embed(BATCH)
    model.asked.clear()
    cache.embed([BATCH[2]])
    assert model.asked == []


def test_an_unreachable_redis_costs_only_the_sharing(embedder):
    model = CountingModel(_local_model(embedder))
    cache = SharedVectorCache(model, "redis://127.0.0.1:1/0", 60)
    vectors = cache.embed(BATCH)
    assert model.asked == BATCH and len(vectors) == len(BATCH)
