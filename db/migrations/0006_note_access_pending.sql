-- 0006: access statistics recorded beside the notes, folded into them once per cycle.
-- Every context read bumps the injected notes' access counts. Written straight into `notes`,
-- each bump of a hot note (an agent-wide note read by every request) was a new row version:
-- a new 1.6 kB entry in notes_vector_idx and the other indexes, and a heap page no longer
-- all-visible, so the read path's index-only ranking had to visit the heap for it. Here a
-- bump is an upsert into a narrow table; the Memory Manager cycle moves the totals into
-- notes.access_count / last_accessed_at (one update per accessed note per cycle) before any
-- phase reads them. No foreign key: a note deleted meanwhile simply has its row dropped by
-- the next fold.
CREATE TABLE note_access_pending (
    note_id uuid PRIMARY KEY,
    hits integer NOT NULL CHECK (hits > 0),
    last_accessed_at timestamptz NOT NULL
);
