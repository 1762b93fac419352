"""The cheap checks, run before any database lookup or hook: length, injection patterns,
another user's id, repetition. Also the run's duplicate fingerprint and the sanitizing of a
hook's reason, which work on the same folded text."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from worker.admission.policy import MemoryPolicy
from worker.admission.reasons import Block, ReasonCode, block
from worker.normalize import matching_forms, normalize_text

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
