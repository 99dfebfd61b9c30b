-- What a trial's last run reported as it ended (pb::WorkerOutcome's name): a restarted master's
-- search tells a trial whose hyperparameters were invalid from one that failed by it, not by the
-- exit reason's sentence. Rows stored before it existed are mapped once, here, from that sentence.
ALTER TABLE trials ADD COLUMN outcome text NOT NULL DEFAULT 'WORKER_OUTCOME_UNSPECIFIED';
UPDATE trials SET outcome = 'WORKER_OUTCOME_INVALID_HYPERPARAMETERS'
  WHERE state = 'STATE_ERROR' AND exit_reason LIKE 'invalid hyperparameters%';
