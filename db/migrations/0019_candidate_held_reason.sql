-- 0019: a candidate says why it is held (`held_reason`): `promotion-required` for internal
-- memory awaiting review (SPEC 5), or the effect a user write was quarantined for
-- (`effect-third-party-claim`, `effect-send-to-address`, …; worker/writes/admission/effects.py).
-- Operators see it in `memory-worker candidates list`. Nullable with no default: adding it
-- rewrites nothing. Rows held before this were all held for promotion.
ALTER TABLE memory_candidates ADD COLUMN IF NOT EXISTS held_reason text;
UPDATE memory_candidates SET held_reason = 'promotion-required' WHERE held_reason IS NULL;
