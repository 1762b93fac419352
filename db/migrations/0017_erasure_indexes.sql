-- migrate: no-transaction
-- 0017: what erasing a subject looks up, indexed (bench/erasure.py). Deleting a note makes
-- Postgres check every foreign key pointing at it: `notes.consolidated_into_note_id` and
-- `notes.superseded_by` had no index, so each deleted note cost two sequential scans of
-- `notes` (1.2 s per note at 1M notes: hours for a user with 10,000), and each deleted
-- candidate a scan of `write_log` (`candidate_id`) and its note reference one of
-- `memory_candidates` (`note_id`). The subject's own rows are found by `user_id` /
-- `company_id` (the lattice indexes lead with the agent), its runs by `user_id`, and the
-- provenance to clear by `source_conversation_id`. All partial: NULLs are never looked up.
--
-- No transaction: the indexes are built concurrently, writes go on. Re-runnable.
DROP INDEX CONCURRENTLY IF EXISTS notes_consolidated_into_idx;
CREATE INDEX CONCURRENTLY notes_consolidated_into_idx ON notes (consolidated_into_note_id)
    WHERE consolidated_into_note_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS notes_superseded_by_idx;
CREATE INDEX CONCURRENTLY notes_superseded_by_idx ON notes (superseded_by)
    WHERE superseded_by IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS notes_source_conversation_idx;
CREATE INDEX CONCURRENTLY notes_source_conversation_idx ON notes (source_conversation_id)
    WHERE source_conversation_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS notes_user_idx;
CREATE INDEX CONCURRENTLY notes_user_idx ON notes (user_id) WHERE user_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS notes_company_idx;
CREATE INDEX CONCURRENTLY notes_company_idx ON notes (company_id) WHERE company_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS memory_candidates_note_idx;
CREATE INDEX CONCURRENTLY memory_candidates_note_idx ON memory_candidates (note_id)
    WHERE note_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS write_log_candidate_idx;
CREATE INDEX CONCURRENTLY write_log_candidate_idx ON write_log (candidate_id)
    WHERE candidate_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS runs_user_idx;
CREATE INDEX CONCURRENTLY runs_user_idx ON runs (user_id) WHERE user_id IS NOT NULL;
