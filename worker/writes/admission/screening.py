"""The screening checks, run before the run's limits and the hook: length, injection
patterns, another principal's id, repetition. Also the run's duplicate fingerprint and the
sanitizing of a hook's reason, which work on the same folded text."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from worker.normalize import matching_forms, normalize_text
from worker.writes.admission.policy import MemoryPolicy
from worker.writes.admission.reasons import Block, ReasonCode, block

# Who an id belongs to decides, not the wording around it: a note is foreign when it names a
# user or company this system holds memory for, other than the writing run's own (their
# information does not belong in another principal's memory, where it would be shown to
# whoever reads that). An id nobody here holds is nobody's; such a note stays in the writer's
# own scope. The lookup is a callable the write path binds to its connection (principals).
_TOKEN = re.compile(r"[a-z0-9](?:[\w@.\-:]*[a-z0-9])?")
# "user 42", "customer #c-7", "company: globex", "user id is 8812": plain words and bare
# numbers count as ids only right after such a label (elsewhere "42" is a quantity).
_LABELLED = re.compile(
    r"\b(?:user|customer|client|account|member|tenant|company|org|organi[sz]ation)s?"
    r"(?:[\s_\-]?ids?)?(?:\s*(?:[:=#@]|\bis\b|\bno\b\.?|\bnumber\b))?\s*[\"'\[(#@]?\s*"
    r"([a-z0-9](?:[\w@.\-:]*[a-z0-9])?)")
_MAX_NAMED_IDS = 200
PrincipalLookup = Callable[[list[str]], "str | None"]


def _id_shaped(token: str) -> bool:
    """A token that reads as an id wherever it stands: a separator, or letters and digits."""
    return bool(re.search(r"[_@.\-:]", token)) or (
        bool(re.search(r"\d", token)) and bool(re.search(r"[^\W\d_]", token)))


def named_ids(folded: str) -> set[str]:
    """The tokens of a note that could be someone's id (folded text)."""
    found = {token for token in _TOKEN.findall(folded) if _id_shaped(token)}
    found.update(match.group(1) for match in _LABELLED.finditer(folded))
    return found


def principal_candidates(folded: str, *, user_id: str | None,
                         company_id: str | None) -> list[str]:
    """The ids a folded text names that could be another principal's, as looked up."""
    own = {value.casefold() for value in (user_id, company_id) if value}
    return sorted(named_ids(folded) - own)[:_MAX_NAMED_IDS]


def foreign_identity(folded: str, *, user_id: str | None, company_id: str | None,
                     lookup: PrincipalLookup) -> str | None:
    """The kind ("user", "company") of a known principal the text names that is not the
    run's own, or None."""
    candidates = principal_candidates(folded, user_id=user_id, company_id=company_id)
    return lookup(candidates) if candidates else None


def _identity_forms(forms: tuple[str, ...]) -> list[str]:
    """The forms the foreign-identity check reads: the leetspeak form would turn ids into
    words."""
    return list(dict.fromkeys(forms[:2]))


def principal_probes(text: str, *, user_id: str | None,
                     company_id: str | None) -> tuple[tuple[str, ...], ...]:
    """Every list of ids `screening_block` may look up for this text, in its order (at most
    two): the write path asks them with its run's state, in the same round trip."""
    probes = (principal_candidates(form, user_id=user_id, company_id=company_id)
              for form in _identity_forms(matching_forms(text)))
    return tuple(dict.fromkeys(tuple(ids) for ids in probes if ids))


_WORD = re.compile(r"\w+")
_SENTENCE_SPLIT = re.compile(r"[.!?;\n]+")


def is_repetitive(folded: str) -> bool:
    """Few distinct words in a long note, or one sentence three times or more."""
    words = _WORD.findall(folded)
    if len(words) >= 12 and len(set(words)) / len(words) < 0.4:
        return True
    sentences = [s.strip() for s in _SENTENCE_SPLIT.split(folded) if len(s.strip()) >= 8]
    return bool(sentences) and max(Counter(sentences).values()) >= 3


def screening_block(policy: MemoryPolicy, text: str, *, user_id: str | None,
                company_id: str | None, principals: PrincipalLookup) -> Block | None:
    """The screening checks, in order: length, patterns, another principal's id (one indexed
    lookup, only when the text names something id-like), repetition."""
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
        for form in _identity_forms(forms):
            kind = foreign_identity(form, user_id=user_id, company_id=company_id,
                                    lookup=principals)
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
