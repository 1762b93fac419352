"""Why admission stops a write: a reason code for machines and a sentence the agent can read
(which never quotes the note)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ReasonCode(StrEnum):
    TOO_SHORT = "too-short"
    PATTERN = "pattern"
    FOREIGN_IDENTITY = "foreign-identity"
    REPETITIVE = "repetitive"
    DUPLICATE_WRITE = "duplicate-write"
    WRITE_LIMIT = "write-limit"
    HOOK_REJECTED = "hook-rejected"
    HOOK_NONE = "hook-none"
    HOOK_MISSING = "hook-missing"
    HOOK_ERROR = "hook-error"
    HOOK_UNAPPROVED = "hook-unapproved"
    HOOK_INVALID_REWRITE = "hook-invalid-rewrite"
    PROMOTION_REQUIRED = "promotion-required"
    PROMOTION_REJECTED = "promotion-rejected"


NOT_SAVED = "Not saved: "
TELL_NOTHING = " Nothing was remembered; do not tell the user that it was."

_SENTENCES: dict[ReasonCode, str] = {
    ReasonCode.TOO_SHORT: "the note is shorter than this agent's memory accepts.",
    ReasonCode.WRITE_LIMIT: "this run reached its limit of memory writes.",
    ReasonCode.HOOK_REJECTED: "the memory admission policy rejected it.",
    ReasonCode.HOOK_ERROR: "the memory admission check failed and this agent's memory "
                           "requires it to approve every write.",
    ReasonCode.PROMOTION_REQUIRED: "notes from internal sources are held for review.",
    ReasonCode.PATTERN: "the note reads as an instruction to the assistant (a prompt-injection "
                        "phrasing), not as a fact or preference about the user.",
    ReasonCode.FOREIGN_IDENTITY: "the note names another user or account; a run may only "
                                 "record facts about its own user.",
    ReasonCode.REPETITIVE: "the note repeats itself; record one short, atomic fact per write.",
    ReasonCode.DUPLICATE_WRITE: "this run already submitted the same write.",
    ReasonCode.HOOK_NONE: "the memory admission policy must approve every write and gave no "
                          "decision.",
    ReasonCode.HOOK_MISSING: "the memory admission policy must approve every write and no "
                             "admission check is configured.",
    ReasonCode.HOOK_UNAPPROVED: "the memory admission policy must explicitly approve every "
                                "write and did not.",
    ReasonCode.HOOK_INVALID_REWRITE: "the memory admission policy rewrote the note into "
                                     "something that cannot be stored.",
    ReasonCode.PROMOTION_REJECTED: "the memory promotion policy rejected this note from an "
                                   "internal source.",
}


@dataclass(frozen=True)
class Block:
    """Why admission stopped a write: a reason code, a sentence, and non-text detail."""

    code: ReasonCode
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)


def block(code: ReasonCode, reason: str | None = None, **detail: Any) -> Block:
    sentence = reason if reason is not None else _SENTENCES[code]
    return Block(code, NOT_SAVED + sentence + TELL_NOTHING, {"reason_code": code.value, **detail})
