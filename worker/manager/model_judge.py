"""The model judge: an OpenAI-compatible chat model (OpenAI, vLLM, Ollama, llama.cpp…).

Prompts live in `prompts/<task>.<version>.md`. Every answer must be one JSON object that
validates against a strict schema (unknown keys, wrong types or values are malformed);
a malformed answer is asked again (`llm_max_attempts`) and then treated as "no decision" —
never as a destructive one. Every call is charged to the cycle's budget; a spent budget
means no call and no decision.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from worker.manager.judge import (
    UNSURE,
    Budget,
    ExtractedCandidate,
    Extraction,
    MessageView,
    PairRelation,
    PairVerdict,
)

log = logging.getLogger(__name__)

PROMPT_VERSION = "v1"
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"


@cache
def load_prompt(task: str, version: str = PROMPT_VERSION) -> str:
    return (PROMPTS_DIR / f"{task}.{version}.md").read_text(encoding="utf-8")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class CompareAnswer(_Strict):
    relation: Literal["duplicate", "refinement", "contradiction", "distinct"]
    confidence: int = Field(ge=0, le=100)


class CandidateAnswer(_Strict):
    note: str = Field(min_length=1, max_length=4000)
    type: Literal["Preference", "Constraint", "Context", "Issue"]
    scope: Literal["user", "company", "agent"]
    confidence: int = Field(ge=0, le=100)
    message_id: str | None = None


class ExtractAnswer(_Strict):
    candidates: list[dict[str, Any]] = Field(max_length=50)


class ConsolidateAnswer(_Strict):
    merge: bool
    note: str | None = Field(default=None, max_length=4000)


Answer = TypeVar("Answer", bound=BaseModel)


class ModelJudge:
    name = "model"

    def __init__(self, *, model: str, base_url: str | None, api_key: str | None,
                 timeout_s: float, max_attempts: int, min_confidence: int,
                 budget: Budget) -> None:
        import openai

        self.model = model
        self.max_attempts = max(1, max_attempts)
        self.min_confidence = min_confidence
        self.budget = budget
        self.errors: dict[str, int] = {}
        # Retries are ours (malformed answers count too), not the client's.
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused",
                                     timeout=timeout_s, max_retries=0)

    def _error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1

    def _ask(self, task: str, user_content: str, schema: type[Answer]) -> Answer | None:
        messages: list[Any] = [
            {"role": "system", "content": load_prompt(task)},
            {"role": "user", "content": user_content},
        ]
        for _ in range(self.max_attempts):
            if not self.budget.allows():
                return None
            try:
                response = self._client.chat.completions.create(
                    model=self.model, messages=messages, temperature=0,
                    response_format={"type": "json_object"},
                )
            except Exception as exc:
                self.budget.charge(0)
                self._error(type(exc).__name__)
                log.warning("model judge call failed: %s", type(exc).__name__)
                continue
            usage = getattr(response, "usage", None)
            content = response.choices[0].message.content if response.choices else None
            self.budget.charge(int(getattr(usage, "total_tokens", 0) or 0)
                               or len(user_content) // 4)
            try:
                return schema.model_validate(json.loads(content or ""))
            except (ValueError, ValidationError):
                self._error("malformed")
        return None

    def compare(self, older: str, newer: str, similarity: float | None) -> PairVerdict:
        answer = self._ask("compare", json.dumps({"OLDER": older, "NEWER": newer}),
                           CompareAnswer)
        if answer is None:
            return UNSURE
        relation = PairRelation(answer.relation)
        # A destructive decision needs the model to be sure; otherwise it is no decision.
        if relation is not PairRelation.DISTINCT and answer.confidence < self.min_confidence:
            return PairVerdict(PairRelation.UNSURE, answer.confidence / 100, self.name)
        return PairVerdict(relation, answer.confidence / 100, self.name)

    def extract(self, messages: Sequence[MessageView], neighbours: Sequence[str]) -> Extraction:
        payload = {
            "KNOWN NOTES": list(neighbours),
            "CONVERSATION": [
                {"message_id": m.message_id, "role": m.role, "text": m.text,
                 "rating": m.rating, "rating_comment": m.rating_comment}
                for m in messages
            ],
        }
        answer = self._ask("extract", json.dumps(payload), ExtractAnswer)
        if answer is None:
            return Extraction([], {"no_answer": 1} if messages else {})
        known_ids = {m.message_id for m in messages}
        candidates: list[ExtractedCandidate] = []
        invalid: dict[str, int] = {}
        for raw in answer.candidates:  # one bad candidate never drops the others
            try:
                item = CandidateAnswer.model_validate(raw)
            except ValidationError:
                invalid["malformed"] = invalid.get("malformed", 0) + 1
                continue
            if item.message_id is not None and item.message_id not in known_ids:
                invalid["unknown_message"] = invalid.get("unknown_message", 0) + 1
                continue
            candidates.append(ExtractedCandidate(item.note, item.type, item.scope,
                                                 item.confidence, item.message_id))
        return Extraction(candidates, invalid)

    def consolidate(self, texts: Sequence[str]) -> str | None:
        answer = self._ask("consolidate", json.dumps({"NOTES": list(texts)}),
                           ConsolidateAnswer)
        if answer is None or not answer.merge or not answer.note or not answer.note.strip():
            return None
        return answer.note.strip()
