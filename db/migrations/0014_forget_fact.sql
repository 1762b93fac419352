-- migrate: no-transaction
-- 0014: an agent forgets one fact on its user's request (worker/erasure/fact.py). The request
-- runs in its run's order like a write and is recorded in write_log with one of two new
-- dispositions: `forgotten` (notes revoked) or `nothing-to-forget`.
--
-- No transaction: the new check is swapped in NOT VALID (one short statement: the old and the
-- new constraint change together, no table scan) and validated separately, which scans
-- write_log without blocking writes. Re-runnable: the swap happens only while the constraint
-- does not yet allow the new dispositions.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conname = 'write_log_disposition_check'
                     AND pg_get_constraintdef(oid) LIKE '%nothing-to-forget%') THEN
        ALTER TABLE write_log DROP CONSTRAINT IF EXISTS write_log_disposition_check;
        ALTER TABLE write_log ADD CONSTRAINT write_log_disposition_check CHECK (disposition IN (
            'written', 'superseded-own', 'deduped', 'skipped-duplicate', 'skipped-cap',
            'skipped-disabled', 'rejected-type', 'rejected-invalid', 'blocked', 'candidate',
            'error', 'rejected-erased', 'forgotten', 'nothing-to-forget')) NOT VALID;
    END IF;
END
$$;

ALTER TABLE write_log VALIDATE CONSTRAINT write_log_disposition_check;
