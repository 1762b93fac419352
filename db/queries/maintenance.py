"""Set-based maintenance statements (SPEC 7.3): importance, decay, TTL and stale-reference
pruning. Each statement changes a page of notes and writes their lineage events in one
round trip; none loads notes into Python one by one."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Connection, text

from db.enums import INJECTABLE_SQL, NoteStatus, ProtectionTier

_ACTIVE = NoteStatus.ACTIVE.value
_ARCHIVED = NoteStatus.ARCHIVED.value
_IMMUTABLE = ProtectionTier.IMMUTABLE.value
_PROTECTED = ProtectionTier.PROTECTED.value
_EPHEMERAL = ProtectionTier.EPHEMERAL.value

# --- importance ------------------------------------------------------------------------------

# Seven signals in [0, 1]; a signal that is unavailable for a note (NULL) gives its weight to
# the others. Uniqueness is 1 - the cosine to the nearest *other* injectable note of the same
# exact scope (a note is never its own neighbour). Correction provenance and extraction
# confidence are columns, not parsed from text.
IMPORTANCE_WEIGHTS = {
    "access": 0.25, "recency": 0.10, "confidence": 0.15, "type": 0.10, "author": 0.10,
    "correction": 0.10, "uniqueness": 0.20,
}

_SCORE_PAGE = text(f"""
WITH page AS (
    SELECT id FROM notes
    WHERE {INJECTABLE_SQL} AND id > :after
    ORDER BY id LIMIT :limit
), signals AS (
    SELECT n.id,
        least(1.0, ln(1 + n.access_count) / ln(51)) AS s_access,
        CASE WHEN n.last_accessed_at IS NULL THEN NULL
             ELSE exp(-greatest(0, extract(epoch FROM (:now - n.last_accessed_at)))
                      / 86400.0 / 30.0) END AS s_recency,
        n.confidence / 100.0 AS s_confidence,
        CASE n.type WHEN 'Constraint' THEN 1.0 WHEN 'Issue' THEN 0.8
                    WHEN 'Preference' THEN 0.6 ELSE 0.5 END AS s_type,
        CASE n.author_type WHEN 'User' THEN 1.0 WHEN 'MemoryManager' THEN 0.7
                           ELSE 0.5 END AS s_author,
        CASE WHEN n.corrects_note_id IS NOT NULL THEN 1.0 ELSE 0.0 END AS s_correction,
        CASE WHEN n.embedding IS NULL THEN NULL
             ELSE 1.0 - greatest(0.0, coalesce(nearest.similarity, 0.0)) END AS s_uniqueness
    FROM page JOIN notes n ON n.id = page.id
    LEFT JOIN LATERAL (
        SELECT 1 - (o.embedding <=> n.embedding) AS similarity
        FROM notes o
        WHERE n.embedding IS NOT NULL AND o.scope_key = n.scope_key AND o.{INJECTABLE_SQL}
          AND o.id <> n.id AND o.embedding_model = n.embedding_model
        ORDER BY o.embedding <=> n.embedding
        LIMIT 1
    ) AS nearest ON true
), scored AS (
    SELECT id, 10.0 * (
          :w_access * s_access + coalesce(:w_recency * s_recency, 0)
        + coalesce(:w_confidence * s_confidence, 0) + :w_type * s_type + :w_author * s_author
        + :w_correction * s_correction + coalesce(:w_uniqueness * s_uniqueness, 0)
    ) / (
          :w_access + CASE WHEN s_recency IS NULL THEN 0 ELSE :w_recency END
        + CASE WHEN s_confidence IS NULL THEN 0 ELSE :w_confidence END + :w_type + :w_author
        + :w_correction + CASE WHEN s_uniqueness IS NULL THEN 0 ELSE :w_uniqueness END
    ) AS score
    FROM signals
), updated AS (
    UPDATE notes n SET importance_score = least(10, greatest(0, s.score))
    FROM scored s
    WHERE n.id = s.id AND n.importance_score IS DISTINCT FROM least(10, greatest(0, s.score))
    RETURNING n.id
)
SELECT (SELECT max(id::text) FROM page) AS last_id, (SELECT count(*) FROM page) AS seen,
       (SELECT count(*) FROM updated) AS changed
