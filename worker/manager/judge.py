"""The judge behind hardening dedupe, contradiction resolution, extraction and consolidation.

One interface (`Judge`), two implementations: `BuiltinJudge` (deterministic, offline: the
embedded default) and `ModelJudge` (an OpenAI-compatible chat model, in `model_judge.py`).
`CycleJudge` is what the phases use: the built-in judge first, the model only where the
built-in one is unsure and the cycle's budget allows, and every pair decision memoized by
content so the same pair is not paid for every cycle.

A judge that cannot decide says `UNSURE` (or proposes nothing); no phase ever takes a
destructive step on `UNSURE`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, Protocol

from worker.normalize import normalize_text


class PairRelation(StrEnum):
    DUPLICATE = "duplicate"  # the same fact, restated
    REFINEMENT = "refinement"  # the same fact, the newer note more specific
    CONTRADICTION = "contradiction"  # the newer note corrects or reverses the older
    DISTINCT = "distinct"
    UNSURE = "unsure"  # no decision: never acted on


@dataclass(frozen=True)
class PairVerdict:
    relation: PairRelation
    confidence: float  # 0..1
    judge: str  # "builtin", "model", or "memo:<judge>"

    @property
    def decided(self) -> bool:
        return self.relation is not PairRelation.UNSURE


UNSURE = PairVerdict(PairRelation.UNSURE, 0.0, "none")

ExtractScope = Literal["user", "company", "agent"]


@dataclass(frozen=True)
class MessageView:
    """One conversation message as the judge sees it (already scoped by the caller)."""

    message_id: str
    role: str
    text: str
    rating: int | None
    rating_comment: str | None


@dataclass(frozen=True)
class ExtractedCandidate:
    note: str
    type: str
    scope: ExtractScope
    confidence: int  # 0..100
    message_id: str | None


@dataclass(frozen=True)
class Extraction:
    candidates: list[ExtractedCandidate]
    # Proposals the judge made that failed validation, by reason (never their text).
    invalid: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ExampleCandidate:
    input_text: str
    output_text: str
    success_score: float
    message_id: str


class Judge(Protocol):
    name: str

    def compare(self, older: str, newer: str, similarity: float | None) -> PairVerdict: ...

    def extract(self, messages: Sequence[MessageView], neighbours: Sequence[str]) -> Extraction:
        ...

    def consolidate(self, texts: Sequence[str]) -> str | None: ...


@dataclass
class Budget:
    """Model calls and tokens one cycle may spend. Charged by the model judge only."""

    max_calls: int
    max_tokens: int
    calls: int = 0
    tokens: int = 0
    refused: int = 0  # calls not made because the budget was spent

    def allows(self) -> bool:
        ok = self.calls < self.max_calls and self.tokens < self.max_tokens
        if not ok:
            self.refused += 1
        return ok

    def charge(self, tokens: int) -> None:
        self.calls += 1
        self.tokens += max(0, tokens)


def pair_key(older: str, newer: str, version: str) -> str:
    """Memo key of an ordered pair: content, not ids, so re-written copies share it."""
    raw = "\x1f".join((version, normalize_text(older), normalize_text(newer)))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def cluster_key(texts: Sequence[str], version: str) -> str:
    raw = "\x1f".join([version, *sorted(normalize_text(t) for t in texts)])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@dataclass
class CycleJudge:
    """Built-in first, model where unsure; memoized pair decisions.

    `memo_get` / `memo_put` read and write the judge_memo table (the cycle binds them to its
    connection); `version` names the prompt and rules generation so a new version re-judges.
    """

    builtin: Judge
    model: Judge | None
    memo_get: Callable[[str, str], PairVerdict | None]
    # (kind, key, verdict, the texts decided on)
    memo_put: Callable[[str, str, PairVerdict, Sequence[str]], None]
    version: str
    judged: dict[str, int] = field(default_factory=dict)

    def _count(self, key: str) -> None:
        self.judged[key] = self.judged.get(key, 0) + 1

    def compare(self, older: str, newer: str, similarity: float | None) -> PairVerdict:
        verdict = self.builtin.compare(older, newer, similarity)
        if verdict.decided or self.model is None:
            self._count(f"builtin_{verdict.relation.value}")
            return verdict
        key = pair_key(older, newer, self.version)
        remembered = self.memo_get("pair", key)
        if remembered is not None:
            self._count("memo")
            return remembered
        verdict = self.model.compare(older, newer, similarity)
        self._count(f"model_{verdict.relation.value}")
        if verdict.decided:  # an undecided answer (error, budget) is asked again next cycle
            self.memo_put("pair", key, verdict, (older, newer))
        return verdict

    def extract(self, messages: Sequence[MessageView], neighbours: Sequence[str]) -> Extraction:
        return (self.model or self.builtin).extract(messages, neighbours)

    def consolidate(self, texts: Sequence[str]) -> str | None:
        return (self.model or self.builtin).consolidate(texts)

    def cluster_declined(self, texts: Sequence[str]) -> bool:
        return self.memo_get("cluster", cluster_key(texts, self.version)) is not None

    def decline_cluster(self, texts: Sequence[str]) -> None:
        self.memo_put("cluster", cluster_key(texts, self.version),
                      PairVerdict(PairRelation.DISTINCT, 1.0, "declined"), texts)
