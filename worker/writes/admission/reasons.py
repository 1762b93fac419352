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
    # Admission by effect (worker/writes/admission/effects.py): what the note would make an
    # agent do. Blocked, or quarantined as a candidate (third-party claims, doubtful ones).
    EFFECT_SEND_TO_ADDRESS = "effect-send-to-address"
    EFFECT_CONTACT_USERS = "effect-contact-users"
    EFFECT_REQUEST_SECRETS = "effect-request-secrets"
    EFFECT_CHANGE_RULES = "effect-change-rules"
    EFFECT_THIRD_PARTY_CLAIM = "effect-third-party-claim"
    EFFECT_ENCODED_PAYLOAD = "effect-encoded-payload"
    EFFECT_DOUBTFUL = "effect-doubtful"


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

# What a note would make the assistant do, as the sentences above and quarantine use it.
EFFECT_CLAUSES: dict[ReasonCode, str] = {
    ReasonCode.EFFECT_SEND_TO_ADDRESS: "the note would make the assistant send something to "
                                       "an address, account or number",
    ReasonCode.EFFECT_CONTACT_USERS: "the note would make the assistant contact, deceive or "
                                     "impersonate someone toward other people",
    ReasonCode.EFFECT_REQUEST_SECRETS: "the note would make the assistant ask people for "
                                       "credentials, secrets or payment",
    ReasonCode.EFFECT_CHANGE_RULES: "the note would change the assistant's rules, role, "
                                    "permissions or filters",
    ReasonCode.EFFECT_THIRD_PARTY_CLAIM: "the note makes a claim about another person",
    ReasonCode.EFFECT_ENCODED_PAYLOAD: "the note hides text in an encoding",
    ReasonCode.EFFECT_DOUBTFUL: "the note reads like notes that direct an assistant to act",
}
for _code, _clause in EFFECT_CLAUSES.items():
    _SENTENCES[_code] = (f"{_clause}; memory holds facts and preferences about the user, "
                         "never instructions.")


@dataclass(frozen=True)
class Block:
    """Why admission stopped a write: a reason code, a sentence, and non-text detail."""

    code: ReasonCode
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)


def block(code: ReasonCode, reason: str | None = None, **detail: Any) -> Block:
    sentence = reason if reason is not None else _SENTENCES[code]
    return Block(code, NOT_SAVED + sentence + TELL_NOTHING, {"reason_code": code.value, **detail})
