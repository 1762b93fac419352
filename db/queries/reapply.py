"""Re-applying erasures to a restored backup (worker/erasure/reapply.py): every identity the
restored rows hold, so their keyed hashes can be compared with the erasure log's.

Each statement streams distinct identities over every table that carries them; nothing is
changed here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, text

# (user, agent, company) of every row that names a user.
_USERS = text("""
SELECT DISTINCT user_id, agent_id, company_id FROM (
    SELECT user_id, agent_id, company_id FROM notes WHERE user_id IS NOT NULL
    UNION SELECT user_id, agent_id, company_id FROM runs WHERE user_id IS NOT NULL
    UNION SELECT user_id, agent_id, company_id FROM conversations WHERE user_id IS NOT NULL
    UNION SELECT user_id, agent_id, company_id FROM examples WHERE user_id IS NOT NULL
    UNION SELECT user_id, agent_id, company_id FROM memory_candidates WHERE user_id IS NOT NULL
) AS identities
""")
_COMPANIES = text("""
SELECT company_id FROM notes WHERE company_id IS NOT NULL
UNION SELECT company_id FROM runs WHERE company_id IS NOT NULL
UNION SELECT company_id FROM conversations WHERE company_id IS NOT NULL
UNION SELECT company_id FROM examples WHERE company_id IS NOT NULL
UNION SELECT company_id FROM memory_candidates WHERE company_id IS NOT NULL
""")
_AGENTS = text("""
SELECT agent_id FROM agents
UNION SELECT agent_id FROM notes WHERE agent_id IS NOT NULL
UNION SELECT agent_id FROM runs
UNION SELECT agent_id FROM conversations WHERE agent_id IS NOT NULL
UNION SELECT agent_id FROM examples
UNION SELECT agent_id FROM memory_candidates
""")
_CONVERSATIONS = text("""
SELECT id FROM conversations
UNION SELECT conversation_id FROM runs WHERE conversation_id IS NOT NULL
UNION SELECT source_conversation_id FROM notes WHERE source_conversation_id IS NOT NULL
UNION SELECT source_conversation_id FROM examples WHERE source_conversation_id IS NOT NULL
""")


def _stream(conn: Connection, statement: Any) -> Iterator[tuple[Any, ...]]:
    result = conn.execution_options(stream_results=True, yield_per=5000).execute(statement)
    for row in result:
        yield tuple(row)


def user_identities(conn: Connection) -> Iterator[tuple[str, str | None, str | None]]:
    """(user, agent, company) triples."""
    yield from _stream(conn, _USERS)  # type: ignore[misc]


def single_ids(conn: Connection, kind: str) -> Iterator[str]:
    """Every company, agent or conversation id the rows hold."""
    statement = {"company": _COMPANIES, "agent": _AGENTS, "conversation": _CONVERSATIONS}[kind]
    for (value,) in _stream(conn, statement):
        yield value
