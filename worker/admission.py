"""Write admission, promotion of internal memory and trust controls (SPEC 5, seeds/002).

A planted or low-quality memory steers every later run of an agent, so a write has to be
*admitted* before the pipeline stores it. This module is the policy and its decisions, as
plain functions; the guards (`worker/guards.py`: `admit`, `hold_internal_memory`) apply them
to a write, with the run's state in Postgres under the run's advisory lock, so the limits
hold across every worker process.

Order inside admission (the seed's: cheap checks first, then the hook):

1. `screen_text` — `min_write_length`, `reject_write_patterns` (matched on folded text, see
   `worker.normalize.matching_forms`), another user's id named in the text, repetition;
2. `reject_duplicate_writes` — the scope-aware fingerprint of an earlier admitted write of
   the run (checked in Postgres);
3. `max_writes_per_run` — writes the run got admitted so far (`runs.admitted_count`);
4. the `memory_write_admission` hook, bounded by a timeout.

Then, once the scope is known, writes from an internal source become candidates unless the
`memory_promotion_admission` hook approves or rewrites them.

No note text leaves through here: trace events carry reason codes, counts and exception type
names; a reason a hook supplies is withheld if it quotes the note.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from importlib import import_module
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID

from db.enums import INJECTABLE_STATUSES, AuthorType
from worker.normalize import matching_forms, normalize_text

if TYPE_CHECKING:
    from worker.settings import Settings

log = logging.getLogger(__name__)

# Structured trace log: one record per trace event, the event name as the message and every
# field as `extra`. Never note text.
trace_log = logging.getLogger("memory.trace")


# --- the policy -------------------------------------------------------------------------------

HOOK_FIELDS = ("memory_write_admission", "memory_promotion_admission")
POLICY_FIELDS = (
    "min_write_length", "reject_write_patterns", "reject_foreign_identities",
    "reject_repetitive_writes", "max_writes_per_run", "reject_duplicate_writes",
    "memory_write_admission", "require_write_admission", "memory_promotion_admission",
    "require_promotion_for_internal_memory", "trusted_sources", "enforce_expires_at",
    "allow_unattributed_results",
)


@dataclass(frozen=True)
class MemoryPolicy:
    """SPEC 5's MemoryPolicy. Built by `resolve_policy`: settings, then the agent's fields."""

    min_write_length: int = 0
    reject_write_patterns: tuple[str, ...] = ()
    reject_foreign_identities: bool = True
    reject_repetitive_writes: bool = True
    max_writes_per_run: int | None = None
    reject_duplicate_writes: bool = False
    memory_write_admission: str | None = None
    require_write_admission: bool = False
    memory_promotion_admission: str | None = None
    require_promotion_for_internal_memory: bool = True
    trusted_sources: tuple[str, ...] = ("user",)
    enforce_expires_at: bool = False
    allow_unattributed_results: bool = True
    hook_timeout_s: float = 2.0
    # Hook paths an agent configuration named outside `admission_hook_modules`: calling one
    # fails like a hook that raised (blocks when fail-closed).
    untrusted_hooks: frozenset[str] = frozenset()

    @property
    def compiled_patterns(self) -> tuple[re.Pattern[str], ...]:
        return _compile_patterns(self.reject_write_patterns)

    def is_internal(self, source: str) -> bool:
        """Every source but the trusted ones is internal, so a source name a service invents
        cannot skip promotion."""
        return source not in self.trusted_sources

    def needs_promotion(self, source: str) -> bool:
        return self.require_promotion_for_internal_memory and self.is_internal(source)


@lru_cache(maxsize=64)
def _compile_patterns(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


class PolicyError(ValueError):
    pass


_HOOK_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*([:.][A-Za-z_]\w*(\.[A-Za-z_]\w*)*)$")
_BOOL_FIELDS = ("reject_foreign_identities", "reject_repetitive_writes",
                "reject_duplicate_writes", "require_write_admission",
                "require_promotion_for_internal_memory", "enforce_expires_at",
                "allow_unattributed_results")


def _string_list(name: str, value: Any, *, max_items: int, max_length: int) -> list[str]:
    if not isinstance(value, list | tuple) or len(value) > max_items:
        raise PolicyError(f"{name} must be a list of at most {max_items} strings")
    if not all(isinstance(v, str) and 0 < len(v) <= max_length for v in value):
        raise PolicyError(f"{name} items must be strings of 1 to {max_length} characters")
    return list(value)


def validate_policy_overrides(value: Any) -> dict[str, Any] | None:
    """Check an agent's `memory_policy` (a partial MemoryPolicy); return it JSON-ready.

    Raises PolicyError naming every problem. Regexes are compiled here so a bad pattern is
    refused when it is configured, not on the next write."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise PolicyError("memory_policy must be an object")
    problems: list[str] = []
    unknown = sorted(map(str, set(value) - set(POLICY_FIELDS)))
    if unknown:
        problems.append(f"unknown fields: {', '.join(unknown)}")
    clean: dict[str, Any] = {}
    for name, item in value.items():
        if name not in POLICY_FIELDS:
            continue
        try:
            clean[name] = _validate_field(name, item)
        except PolicyError as exc:
            problems.append(str(exc))
    if problems:
        raise PolicyError("; ".join(problems))
    return clean


