-- 0001: the initial schema. Applied once, in one transaction, by `memory-worker migrate`.
-- The declared schema in db/models.py must match what these files build (tests/test_schema.py).

CREATE EXTENSION IF NOT EXISTS vector;

-- Exact scope of a note: agent, user, company, primary tenant record and secondary tenant
-- dimensions. NULL is kept distinct from every value ("no user" never equals "user X").
-- secondary_scopes is jsonb, whose text form has a canonical key order.
CREATE FUNCTION memory_scope_key(
    agent_id text, user_id text, company_id text,
    primary_scope_entity text, primary_scope_record_id text, secondary_scopes jsonb
) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN md5(
    coalesce('a:' || agent_id, '-') || chr(31) ||
    coalesce('u:' || user_id, '-') || chr(31) ||
    coalesce('c:' || company_id, '-') || chr(31) ||
    coalesce('e:' || primary_scope_entity, '-') || chr(31) ||
    coalesce('r:' || primary_scope_record_id, '-') || chr(31) ||
    secondary_scopes::text
)::uuid;

CREATE TABLE agents (
    agent_id text PRIMARY KEY CHECK (length(agent_id) BETWEEN 1 AND 200),
    allow_memory_write boolean NOT NULL DEFAULT true,
    inject_notes boolean NOT NULL DEFAULT true,
    max_notes_to_inject integer NOT NULL DEFAULT 5 CHECK (max_notes_to_inject BETWEEN 0 AND 100),
    note_injection_strategy text NOT NULL DEFAULT 'Relevant'
        CHECK (note_injection_strategy IN ('Relevant', 'Recent', 'All')),
    inject_examples boolean NOT NULL DEFAULT false,
    max_examples_to_inject integer NOT NULL DEFAULT 3 CHECK (max_examples_to_inject BETWEEN 0 AND 50),
    example_injection_strategy text NOT NULL DEFAULT 'Semantic'
        CHECK (example_injection_strategy IN ('Semantic', 'Recent', 'Rated')),
    per_run_cap integer CHECK (per_run_cap BETWEEN 0 AND 1000),
    reranker_config jsonb,
    scope_config jsonb,
    auto_archive_enabled boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE notes (
    id uuid PRIMARY KEY,
    agent_id text,
    user_id text,
    company_id text,
    primary_scope_entity text,
    primary_scope_record_id text,
    secondary_scopes jsonb NOT NULL DEFAULT '{}'::jsonb
        CHECK (jsonb_typeof(secondary_scopes) = 'object'),
    scope_key uuid NOT NULL GENERATED ALWAYS AS (memory_scope_key(
        agent_id, user_id, company_id, primary_scope_entity, primary_scope_record_id,
        secondary_scopes)) STORED,
    type text NOT NULL
        CHECK (type IN ('Preference', 'Constraint', 'Context', 'Example', 'Issue')),
    note text NOT NULL CHECK (length(note) > 0),
    content_hash text NOT NULL,
    status text NOT NULL
        CHECK (status IN ('Pending', 'Active', 'Provisional', 'Revoked', 'Archived')),
    author_type text NOT NULL DEFAULT 'MemoryManager'
        CHECK (author_type IN ('Agent', 'MemoryManager', 'User')),
    protection_tier text NOT NULL DEFAULT 'Standard'
        CHECK (protection_tier IN ('Immutable', 'Protected', 'Standard', 'Ephemeral')),
    importance_score real CHECK (importance_score BETWEEN 0 AND 10),
    confidence smallint CHECK (confidence BETWEEN 0 AND 100),
    access_count integer NOT NULL DEFAULT 0 CHECK (access_count >= 0),
    last_accessed_at timestamptz,
    expires_at timestamptz,
    embedding vector,
    embedding_model text,
    source_conversation_id text,
    source_conversation_detail_id text,
    source_agent_run_id text,
    derived_from_note_ids uuid[] NOT NULL DEFAULT '{}',
    consolidated_into_note_id uuid REFERENCES notes (id),
    consolidation_count integer NOT NULL DEFAULT 0 CHECK (consolidation_count >= 0),
    superseded_by uuid REFERENCES notes (id),
    valid_from timestamptz NOT NULL DEFAULT now(),
    valid_to timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((embedding IS NULL) = (embedding_model IS NULL)),
    CHECK (valid_to IS NULL OR valid_to >= valid_from)
);

-- Partial indexes cover injectable rows only (Active, Provisional).
CREATE INDEX notes_scope_content_idx ON notes (scope_key, content_hash)
    WHERE status IN ('Active', 'Provisional');
CREATE INDEX notes_expires_at_idx ON notes (expires_at)
    WHERE status IN ('Active', 'Provisional') AND expires_at IS NOT NULL;
CREATE INDEX notes_source_run_idx ON notes (source_agent_run_id)
    WHERE source_agent_run_id IS NOT NULL;

CREATE TABLE runs (
    run_id text PRIMARY KEY CHECK (length(run_id) BETWEEN 1 AND 200),
    agent_id text NOT NULL,
    user_id text,
    company_id text,
    conversation_id text,
    conversation_detail_id text,
    primary_scope_entity text,
    primary_scope_record_id text,
    secondary_scopes jsonb NOT NULL DEFAULT '{}'::jsonb,
    source text NOT NULL DEFAULT 'user',
    -- Digest of the identity fields above: every write of a run must carry the same context.
    context_digest text NOT NULL,
    applied_seq bigint NOT NULL DEFAULT 0 CHECK (applied_seq >= 0),
    persisted_count integer NOT NULL DEFAULT 0 CHECK (persisted_count >= 0),
    gap_wait_started_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The idempotency record: one row per applied (run, seq).
CREATE TABLE write_log (
    run_id text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq bigint NOT NULL CHECK (seq >= 1),
    payload_digest text NOT NULL,
    disposition text NOT NULL CHECK (disposition IN (
        'written', 'superseded-own', 'deduped', 'skipped-duplicate', 'skipped-cap',
        'skipped-disabled', 'rejected-type', 'rejected-invalid', 'blocked', 'candidate',
        'error')),
    note_id uuid REFERENCES notes (id),
    reason text NOT NULL,
    final_scope jsonb,
    duration_ms real NOT NULL,
    task_id text,
    applied_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX write_log_note_idx ON write_log (note_id) WHERE note_id IS NOT NULL;

-- Run steps / trace events. Never carries raw memory text.
CREATE TABLE trace_events (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    event text NOT NULL,
    run_id text,
    seq bigint,
    agent_id text,
    disposition text,
    note_id uuid,
    reason text,
    detail jsonb NOT NULL DEFAULT '{}'::jsonb,
    duration_ms real,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX trace_events_run_idx ON trace_events (run_id, id) WHERE run_id IS NOT NULL;
CREATE INDEX trace_events_event_idx ON trace_events (event, created_at);

CREATE TABLE conversations (
    id text PRIMARY KEY,
    agent_id text,
    user_id text,
    company_id text,
    primary_scope_entity text,
    primary_scope_record_id text,
    secondary_scopes jsonb NOT NULL DEFAULT '{}'::jsonb,
    agent_run_id text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE conversation_messages (
    id text PRIMARY KEY,
    conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    text text NOT NULL,
    rating smallint CHECK (rating BETWEEN 1 AND 10),
    rating_comment text,
    agent_run_id text,
    created_at timestamptz NOT NULL DEFAULT now(),
    ingested_seq bigint GENERATED BY DEFAULT AS IDENTITY NOT NULL
);
CREATE INDEX conversation_messages_conv_idx ON conversation_messages (conversation_id, created_at);
CREATE INDEX conversation_messages_ingested_idx ON conversation_messages (ingested_seq);

CREATE TABLE examples (
    id uuid PRIMARY KEY,
    agent_id text NOT NULL,
    user_id text,
    company_id text,
    primary_scope_entity text,
    primary_scope_record_id text,
    secondary_scopes jsonb NOT NULL DEFAULT '{}'::jsonb,
    input_text text NOT NULL,
    output_text text NOT NULL,
    success_score real CHECK (success_score BETWEEN 0 AND 10),
    status text NOT NULL DEFAULT 'Active'
        CHECK (status IN ('Pending', 'Active', 'Provisional', 'Revoked', 'Archived')),
    embedding vector,
    embedding_model text,
    source_conversation_id text,
    access_count integer NOT NULL DEFAULT 0,
    last_accessed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((embedding IS NULL) = (embedding_model IS NULL))
);
CREATE INDEX examples_agent_idx ON examples (agent_id, created_at)
    WHERE status IN ('Active', 'Provisional');

CREATE TABLE manager_cycles (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    status text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'skipped')),
    forced boolean NOT NULL DEFAULT false,
    maintenance boolean NOT NULL DEFAULT false,
    started_at timestamptz NOT NULL,
    finished_at timestamptz,
    phases jsonb NOT NULL DEFAULT '[]'::jsonb,
    counts jsonb NOT NULL DEFAULT '{}'::jsonb,
    watermarks jsonb NOT NULL DEFAULT '{}'::jsonb,
    error text
);
CREATE INDEX manager_cycles_started_idx ON manager_cycles (started_at);
