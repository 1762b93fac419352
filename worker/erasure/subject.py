"""Who is erased: a subject, its keyed hash, and the fence keys a write or conversation
answers to.

The hash is what the fence and the audit record keep instead of the ids. It is an HMAC, not a
plain digest: user ids are short and guessable ("u-7", an email), and a plain sha256 of one
is found by trying candidates. The key is `MEMORY_ERASURE_HASH_KEY` (read here because
worker/settings.py is owned elsewhere; it belongs there). Keep the key out of database
backups: with it, an erasure can be applied again to a restored backup (the restored rows
supply the ids, the audit record says which hashes to look for); without it, nobody can
test a guess against the audit record.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

SUBJECT_KINDS = ("user", "company", "agent", "conversation")
KIND_ERROR = f"subject kind must be one of {', '.join(SUBJECT_KINDS)}"

HASH_KEY_ENV = "MEMORY_ERASURE_HASH_KEY"
# Used when the variable is unset (development, tests): hashes are then only as strong as
# the ids are hard to guess.
DEFAULT_HASH_KEY = "agent-memory-worker erasure fence v1"


def _hash_key() -> bytes:
    return (os.environ.get(HASH_KEY_ENV) or DEFAULT_HASH_KEY).encode("utf-8")


def subject_hash(kind: str, subject_id: str, agent_id: str | None = None,
                 company_id: str | None = None) -> str:
    """The keyed hash of a subject's identity: what fences and audit records hold."""
    return _keyed_hash(_hash_key(), kind, subject_id, agent_id, company_id)


def _keyed_hash(key: bytes, kind: str, subject_id: str, agent_id: str | None,
                company_id: str | None) -> str:
    raw = json.dumps([kind, subject_id, agent_id, company_id], ensure_ascii=False)
    return hmac.new(key, raw.encode("utf-8"), hashlib.sha256).hexdigest()


MAX_ID_LENGTH = 200


class SubjectError(ValueError):
    """A subject that names nothing, or names it in a way we cannot erase."""


def valid_id(value: object) -> bool:
    """Text that can name a subject: not blank, at most MAX_ID_LENGTH characters, no NUL."""
    return (isinstance(value, str) and bool(value.strip()) and len(value) <= MAX_ID_LENGTH
            and "\x00" not in value)


@dataclass(frozen=True)
class Subject:
    """`kind` and its id; a user may be narrowed to one agent and/or one company."""

    kind: str
    id: str
    agent_id: str | None = None
    company_id: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in SUBJECT_KINDS:
            raise SubjectError(KIND_ERROR)
        # The id is required: a subject of no id would fence, and audit, the hash of null.
        for name, value in (("id", self.id), ("agent_id", self.agent_id),
                            ("company_id", self.company_id)):
            if (value is not None or name == "id") and not valid_id(value):
                raise SubjectError(f"subject {name} must be a non-empty id of at most "
                                   f"{MAX_ID_LENGTH} characters")
        if self.kind != "user" and (self.agent_id or self.company_id):
            raise SubjectError("only a user erasure can be narrowed to an agent or company")

    @property
    def hash(self) -> str:
        return subject_hash(self.kind, self.id, self.agent_id, self.company_id)

    def describe(self) -> str:
        """For the operator who typed it (CLI output): never stored."""
        narrowed = "".join(f" {k}={v}" for k, v in (("agent", self.agent_id),
                                                     ("company", self.company_id)) if v)
        return f"{self.kind} {self.id}{narrowed}"

    def sql_params(self) -> dict[str, Any]:
        return {"sid": self.id, "s_agent": self.agent_id, "s_company": self.company_id}


def _fence_identities(agent_id: str | None, user_id: str | None, company_id: str | None,
                      conversation_id: str | None
                      ) -> list[tuple[str, str, str | None, str | None]]:
    identities: list[tuple[str, str, str | None, str | None]] = []
    if user_id is not None:
        for agent in (None, agent_id) if agent_id is not None else (None,):
            for company in (None, company_id) if company_id is not None else (None,):
                identities.append(("user", user_id, agent, company))
    if company_id is not None:
        identities.append(("company", company_id, None, None))
    if agent_id is not None:
        identities.append(("agent", agent_id, None, None))
    if conversation_id is not None:
        identities.append(("conversation", conversation_id, None, None))
    return identities


def fence_hashes(agent_id: str | None, user_id: str | None, company_id: str | None,
                 conversation_id: str | None) -> list[str]:
    """Every subject whose erasure covers data of this identity: the user (alone and
    narrowed each way), the company, the agent, the conversation."""
    return list(_fence_hashes(_hash_key(), agent_id, user_id, company_id, conversation_id))


# Every write computes its run's: an HMAC is a pure function of the key and the ids, so the
# answers are kept per process (keyed by the key too: a changed key gives new hashes).
@lru_cache(maxsize=4096)
def _fence_hashes(key: bytes, agent_id: str | None, user_id: str | None,
                  company_id: str | None, conversation_id: str | None) -> tuple[str, ...]:
    return tuple(_keyed_hash(key, *identity) for identity in
                 _fence_identities(agent_id, user_id, company_id, conversation_id))


def fence_subjects(agent_id: str | None, user_id: str | None, company_id: str | None,
                   conversation_id: str | None) -> list[Subject]:
    """The subjects of `fence_hashes`, leaving out ids no erasure can name."""
    subjects = []
    for identity in _fence_identities(agent_id, user_id, company_id, conversation_id):
        try:
            subjects.append(Subject(*identity))
        except SubjectError:
            continue
    return subjects
