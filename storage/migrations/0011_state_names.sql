-- Experiment and trial states are the names of pb::State (messages/common.proto), STOPPING_*
-- included now that a stop under way is stored; checkpoint states already had their CHECK
-- (0005: 'COMPLETED', 'DELETED', the names of pb::CheckpointState without their prefix).
-- Every row written so far holds such a name, so nothing is converted; a row can hold no other.
ALTER TABLE experiments ADD CONSTRAINT experiments_state_is_a_state CHECK (state IN (
  'STATE_ACTIVE', 'STATE_PAUSED', 'STATE_QUEUED', 'STATE_STARTING', 'STATE_RUNNING',
  'STATE_STOPPING_CANCELED', 'STATE_STOPPING_KILLED', 'STATE_STOPPING_COMPLETED', 'STATE_STOPPING_ERROR',
  'STATE_CANCELED', 'STATE_COMPLETED', 'STATE_ERROR'));
ALTER TABLE trials ADD CONSTRAINT trials_state_is_a_state CHECK (state IN (
  'STATE_ACTIVE', 'STATE_PAUSED', 'STATE_QUEUED', 'STATE_STARTING', 'STATE_RUNNING',
  'STATE_STOPPING_CANCELED', 'STATE_STOPPING_KILLED', 'STATE_STOPPING_COMPLETED', 'STATE_STOPPING_ERROR',
  'STATE_CANCELED', 'STATE_COMPLETED', 'STATE_ERROR'));
