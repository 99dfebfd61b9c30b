-- States are stored as their protobuf names ('STATE_ACTIVE', ...) so the tables read well in psql.

CREATE TABLE experiments (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL,
  description text NOT NULL DEFAULT '',
  state       text NOT NULL,
  config      text NOT NULL,
  searcher    text NOT NULL DEFAULT '',
  metric      text NOT NULL DEFAULT '',
  start_time  timestamptz NOT NULL DEFAULT now(),
  end_time    timestamptz
);

CREATE TABLE trials (
  id                bigserial PRIMARY KEY,
  experiment_id     bigint NOT NULL REFERENCES experiments (id),
  request_id        bigint NOT NULL,
  state             text NOT NULL,
  -- text, not jsonb: the searcher's JSON comes back byte for byte.
  hparams           text NOT NULL DEFAULT '{}',
  seed              bigint NOT NULL DEFAULT 0,
  restarts          integer NOT NULL DEFAULT 0,
  start_time        timestamptz NOT NULL DEFAULT now(),
  end_time          timestamptz,
  total_batches     bigint NOT NULL DEFAULT 0,
  target_batches    bigint NOT NULL DEFAULT 0,
  latest_training   jsonb NOT NULL DEFAULT '{}',
  latest_validation jsonb NOT NULL DEFAULT '{}',
  exit_reason       text NOT NULL DEFAULT '',
  UNIQUE (experiment_id, request_id)
);

-- The ingestion path. One row per report with its metrics as a jsonb map: with 4 metrics a report, COPY took
-- 2.7 times longer as one row per metric. No serial column and no foreign key (a per-row check that made COPY
-- 1.75 times slower): only the persistence actor writes here, for trials it has stored.
-- Non-finite values are stored as the strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers).
CREATE TABLE metrics (
  trial_id      bigint NOT NULL,
  "group"       text NOT NULL,
  total_batches bigint NOT NULL,
  total_records bigint NOT NULL,
  total_epochs  double precision NOT NULL,
  metrics       jsonb NOT NULL,
  time          timestamptz NOT NULL
);
CREATE INDEX metrics_trial_batches ON metrics (trial_id, total_batches);

-- No foreign key, for the same reason as metrics.
CREATE TABLE task_logs (
  id            bigserial PRIMARY KEY,
  trial_id      bigint NOT NULL,
  allocation_id text NOT NULL DEFAULT '',
  agent_id      text NOT NULL DEFAULT '',
  stream        text NOT NULL,
  text          text NOT NULL,
  time          timestamptz NOT NULL
);
CREATE INDEX task_logs_trial_id ON task_logs (trial_id, id);

CREATE TABLE agents (
  id              text PRIMARY KEY,
  hostname        text NOT NULL,
  resource_pool   text NOT NULL,
  -- The slots as a JSON array in protobuf's JSON mapping of det.pb.Slot.
  slots           jsonb NOT NULL,
  version         text NOT NULL DEFAULT '',
  connected       boolean NOT NULL,
  registered_time timestamptz NOT NULL DEFAULT now()
);
