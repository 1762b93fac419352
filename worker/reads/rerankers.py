"""Rerankers: an optional second pass over `Relevant` candidates.

Configured per agent (`agents.reranker_config`):

    {"type": "lexical", "multiplier": 3, "min_relevance": 0.2}
    {"type": "python", "path": "package.module:function", "multiplier": 4}

`multiplier` over-fetches `max_notes_to_inject x multiplier` candidates per status before
reranking; `min_relevance` drops candidates the reranker scores below it. A python reranker is
`function(query: str, texts: list[str]) -> list[float]` (one score per text, higher is better).
Any reranker error falls back to vector order, and the error is recorded in the trace.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from worker.normalize import normalize_text

ScoreFunction = Callable[[str, list[str]], Sequence[float]]


class RerankerConfigError(ValueError):
    pass


@dataclass(frozen=True)
class RerankerSpec:
    score: ScoreFunction
    name: str
    multiplier: int = 3
    min_relevance: float | None = None


_TOKEN = re.compile(r"\w+")
_STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has",
    "have", "how", "i", "in", "is", "it", "its", "me", "my", "need", "needs", "of", "on", "or",
    "our", "should", "that", "the", "their", "them", "they", "this", "to", "was", "we", "what",
    "when", "where", "which", "who", "why", "will", "with", "you", "your", "user", "users",
})


def _content_words(text: str) -> set[str]:
    words = (w.removesuffix("s") if len(w) > 3 else w
             for w in _TOKEN.findall(normalize_text(text)))
    return {w for w in words if w not in _STOPWORDS}


def lexical_scores(query: str, texts: list[str]) -> list[float]:
    """Deterministic and offline: the share of the query's content words each text contains
    (case-folded, stop words dropped, a plural "s" ignored)."""
    wanted = _content_words(query)
    if not wanted:
        return [0.0 for _ in texts]
    return [len(wanted & _content_words(t)) / len(wanted) for t in texts]


def _import(path: str) -> ScoreFunction:
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise RerankerConfigError("python reranker path must look like 'package.module:function'")
    function = getattr(importlib.import_module(module_name), attribute)
    if not callable(function):
        raise RerankerConfigError(f"{path} is not callable")
    return function  # type: ignore[no-any-return]


def load_reranker(config: dict[str, Any] | None) -> RerankerSpec | None:
    if not config:
        return None
    kind = config.get("type", "lexical")
    multiplier = int(config.get("multiplier", 3))
    if not 1 <= multiplier <= 20:
        raise RerankerConfigError("reranker multiplier must be between 1 and 20")
    min_relevance = config.get("min_relevance")
    if kind == "lexical":
        score: ScoreFunction = lexical_scores
    elif kind == "python":
        score = _import(str(config.get("path", "")))
    else:
        raise RerankerConfigError(f"unknown reranker type {kind!r}")
    return RerankerSpec(score, str(kind), multiplier,
                        None if min_relevance is None else float(min_relevance))