def _validate_field(name: str, item: Any) -> Any:
    if name in _BOOL_FIELDS:
        if not isinstance(item, bool):
            raise PolicyError(f"{name} must be true or false")
        return item
    if name in ("min_write_length", "max_writes_per_run"):
        nullable = name == "max_writes_per_run"
        if item is None and nullable:
            return None
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item <= 10_000:
            raise PolicyError(f"{name} must be an integer from 0 to 10000")
        return item
    if name in HOOK_FIELDS:
        if item is not None and not (isinstance(item, str) and len(item) <= 300
                                     and _HOOK_PATH.match(item)):
            raise PolicyError(f"{name} must be a dotted path such as package.module:function")
        return item
    if name == "trusted_sources":
        return _string_list(name, item, max_items=50, max_length=100)
    patterns = _string_list(name, item, max_items=200, max_length=500)
    for pattern in patterns:
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise PolicyError(f"reject_write_patterns: {pattern[:60]!r} is not a valid "
                              f"regex ({exc})") from None
    return patterns


def _module_allowed(path: str, modules: Iterable[str]) -> bool:
    module = path.split(":", 1)[0] if ":" in path else path.rsplit(".", 1)[0]
    for prefix in modules:
        prefix = prefix.rstrip(".")
        if prefix and (module == prefix or module.startswith(prefix + ".")):
            return True
    return False


def resolve_policy(settings: Settings, overrides: Mapping[str, Any] | None = None
                   ) -> MemoryPolicy:
    """The global policy from settings, with the agent's fields on top (agent wins)."""
    values: dict[str, Any] = {name: getattr(settings, name) for name in POLICY_FIELDS}
    untrusted: set[str] = set()
    agent_fields = validate_policy_overrides(dict(overrides)) if overrides else None
    for name, item in (agent_fields or {}).items():
        if name in HOOK_FIELDS and item is not None and item != getattr(settings, name) \
                and not _module_allowed(item, settings.admission_hook_modules):
            untrusted.add(item)
        values[name] = tuple(item) if isinstance(item, list) else item
    return MemoryPolicy(**values, hook_timeout_s=settings.admission_hook_timeout_s,
                        untrusted_hooks=frozenset(untrusted))


# --- reason codes and sentences ---------------------------------------------------------------

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


# --- cheap checks -----------------------------------------------------------------------------

_ID_VALUE = r"[\"'\[(#@]?\s*([a-z0-9](?:[\w@.\-]*[a-z0-9])?)"
# Machine-style labels ("user_id=u-2", "[customer_id: 7]") and "user id is …": a note that
# addresses an account by its id, which only makes sense to steer someone else's memory.
_LABELLED_ID = re.compile(
    r"\b(user|customer|account|member|tenant|company|org|organization|agent)_?id\s*[:=]\s*"
    + _ID_VALUE)
_USER_ID_IS = re.compile(r"\b(user)[ \-]id\s*(?:[:=]|is\b)\s*" + _ID_VALUE)
_FOR_USER = re.compile(
    r"\b(?:for|about|to|of|from)\s+(?:the\s+)?(user|customer|account)\s*(?:id\s*)?[:#@]?\s*"
    r"([a-z0-9][\w@.\-]*[a-z0-9])")