""")  # noqa: S608 - our own constants only


def score_importance_page(conn: Connection, *, after: uuid.UUID, limit: int,
                          now: datetime) -> tuple[uuid.UUID | None, int, int]:
    params = {f"w_{k}": v for k, v in IMPORTANCE_WEIGHTS.items()}
    row = conn.execute(_SCORE_PAGE, {**params, "after": after, "limit": limit,
                                     "now": now}).one()
    last = uuid.UUID(row.last_id) if row.last_id else None
    return last, int(row.seen), int(row.changed)


# --- decay -----------------------------------------------------------------------------------

# Ebbinghaus: R(t) = R(t0) * exp(-lambda * days), lambda = base * (1 - 0.8 * importance / 10),
# doubled for Ephemeral; accesses since the last decay multiply R by up to `boost_cap`.
# Cumulative: R and the time it refers to are stored, so running the phase more or less often
# gives the same curve, and a boost earned once is not recomputed away.
_DECAY = text(f"""
WITH page AS (
    SELECT id FROM notes
    WHERE status = '{_ACTIVE}' AND protection_tier <> '{_IMMUTABLE}' AND id > :after
    ORDER BY id LIMIT :limit
), computed AS (
    SELECT n.id, n.access_count AS access_seen,
        least(1.0, greatest(0.0,
            n.retention
            * exp(-(:base_lambda * (1 - 0.8 * coalesce(n.importance_score, 5) / 10.0)
                    * CASE WHEN n.protection_tier = '{_EPHEMERAL}' THEN 2 ELSE 1 END)
                  * greatest(0, extract(epoch FROM (:now - coalesce(n.retention_at,
                        n.hardened_at, n.created_at)))) / 86400.0)
            * least(:boost_cap, 1 + :boost_per_access
                    * greatest(0, n.access_count - n.access_count_at_decay)))) AS retention,
        (n.protection_tier NOT IN ('{_PROTECTED}', '{_IMMUTABLE}')
         AND coalesce(a.auto_archive_enabled, true)) AS may_archive
    FROM page JOIN notes n ON n.id = page.id
    LEFT JOIN agents a ON a.agent_id = n.agent_id
), updated AS (
    UPDATE notes n SET
        retention = c.retention,
        retention_at = :now,
        -- accesses after this statement's snapshot still count at the next decay
        access_count_at_decay = c.access_seen,
        status = CASE WHEN c.may_archive AND c.retention < :archive_below
                      THEN '{_ARCHIVED}' ELSE n.status END,
        valid_to = CASE WHEN c.may_archive AND c.retention < :archive_below
                        THEN greatest(n.valid_from, :now) ELSE n.valid_to END
    FROM computed c
    WHERE n.id = c.id AND n.status = '{_ACTIVE}'
    RETURNING n.id, n.status, c.retention
), events AS (
    INSERT INTO note_events (note_id, action, from_status, to_status, actor, reason, cycle_id,
        detail, created_at)
    SELECT id, 'decayed', '{_ACTIVE}', '{_ARCHIVED}', 'decay',
        'retention fell below the archive threshold', :cycle_id,
        jsonb_build_object('retention', round(retention::numeric, 4)), :now
    FROM updated WHERE status = '{_ARCHIVED}'
)
SELECT (SELECT max(id::text) FROM page) AS last_id, (SELECT count(*) FROM page) AS seen,
       (SELECT count(*) FROM updated WHERE status = '{_ARCHIVED}') AS archived
