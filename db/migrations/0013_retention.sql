-- migrate: no-transaction
-- 0013: retention (worker/manager/retention.py, db/queries/retention.py). Storage stays
-- bounded: old write-log rows, runs, trace events, extracted conversation messages, note
-- events and cycle rows are deleted, and an Archived or Revoked note loses its text,
-- content hash and vector once it has been retired for the retention window. Its row stays:
-- id, scope, status, timestamps and the superseded/consolidated references are the lineage.
--
-- No transaction, so the index builds and the constraint check do not block writes on large
-- tables. Re-runnable: every statement is idempotent, and each index is dropped before it is
-- built (a failed concurrent build leaves an INVALID index behind).

-- Erased text is NULL rather than a placeholder: nothing can mistake it for a memory.
ALTER TABLE notes ALTER COLUMN note DROP NOT NULL;
ALTER TABLE notes ALTER COLUMN content_hash DROP NOT NULL;
ALTER TABLE notes ADD COLUMN IF NOT EXISTS content_erased_at timestamptz;

-- A note has its text until it is erased, and only a retired note can be erased: an erased
-- note can never become injectable again (the database refuses it, whatever code tries).
-- Added NOT VALID and validated separately: validation scans the table without blocking
-- writes (a plain ADD CONSTRAINT would hold an exclusive lock for the whole scan).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'notes_content_erased_check') THEN
        ALTER TABLE notes ADD CONSTRAINT notes_content_erased_check CHECK (
            (content_erased_at IS NULL AND note IS NOT NULL AND content_hash IS NOT NULL)
            OR (content_erased_at IS NOT NULL AND note IS NULL AND content_hash IS NULL
                AND embedding IS NULL AND status IN ('Archived', 'Revoked'))) NOT VALID;
    END IF;
END
$$;
ALTER TABLE notes VALIDATE CONSTRAINT notes_content_erased_check;

-- Retired notes whose text is still there, oldest retirement first. valid_to is when a note
-- left the injectable set (every phase that retires a note sets it); updated_at stands in
-- for a row retired by hand without one.
DROP INDEX CONCURRENTLY IF EXISTS notes_erasable_idx;
CREATE INDEX CONCURRENTLY notes_erasable_idx ON notes ((coalesce(valid_to, updated_at)), id)
    WHERE status IN ('Archived', 'Revoked') AND content_erased_at IS NULL;

-- Runs by age. created_at never changes, so this index does not cost the write path its HOT
-- updates of runs (updated_at changes on every write; an index on it would).
DROP INDEX CONCURRENTLY IF EXISTS runs_created_idx;
CREATE INDEX CONCURRENTLY runs_created_idx ON runs (created_at, run_id);

-- Trace events by age: each retention page reads exactly the rows it deletes.
DROP INDEX CONCURRENTLY IF EXISTS trace_events_created_idx;
CREATE INDEX CONCURRENTLY trace_events_created_idx ON trace_events (created_at, id);