_LABEL_FIELD = {"user": "user", "customer": "user", "account": "user", "member": "user",
                "tenant": "company", "company": "company", "org": "company",
                "organization": "company", "agent": "agent"}


def foreign_identity(folded: str, *, user_id: str | None, company_id: str | None,
                     agent_id: str) -> str | None:
    """The kind of id ("user", "company", "agent") the text names that is not the run's."""
    own = {"user": user_id, "company": company_id, "agent": agent_id}
    found: list[tuple[str, str]] = []
    for pattern in (_LABELLED_ID, _USER_ID_IS):
        found += [(m.group(1), m.group(2)) for m in pattern.finditer(folded)]
    # "for user 8812" — only values that look like ids (a digit or an id separator), so
    # "for user convenience" is not one.
    found += [(m.group(1), m.group(2)) for m in _FOR_USER.finditer(folded)
              if re.search(r"[\d_@\-]", m.group(2))]
    for label, value in found:
        kind = _LABEL_FIELD[label]
        mine = own[kind]
        if mine is None or value.casefold() != mine.casefold():
            return kind
    return None


_WORD = re.compile(r"\w+")
_SENTENCE_SPLIT = re.compile(r"[.!?;\n]+")


def is_repetitive(folded: str) -> bool:
    """Few distinct words in a long note, or one sentence three times or more."""
    words = _WORD.findall(folded)
    if len(words) >= 12 and len(set(words)) / len(words) < 0.4:
        return True
    sentences = [s.strip() for s in _SENTENCE_SPLIT.split(folded) if len(s.strip()) >= 8]
    return bool(sentences) and max(Counter(sentences).values()) >= 3


def screen_text(policy: MemoryPolicy, text: str, *, user_id: str | None,
                company_id: str | None, agent_id: str) -> Block | None:
    """The cheap checks, in order: length, patterns, another user's id, repetition."""
    if len(text) < policy.min_write_length:
        return block(ReasonCode.TOO_SHORT,
                     f"the note is {len(text)} characters long; this agent's memory needs at "
                     f"least {policy.min_write_length}.",
                     length=len(text), min_write_length=policy.min_write_length)
    patterns = policy.compiled_patterns
    if not (patterns or policy.reject_foreign_identities or policy.reject_repetitive_writes):
        return None
    forms = matching_forms(text)
    distinct = tuple(dict.fromkeys(forms))
    for index, pattern in enumerate(patterns):
        if any(pattern.search(form) for form in distinct):
            # The index names the rule (settings are not secret); the matched text is not kept.
            return block(ReasonCode.PATTERN, pattern=index)
    if policy.reject_foreign_identities:
        for form in dict.fromkeys(forms[:2]):  # the leetspeak form would turn ids into words
            kind = foreign_identity(form, user_id=user_id, company_id=company_id,
                                    agent_id=agent_id)
            if kind:
                return block(ReasonCode.FOREIGN_IDENTITY, identity=kind)
    if policy.reject_repetitive_writes and is_repetitive(forms[0]):
        return block(ReasonCode.REPETITIVE)
    return None


