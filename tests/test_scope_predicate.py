"""The SQL form of the scope predicate agrees with its Python form, on random notes and requests."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db.queries import retrieval as q
from db.scope import DimensionRule, Inheritance, NoteScope, RequestScope, ScopeConfig, is_visible

NOW = datetime(2026, 6, 15, tzinfo=UTC)
DIMENSIONS = {"region": ["eu", "us"], "team": ["red", "blue"], "tier": [1, 2]}

maybe = st.one_of
agents = st.sampled_from([None, "A1", "A2"])
users = st.sampled_from([None, "U1", "U2"])
companies = st.sampled_from([None, "C1", "C2"])
records = st.sampled_from([None, "r1", "r2"])


@st.composite
def note_secondary(draw):
    names = draw(st.sets(st.sampled_from(sorted(DIMENSIONS)), max_size=2))
    return {name: draw(st.sampled_from(DIMENSIONS[name])) for name in names}


@st.composite
def request_secondary(draw):
    names = draw(st.sets(st.sampled_from(sorted(DIMENSIONS)), max_size=3))
    out = {}
    for name in names:
        values = draw(st.lists(st.sampled_from(DIMENSIONS[name]), min_size=1, max_size=2,
                               unique=True))
        out[name] = values if len(values) > 1 or draw(st.booleans()) else values[0]
    return out


@st.composite
def notes(draw):
    record = draw(records)
    return (
        NoteScope(draw(agents), draw(users), draw(companies),
                  "Account" if record else None, record, draw(note_secondary())),
        draw(st.sampled_from(["Active", "Provisional", "Archived", "Revoked"])),
        draw(st.sampled_from([None, NOW - timedelta(days=1), NOW + timedelta(days=1)])),
    )


@st.composite
def requests(draw):
    record = draw(records)
    return RequestScope(
        agent_id=draw(st.sampled_from(["A1", "A2"])), user_id=draw(users),
        company_id=draw(companies), primary_scope_entity="Account" if record else None,
        primary_scope_record_id=record, secondary_scopes=draw(request_secondary()),
        shared_only=draw(st.booleans()),
    )


configs = st.builds(
    lambda modes: ScopeConfig(dimensions={name: DimensionRule(Inheritance(mode))
                                          for name, mode in modes.items()}),
    st.fixed_dictionaries({name: st.sampled_from(["cascading", "strict"]) for name in DIMENSIONS}),
)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(notes(), min_size=1, max_size=40), st.lists(requests(), min_size=1, max_size=5),
       configs)
def test_sql_and_python_predicates_agree(services, db, stored, asked, config):
    ids = [uuid.uuid4() for _ in stored]
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute("TRUNCATE notes CASCADE")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO notes (id, agent_id, user_id, company_id, primary_scope_entity, "
                "primary_scope_record_id, secondary_scopes, type, note, content_hash, status, "
                "expires_at) VALUES (%s, %s, %s, %s, %s, %s, %s, 'Context', 'n', 'h', %s, %s)",
                [(i, s.agent_id, s.user_id, s.company_id, s.primary_scope_entity,
                  s.primary_scope_record_id, json.dumps(s.secondary_scopes), status, expires)
                 for i, (s, status, expires) in zip(ids, stored, strict=True)])
    with db.connect() as conn:
        for request in asked:
            expected = {
                i for i, (scope, status, expires) in zip(ids, stored, strict=True)
                if is_visible(scope, request, config) and status in ("Active", "Provisional")
                and (expires is None or expires > NOW)
            }
            assert q.visible_note_ids(conn, request, config, NOW) == expected, request
        conn.rollback()
