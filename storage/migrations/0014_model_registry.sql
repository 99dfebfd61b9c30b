-- The model registry: named models owned by a user, each with numbered versions that point at
-- COMPLETED checkpoints. A registered checkpoint is never garbage-collected, and its experiment
-- cannot be deleted while a version points at it (the foreign key says so too). Names may not be
-- all digits (Determined's rule: they would read as ids).
CREATE TABLE models (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL UNIQUE CHECK (name <> '' AND name !~ '^[0-9]+$'),
  description text NOT NULL DEFAULT '',
  labels      text[] NOT NULL DEFAULT '{}',
  owner_id    bigint NOT NULL REFERENCES users (id),
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE model_versions (
  model_id        bigint NOT NULL REFERENCES models (id) ON DELETE CASCADE,
  version         integer NOT NULL,
  checkpoint_uuid uuid NOT NULL REFERENCES checkpoints (uuid),
  name            text NOT NULL DEFAULT '',
  metadata        jsonb NOT NULL DEFAULT '{}',
  owner_id        bigint NOT NULL REFERENCES users (id),
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (model_id, version)
);
CREATE INDEX model_versions_by_checkpoint ON model_versions (checkpoint_uuid);

-- A fork's parent: the experiment whose config and model definition it started from.
ALTER TABLE experiments ADD COLUMN parent_id bigint REFERENCES experiments (id) ON DELETE SET NULL;