def write_fingerprint(*, scope: Mapping[str, Any], source: str, scope_label: str,
                      text: str) -> str:
    """The seed's duplicate fingerprint: scoped memory user (here the whole clamped scope:
    agent, user, company, tenant dimensions), source, scope (user/agent) and normalized text.
    A user write and a reflection write of the same text differ."""
    payload = json.dumps([dict(scope), source, scope_label, normalize_text(text)],
                         sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(payload.encode("ascii")).hexdigest()


def sanitize_reason(reason: Any, text: str) -> str | None:
    """A hook's reason, fit for traces: one line, at most 200 characters, withheld if it
    quotes the note (a hook that says "blocked: <the note>" must not leak it)."""
    if reason is None:
        return None
    line = re.sub(r"\s+", " ", str(reason)).strip()[:200]
    if not line:
        return None
    return "(the reason quoted the note and is withheld)" if quotes_text(line, text) else line


def quotes_text(candidate: str, text: str, window: int = 16) -> bool:
    haystack = normalize_text(candidate)
    needle = normalize_text(text)
    if len(needle) <= window:
        return len(needle) >= 4 and needle in haystack
    return any(needle[i:i + window] in haystack for i in range(len(needle) - window + 1))


# --- decisions the hooks return ---------------------------------------------------------------

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


# --- running hooks ----------------------------------------------------------------------------

# Hooks run on a small thread pool so a hung one can be abandoned after the timeout (a thread
# cannot be killed; it stays busy until the hook returns, and later calls queue behind at
# most HOOK_THREADS of them, then time out too). One pool per process: pools do not survive
# a fork.
HOOK_THREADS = 4
_pool: ThreadPoolExecutor | None = None
_pool_pid = 0
_pool_lock = threading.Lock()
_hooks: dict[str, Callable[..., Any]] = {}


def _executor() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(HOOK_THREADS, thread_name_prefix="memory-admission-hook")
            _pool_pid = os.getpid()
        return _pool


def load_hook(path: str) -> Callable[..., Any]:
    """`package.module:attr.attr` or `package.module.attr`; imported once per process."""
    hook = _hooks.get(path)
    if hook is not None:
        return hook
    module_name, attrs = path.split(":", 1) if ":" in path else path.rsplit(".", 1)
    target: Any = import_module(module_name)
    for attr in attrs.split("."):
        target = getattr(target, attr)
    if not callable(target):
        raise TypeError(f"{path} is not callable")
    _hooks[path] = target
    return target


class HookFailure(Exception):
    """The hook could not give a decision; carries only the exception's type name."""

    def __init__(self, type_name: str) -> None:
        super().__init__(type_name)
        self.type_name = type_name


def call_hook(policy: MemoryPolicy, path: str, *args: Any) -> Any:
    """Run a hook with the policy's timeout. Anything going wrong *in the hook* (import,
    exception, timeout) becomes HookFailure; an exception raised in this thread while waiting
    (a Celery soft time limit) propagates."""
    try:
        if path in policy.untrusted_hooks:
            raise HookNotAllowed
        hook = load_hook(path)
    except Exception as exc:
        raise HookFailure(type(exc).__name__) from None
    future = _executor().submit(hook, *args)
    try:
        return future.result(timeout=policy.hook_timeout_s)
    except BaseException as exc:
        if future.done() and not future.cancelled() and future.exception(timeout=0) is exc:
            raise HookFailure(type(exc).__name__) from None
        if isinstance(exc, TimeoutError) and not future.done():
            future.cancel()
            log.warning("memory admission hook %s timed out after %.1fs", path,
                        policy.hook_timeout_s)
            raise HookFailure(AdmissionHookTimeout.__name__) from None
        raise


def run_write_hook(policy: MemoryPolicy, text: str, context: dict[str, Any]) -> HookVerdict:
    path = policy.memory_write_admission
    required = policy.require_write_admission
    if path is None:
        if required:
            return HookVerdict("block", ReasonCode.HOOK_MISSING, hooked=False)
        return HookVerdict("allow", hooked=False)
    try:
        value = call_hook(policy, path, text, dict(context))
        return interpret_write_decision(value, required=required)
    except (HookFailure, InvalidAdmissionDecision) as exc:
        error = exc.type_name if isinstance(exc, HookFailure) else type(exc).__name__
        if required:
            return HookVerdict("block", ReasonCode.HOOK_ERROR, error=error)
        return HookVerdict("allow", error=error)  # not fail-closed: the hook is advisory


def run_promotion_hook(policy: MemoryPolicy, candidate: MemoryCandidate,
                       context: dict[str, Any]) -> PromotionVerdict:
    """No hook, or a hook that fails: the candidate is kept (non-injectable) for review."""
    path = policy.memory_promotion_admission
    if path is None:
        return PromotionVerdict("keep", hooked=False)
    try:
        return interpret_promotion_decision(call_hook(policy, path, candidate, dict(context)))
    except HookFailure as exc:
        return PromotionVerdict("keep", error=exc.type_name)
    except InvalidAdmissionDecision:
        return PromotionVerdict("keep", error=InvalidAdmissionDecision.__name__)


# --- trace events -----------------------------------------------------------------------------

class TraceEventName(StrEnum):
    WRITE = "memory_write"
    WRITE_SKIP = "memory_write_skip"
    WRITE_BLOCK = "memory_write_block"
    RETRIEVE_FILTER = "memory_retrieve_filter"
    PROMOTION_REQUIRED = "memory_promotion_required"
    PROMOTION_APPROVED = "memory_promotion_approved"
    PROMOTION_REWRITTEN = "memory_promotion_rewritten"
    PROMOTION_REJECTED = "memory_promotion_rejected"
    PROMOTION_BLOCKED = "memory_promotion_blocked"


@dataclass(frozen=True)
class TraceEvent:
    """One trace step besides the write's own: stored in trace_events, logged on commit."""

    event: str
    disposition: str | None = None
    note_id: UUID | None = None
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def log_trace(event: str, **fields: Any) -> None:
    """The structured-log twin of a trace_events row. Callers pass only non-text fields;
    `reason` sentences are not logged (a hook's reason is the one free-text field)."""
    fields.pop("reason", None)
    extra = {k: (str(v) if isinstance(v, UUID) else v) for k, v in fields.items()}
    detail = extra.get("detail")
    code = detail.get("reason_code") if isinstance(detail, dict) else None
    extra["reason_code"] = code
    trace_log.info("%s run=%s seq=%s disposition=%s code=%s", event, extra.get("run_id"),
                   extra.get("seq"), extra.get("disposition"), code,
                   extra={"event": event, **extra})


# --- read-side rules (SPEC 5, "expiration-aware retrieval") -----------------------------------
# The read path (db/queries/retrieval.py, worker/context.py) applies these; they live here so
# the policy is defined in one place. A note is injectable only if none of the reasons apply.

class FilterReason(StrEnum):
    NOT_INJECTABLE = "not_injectable"  # status outside INJECTABLE_STATUSES (never injected)
    EXPIRED = "expired"  # expires_at <= now (always filtered, policy or not)
    EXPIRY_MISSING = "expiry_missing"  # enforce_expires_at and expires_at IS NULL
    EXPIRY_MALFORMED = "expiry_malformed"  # enforce_expires_at and +/-infinity
    UNATTRIBUTED = "unattributed"  # not allow_unattributed_results and no provenance


# The same rules as SQL over `notes n`, for pushing them into the query. Constant fragments.
EXPIRY_ENFORCED_SQL = (
    "(n.expires_at IS NOT NULL AND isfinite(n.expires_at) AND n.expires_at > :now)"
)
ATTRIBUTED_SQL = (
    "(n.source_agent_run_id IS NOT NULL OR n.source_conversation_id IS NOT NULL "
    f"OR cardinality(n.derived_from_note_ids) > 0 OR n.author_type = '{AuthorType.USER.value}')"
)


def injection_filter_reason(note: Mapping[str, Any], policy: MemoryPolicy, now: datetime
                            ) -> FilterReason | None:
    """Why `note` (a row of notes) must not be injected, or None. `expires_at` may be a
    datetime, None, or anything else (read as malformed)."""
    if note.get("status") not in INJECTABLE_STATUSES:
        return FilterReason.NOT_INJECTABLE
    expires_at = note.get("expires_at")
    if expires_at is not None and not isinstance(expires_at, datetime):
        return FilterReason.EXPIRY_MALFORMED if policy.enforce_expires_at else None
    if isinstance(expires_at, datetime) and expires_at <= now:
        return FilterReason.EXPIRED
    if policy.enforce_expires_at and expires_at is None:
        return FilterReason.EXPIRY_MISSING
    if not policy.allow_unattributed_results and not (
        note.get("source_agent_run_id") or note.get("source_conversation_id")
        or note.get("derived_from_note_ids") or note.get("author_type") == AuthorType.USER
    ):
        return FilterReason.UNATTRIBUTED
    return None


def filter_for_injection(notes: Iterable[Mapping[str, Any]], policy: MemoryPolicy,
                         now: datetime) -> tuple[list[Mapping[str, Any]], dict[str, int]]:
    """Keep the injectable notes; count the others per reason (the memory_retrieve_filter
    trace's `detail.filtered`)."""
    kept: list[Mapping[str, Any]] = []
    counts: Counter[str] = Counter()
    for note in notes:
        reason = injection_filter_reason(note, policy, now)
        if reason is None:
            kept.append(note)
        else:
            counts[reason.value] += 1
    return kept, dict(counts)