""")  # noqa: S608


def decay_page(conn: Connection, *, after: uuid.UUID, limit: int, now: datetime,
               base_lambda: float, boost_per_access: float, boost_cap: float,
               archive_below: float, cycle_id: int | None) -> tuple[uuid.UUID | None, int, int]:
    row = conn.execute(_DECAY, {
        "after": after, "limit": limit, "now": now, "base_lambda": base_lambda,
        "boost_per_access": boost_per_access, "boost_cap": boost_cap,
        "archive_below": archive_below, "cycle_id": cycle_id,
    }).one()
    last = uuid.UUID(row.last_id) if row.last_id else None
    return last, int(row.seen), int(row.archived)


# --- TTL -------------------------------------------------------------------------------------

_EXPIRE = text(f"""
WITH expired AS (
    SELECT id, status FROM notes
    WHERE {INJECTABLE_SQL} AND expires_at IS NOT NULL AND expires_at <= :now
    ORDER BY expires_at LIMIT :limit
    FOR UPDATE SKIP LOCKED
), archived AS (
    UPDATE notes n SET status = '{_ARCHIVED}', valid_to = greatest(n.valid_from, :now),
        updated_at = :now
    FROM expired e WHERE n.id = e.id
    RETURNING n.id, e.status AS from_status
), events AS (
    INSERT INTO note_events (note_id, action, from_status, to_status, actor, reason, cycle_id,
        created_at)
    SELECT id, 'expired', from_status, '{_ARCHIVED}', 'ttl', 'expires_at passed', :cycle_id,
        :now
    FROM archived
)
SELECT count(*) FROM archived
""")  # noqa: S608


def expire_page(conn: Connection, *, now: datetime, limit: int, cycle_id: int | None) -> int:
    return int(conn.execute(_EXPIRE, {"now": now, "limit": limit,
                                      "cycle_id": cycle_id}).scalar_one())


# --- stale references ------------------------------------------------------------------------

# An injectable note whose references went stale: its source conversation was recorded and
# then deleted (a tombstone; a conversation this system never held is only provenance), or it
# was superseded / consolidated into another note but is still injectable (left behind by an
# interrupted change). Paged by id from a stored cursor, wrapping around, so every note is
# visited in turn instead of the same oldest page every time.
_STALE_PAGE = text(f"""
WITH page AS (
    SELECT id FROM notes
    WHERE {INJECTABLE_SQL} AND id > :after
    ORDER BY id LIMIT :limit
), stale AS (
    SELECT n.id, n.status,
        CASE WHEN n.superseded_by IS NOT NULL THEN 'superseded by another note'
             WHEN n.consolidated_into_note_id IS NOT NULL THEN 'consolidated into another note'
             ELSE 'source conversation deleted' END AS reason
    FROM page JOIN notes n ON n.id = page.id
    WHERE n.superseded_by IS NOT NULL OR n.consolidated_into_note_id IS NOT NULL
       OR (n.source_conversation_id IS NOT NULL
           AND EXISTS (SELECT 1 FROM conversation_tombstones t
                       WHERE t.conversation_id = n.source_conversation_id)
           AND NOT EXISTS (SELECT 1 FROM conversations c
                           WHERE c.id = n.source_conversation_id))
    FOR UPDATE OF n SKIP LOCKED
), archived AS (
    UPDATE notes n SET status = '{_ARCHIVED}', valid_to = greatest(n.valid_from, :now),
        updated_at = :now
    FROM stale s WHERE n.id = s.id
    RETURNING n.id, s.status AS from_status, s.reason
), events AS (
    INSERT INTO note_events (note_id, action, from_status, to_status, actor, reason, cycle_id,
        created_at)
    SELECT id, 'pruned', from_status, '{_ARCHIVED}', 'stale_references', reason, :cycle_id, :now
    FROM archived
)
SELECT (SELECT max(id::text) FROM page) AS last_id, (SELECT count(*) FROM page) AS seen,
       (SELECT count(*) FROM archived) AS archived
""")  # noqa: S608


def prune_stale_page(conn: Connection, *, after: uuid.UUID, limit: int, now: datetime,
                     cycle_id: int | None) -> tuple[uuid.UUID | None, int, int]:
    row = conn.execute(_STALE_PAGE, {"after": after, "limit": limit, "now": now,
                                     "cycle_id": cycle_id}).one()
    last = uuid.UUID(row.last_id) if row.last_id else None
    return last, int(row.seen), int(row.archived)
