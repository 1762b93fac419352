-- migrate: no-transaction
-- 0018: a write older than what its run already applied that would override a note a later
-- write of the run wrote or changed is refused with a new disposition, `skipped-stale`
-- (worker/writes/pipeline.py, `refuse_stale_override`).
--
-- No transaction, as 0014: the new check is swapped in NOT VALID (one short statement: the
-- old and the new constraint change together, no table scan) and validated separately, which
-- scans write_log without blocking writes. Re-runnable: the swap happens only while the
-- constraint does not yet allow the new disposition.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conname = 'write_log_disposition_check'
                     AND pg_get_constraintdef(oid) LIKE '%skipped-stale%') THEN
        ALTER TABLE write_log DROP CONSTRAINT IF EXISTS write_log_disposition_check;
        ALTER TABLE write_log ADD CONSTRAINT write_log_disposition_check CHECK (disposition IN (
            'written', 'superseded-own', 'deduped', 'skipped-duplicate', 'skipped-cap',
            'skipped-disabled', 'rejected-type', 'rejected-invalid', 'blocked', 'candidate',
            'error', 'rejected-erased', 'forgotten', 'nothing-to-forget',
            'skipped-stale')) NOT VALID;
    END IF;
END
$$;

ALTER TABLE write_log VALIDATE CONSTRAINT write_log_disposition_check;
