"""What the admission and promotion hooks may return, and how each return value reads.

Hook authors import the decision classes; the interpreters turn anything a hook returns into
a verdict, without running the hook (worker/writes/admission/hooks.py does that)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from worker.writes.admission.reasons import ReasonCode


@dataclass(frozen=True)
class MemoryAdmissionDecision:
    """What a `memory_write_admission` hook may return (or a dict with the same keys)."""

    allowed: bool
    reason: str | None = None
    value: Any = None

    @classmethod
    def allow(cls, value: Any = None, reason: str | None = None) -> MemoryAdmissionDecision:
        return cls(True, reason, value)

    @classmethod
    def block(cls, reason: str | None = None) -> MemoryAdmissionDecision:
        return cls(False, reason)


PromotionAction = Literal["approve", "rewrite", "reject", "keep"]


@dataclass(frozen=True)
class MemoryPromotionDecision:
    """What a `memory_promotion_admission` hook may return."""

    action: PromotionAction
    value: str | None = None
    reason: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def approve(cls, reason: str | None = None, metadata: dict[str, Any] | None = None
                ) -> MemoryPromotionDecision:
        return cls("approve", None, reason, metadata or {})

    @classmethod
    def rewrite(cls, value: str, reason: str | None = None,
                metadata: dict[str, Any] | None = None) -> MemoryPromotionDecision:
        return cls("rewrite", value, reason, metadata or {})

    @classmethod
    def reject(cls, reason: str | None = None) -> MemoryPromotionDecision:
        return cls("reject", None, reason)

    @classmethod
    def keep(cls, reason: str | None = None) -> MemoryPromotionDecision:
        return cls("keep", None, reason)

    @property
    def allowed(self) -> bool:
        """So a promotion decision also reads as a write decision."""
        return self.action in ("approve", "rewrite")


@dataclass(frozen=True)
class MemoryCandidate:
    """What a promotion hook receives: the seed's MemoryCandidate."""

    candidate_id: str
    source: str
    scope: str
    memory_user_id: str | None
    original_user_id: str | None
    agent_name: str
    trace_id: str
    run_id: str
    data: str


class InvalidAdmissionDecision(Exception):
    """A hook returned something that is not a decision (a dict without `allowed`, an
    awaitable, an unknown promotion action)."""


class AdmissionHookTimeout(Exception):
    pass


class HookNotAllowed(Exception):
    """An agent configuration named a hook outside `admission_hook_modules`."""


@dataclass(frozen=True)
class HookVerdict:
    kind: Literal["allow", "rewrite", "block"]
    code: ReasonCode | None = None
    reason: Any = None  # as the hook gave it; sanitize before it goes anywhere
    text: str | None = None
    error: str | None = None  # exception type name, never its message
    hooked: bool = True


def _as_text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _from_parts(allowed: Any, reason: Any, value: Any) -> HookVerdict:
    if not isinstance(allowed, bool):
        raise InvalidAdmissionDecision
    if not allowed:
        return HookVerdict("block", ReasonCode.HOOK_REJECTED, reason)
    if value is not None:
        return HookVerdict("rewrite", reason=reason, text=_as_text(value))
    return HookVerdict("allow", reason=reason)


def interpret_write_decision(value: Any, *, required: bool) -> HookVerdict:
    """The seed's return values: True/None allow (None blocks when fail-closed), False or a
    string block (the string is the reason), a decision object or dict `{allowed, reason,
    value}`, any other value allows and rewrites the text. Fail-closed approval needs True or
    an allowed decision; a bare rewrite value is not an approval."""
    if value is True:
        return HookVerdict("allow")
    if value is None:
        return HookVerdict("block", ReasonCode.HOOK_NONE) if required else HookVerdict("allow")
    if value is False:
        return HookVerdict("block", ReasonCode.HOOK_REJECTED)
    if isinstance(value, str):
        return HookVerdict("block", ReasonCode.HOOK_REJECTED, value)
    if isinstance(value, Mapping):
        if "allowed" not in value:
            raise InvalidAdmissionDecision
        return _from_parts(value["allowed"], value.get("reason"), value.get("value"))
    if hasattr(value, "allowed"):
        return _from_parts(value.allowed, getattr(value, "reason", None),
                           getattr(value, "value", None))
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise InvalidAdmissionDecision
    if required:
        return HookVerdict("block", ReasonCode.HOOK_UNAPPROVED)
    return HookVerdict("rewrite", text=_as_text(value))


@dataclass(frozen=True)
class PromotionVerdict:
    action: PromotionAction
    reason: Any = None
    text: str | None = None
    error: str | None = None
    hooked: bool = True


_ACTIONS = ("approve", "rewrite", "reject", "keep")


def interpret_promotion_decision(value: Any) -> PromotionVerdict:
    """True approves, False rejects, None keeps the candidate, a string keeps it with that
    reason; a MemoryPromotionDecision (or a dict with `action`) says what to do; a dict or
    object with `allowed` approves (or rewrites, with `value`) or rejects; any other value
    approves and rewrites the text."""
    if value is True:
        return PromotionVerdict("approve")
    if value is False:
        return PromotionVerdict("reject")
    if value is None:
        return PromotionVerdict("keep")
    if isinstance(value, str):
        return PromotionVerdict("keep", value)
    get = value.get if isinstance(value, Mapping) else (lambda k, d=None: getattr(value, k, d))
    action = get("action")
    if action is not None:
        if action not in _ACTIONS or (action == "rewrite" and get("value") is None):
            raise InvalidAdmissionDecision
        text = _as_text(get("value")) if action == "rewrite" else None
        return PromotionVerdict(action, get("reason"), text)
    if isinstance(value, Mapping) or hasattr(value, "allowed"):
        verdict = _from_parts(get("allowed"), get("reason"), get("value"))
        if verdict.kind == "block":
            return PromotionVerdict("reject", verdict.reason)
        return PromotionVerdict("approve" if verdict.kind == "allow" else "rewrite",
                                verdict.reason, verdict.text)
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise InvalidAdmissionDecision
    return PromotionVerdict("rewrite", text=_as_text(value))
