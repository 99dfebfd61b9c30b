-- Checkpoints trials saved on the checkpoint storage; GC marks them DELETED once their files are gone.
CREATE TABLE checkpoints (
  uuid uuid PRIMARY KEY,
  trial_id bigint NOT NULL REFERENCES trials (id),
  steps_completed bigint NOT NULL,
  total_records bigint NOT NULL DEFAULT 0,
  total_epochs double precision NOT NULL DEFAULT 0,
  state text NOT NULL DEFAULT 'COMPLETED' CHECK (state IN ('COMPLETED', 'DELETED')),
  resources jsonb NOT NULL DEFAULT '{}',
  storage_path text NOT NULL,
  report_time timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX checkpoints_by_trial ON checkpoints (trial_id, steps_completed);
ALTER TABLE trials ADD COLUMN warm_start_checkpoint uuid REFERENCES checkpoints (uuid);
