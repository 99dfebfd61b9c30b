-- The latest searcher snapshot of each experiment (messages/searcher.proto, serialized), written
-- after every batch of searcher actions. A master restores unfinished experiments from it.
CREATE TABLE experiment_snapshots (
  experiment_id bigint PRIMARY KEY REFERENCES experiments (id),
  snapshot      bytea NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now()
);
