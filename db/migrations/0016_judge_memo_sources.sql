-- migrate: no-transaction
-- 0016: a judge memo knows which texts it was decided on (`text_hashes`: the content hashes
-- of the notes compared or clustered, as `notes.content_hash` holds them), so erasing a
-- subject, or retention erasing a retired note's text, deletes the memos derived from that
-- text (worker/erasure/, worker/manager/retention.py); and memos past their window go
-- (`created_at`). Memos written before this cannot be traced to their notes: they are
-- dropped — a memo is a cache, and the next cycle asks again.
--
-- No transaction: the indexes are built concurrently. Re-runnable.
ALTER TABLE judge_memo ADD COLUMN IF NOT EXISTS text_hashes text[] NOT NULL DEFAULT '{}';
DELETE FROM judge_memo WHERE text_hashes = '{}';
DROP INDEX CONCURRENTLY IF EXISTS judge_memo_text_hashes_idx;
CREATE INDEX CONCURRENTLY judge_memo_text_hashes_idx ON judge_memo USING gin (text_hashes);
DROP INDEX CONCURRENTLY IF EXISTS judge_memo_created_idx;
CREATE INDEX CONCURRENTLY judge_memo_created_idx ON judge_memo (created_at);
