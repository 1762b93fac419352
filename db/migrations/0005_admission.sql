-- 0005: write admission, promotion of internal memory and trust controls (SPEC 5).
-- worker/admission.py is the policy; the state it needs lives here, under the run's advisory
-- lock, so limits and duplicate fingerprints hold across every worker process.

-- An agent's own MemoryPolicy fields (a partial object; the global settings fill the rest).
ALTER TABLE agents ADD COLUMN memory_policy jsonb
    CHECK (memory_policy IS NULL OR jsonb_typeof(memory_policy) = 'object');

-- Writes of the run that admission let through (any outcome after it, candidates included):
-- what `max_writes_per_run` counts. `persisted_count` (new notes, per_run_cap) is separate.
ALTER TABLE runs ADD COLUMN admitted_count integer NOT NULL DEFAULT 0
    CHECK (admitted_count >= 0);

-- Internal memory (reflection, self-learning, delegation, tool output, …) waiting for a
-- promotion decision. Its own table, so a candidate is non-injectable by construction: the
-- read path only ever reads `notes`. The scope is the clamped scope the note would get.
CREATE TABLE memory_candidates (
    id uuid PRIMARY KEY,
    run_id text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq bigint NOT NULL CHECK (seq >= 1),
    agent_id text NOT NULL,
    user_id text,
    company_id text,
    primary_scope_entity text,
    primary_scope_record_id text,
    secondary_scopes jsonb NOT NULL DEFAULT '{}'::jsonb
        CHECK (jsonb_typeof(secondary_scopes) = 'object'),
    scope_key uuid NOT NULL GENERATED ALWAYS AS (memory_scope_key(
        agent_id, user_id, company_id, primary_scope_entity, primary_scope_record_id,
        secondary_scopes)) STORED,
    source text NOT NULL,
    type text NOT NULL CHECK (type IN ('Preference', 'Context')),
    note text NOT NULL CHECK (length(note) > 0),
    content_hash text NOT NULL,
    conversation_id text,
    conversation_detail_id text,
    status text NOT NULL DEFAULT 'candidate'
        CHECK (status IN ('candidate', 'promoted', 'rejected')),
    -- The last decision's reason (a reason code or an operator's words; never the note).
    decision_reason text,
    decided_by text,
    decided_at timestamptz,
    -- The note a promotion wrote (or found: a dedupe points at the existing note).
    note_id uuid REFERENCES notes (id),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- One pending candidate per run, scope and text: a reflection repeating itself is held once.
CREATE UNIQUE INDEX memory_candidates_pending_idx
    ON memory_candidates (run_id, scope_key, content_hash) WHERE status = 'candidate';
CREATE INDEX memory_candidates_agent_idx ON memory_candidates (agent_id, status, created_at);
CREATE INDEX memory_candidates_run_idx ON memory_candidates (run_id, created_at);

-- The write log records admission's outcome, so a replay returns it unchanged.
ALTER TABLE write_log ADD COLUMN reason_code text;
ALTER TABLE write_log ADD COLUMN candidate_id uuid REFERENCES memory_candidates (id);
-- The duplicate fingerprint of an admitted write (scope, source, normalized text hashed).
ALTER TABLE write_log ADD COLUMN admission_fingerprint text;
CREATE INDEX write_log_fingerprint_idx ON write_log (run_id, admission_fingerprint)
    WHERE admission_fingerprint IS NOT NULL;
