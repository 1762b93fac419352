"""The SQL form of the scope predicate agrees with its Python form, on random notes and requests."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db.queries.retrieval import all_notes, recent_notes, relevant_notes, visible_note_ids
from db.scope import (
    LEVEL_RANK,
    DimensionRule,
    Inheritance,
    NoteScope,
    RequestScope,
    ScopeConfig,
    is_visible,
)

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
            assert visible_note_ids(conn, request, config, NOW) == expected, request
        conn.rollback()


MODELS = {"small": 8, "big": 700}  # 700 dims: 2.8 kB, too big for notes_vector_idx's rows


@st.composite
def embedded_notes(draw):
    scope, status, expires = draw(notes())
    model = draw(st.sampled_from([None, "small", "big"]))
    seed = draw(st.integers(0, 2**32 - 1))
    return scope, status, expires, model, seed


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(embedded_notes(), min_size=1, max_size=40),
       st.lists(st.tuples(requests(), st.sampled_from(sorted(MODELS)), st.integers(0, 2**32 - 1),
                          st.integers(1, 4), st.sampled_from([-1.0, 0.0, 0.3])),
                min_size=1, max_size=4),
       configs)
def test_ranking_and_date_order_are_the_exact_top_n_of_the_scoped_set(services, db, stored, asked,
                                                                config):
    """The two-step ranking and date orders (index-only over both lattice indexes, then the
    predicate in order) against a brute-force oracle, on the generic-plan connections the
    context reads on: rows too big for the covering index and rows without a vector
    included."""
    import numpy as np
    from pgvector.psycopg import register_vector

    def vector(model: str, seed: int) -> np.ndarray:
        return np.random.default_rng(seed).standard_normal(MODELS[model]).astype(np.float32)

    def created(seed: int) -> datetime:  # coarse on purpose: equal dates are ordered by id
        return NOW - timedelta(minutes=seed % 50)

    # Random scopes are mostly invisible to a random request: give every request notes at
    # its own lattice levels too (both models, both statuses, none expired, some of them
    # exactly its query: ties broken by id).
    for n, (request, _, seed, _, _) in enumerate(asked):
        for k, (user, company) in enumerate([(request.user_id, request.company_id),
                                             (None, request.company_id), (None, None)] * 2):
            scope = NoteScope(request.agent_id, user, company, None, None, {})
            stored = [*stored, (scope, ("Active", "Provisional")[k % 2], None,
                                ("small", "big")[(n + k) % 2], seed + k % 3)]
    ids = [uuid.uuid4() for _ in stored]
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("TRUNCATE notes CASCADE")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO notes (id, agent_id, user_id, company_id, primary_scope_entity, "
                "primary_scope_record_id, secondary_scopes, type, note, content_hash, status, "
                "expires_at, embedding, embedding_model, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, 'Context', 'n', 'h', %s, %s, %s, %s, %s)",
                [(i, s.agent_id, s.user_id, s.company_id, s.primary_scope_entity,
                  s.primary_scope_record_id, json.dumps(s.secondary_scopes), status, expires,
                  None if model is None else vector(model, seed), model, created(seed))
                 for i, (s, status, expires, model, seed) in zip(ids, stored, strict=True)])
    checked: list[int] = []
    with db.read(generic_plans=True) as conn:
        for request, model, seed, per_status, min_similarity in asked:
            query = vector(model, seed)
            scored: dict[str, list[tuple[float, uuid.UUID]]] = {"Active": [], "Provisional": []}
            for i, (scope, status, expires, note_model, note_seed) in zip(ids, stored,
                                                                           strict=True):
                if (note_model != model or status not in scored
                        or not is_visible(scope, request, config)
                        or (expires is not None and expires <= NOW)):
                    continue
                v = vector(model, note_seed)
                similarity = float(v @ query / (np.linalg.norm(v) * np.linalg.norm(query)))
                if similarity >= min_similarity:
                    scored[status].append((similarity, i))
            expected = {i for rows in scored.values()
                        for _, i in sorted(rows, key=lambda r: (-r[0], r[1]))[:per_status]}
            found = relevant_notes(conn, request, config, query=query, embedding_model=model,
                                   min_similarity=min_similarity, per_status=per_status,
                                   now=NOW)
            assert {n.id for n in found} == expected, (request, model)
            checked.append(len(expected))
            similarities = [n.similarity for n in found]
            assert similarities == sorted(similarities, reverse=True)

            # Recent and All (no vector needed), the same two steps ordered by date.
            live = [(i, scope, status, seed) for i, (scope, status, expires, _, seed)
                    in zip(ids, stored, strict=True)
                    if status in scored and is_visible(scope, request, config)
                    and (expires is None or expires > NOW)]
            for fetch, by_scope in ((recent_notes, False), (all_notes, True)):
                def key(row, by_scope=by_scope):
                    i, scope, _, seed = row
                    level = LEVEL_RANK[(scope.agent_id is not None, scope.user_id is not None,
                                        scope.company_id is not None)]
                    return (level if by_scope else 0, -created(seed).timestamp(), i)
                tops = [row for status in scored for row in
                        sorted((r for r in live if r[2] == status), key=key)[:per_status]]
                got = fetch(conn, request, config, per_status=per_status, now=NOW)
                assert [n.id for n in got] == [r[0] for r in sorted(tops, key=key)], fetch
    assert checked
