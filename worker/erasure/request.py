"""A subject from untrusted input: the `subject` object of `memory.forget` / `memory.export`
(any language sends it) and the CLI's arguments.

Every field is checked before anything is written: a request that does not name exactly one
subject is refused, never erased as whatever its fields happen to mean. So the object takes
only its four fields — `{"kind": "user", "subject_id": "u-7", "agent_id": "A"}` means to
narrow to agent A, and read as a user erasure it would erase the user with every agent.
"""

from __future__ import annotations

from typing import Any

from worker.erasure.subject import (
    KIND_ERROR,
    MAX_ID_LENGTH,
    SUBJECT_KINDS,
    Subject,
    SubjectError,
    valid_id,
)

REQUEST_FIELDS = ("kind", "subject_id", "within_agent", "within_company")


def _as_id(value: Any) -> Any:
    """Integers mean their decimal string, as everywhere in the wire contract."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _field_id(request: dict[str, Any], field: str, *, required: bool) -> str | None:
    """A request's id field; null or absent is "not given" (for a narrowing: not narrowed)."""
    value = _as_id(request.get(field))
    if value is None:
        if required:
            raise SubjectError(f"subject.{field} is required")
        return None
    if not valid_id(value):
        raise SubjectError(f"subject.{field} must be a non-empty id (text or an integer) of "
                           f"at most {MAX_ID_LENGTH} characters")
    return str(value)


def subject_from_request(request: Any) -> Subject:
    """The subject a task's `subject` object names, or SubjectError saying which field is
    wrong (never echoing a value: the answer is kept in the result backend)."""
    if not isinstance(request, dict):
        raise SubjectError("subject must be an object with kind and subject_id")
    if any(key not in REQUEST_FIELDS for key in request):
        raise SubjectError(f"subject takes only {', '.join(REQUEST_FIELDS)}")
    kind = request.get("kind")
    if not isinstance(kind, str) or kind not in SUBJECT_KINDS:
        raise SubjectError(KIND_ERROR)
    return Subject(kind, str(_field_id(request, "subject_id", required=True)),
                   _field_id(request, "within_agent", required=False),
                   _field_id(request, "within_company", required=False))


def parse_subject(kind: Any, subject_id: Any, agent_id: Any = None,
                  company_id: Any = None) -> Subject:
    """A subject from separate arguments (the CLI's)."""
    if not isinstance(kind, str):
        raise SubjectError("kind must be a string")
    return Subject(kind, _as_id(subject_id), _as_id(agent_id), _as_id(company_id))
