-- Workspaces contain projects contain experiments (Determined's model). Everything stored before
-- belongs to the Uncategorized project of the Uncategorized workspace, which cannot be deleted, so
-- nothing changes for a user who ignores them.
CREATE TABLE workspaces (
  id         bigserial PRIMARY KEY,
  name       text NOT NULL UNIQUE CHECK (name <> ''),
  owner_id   bigint NOT NULL REFERENCES users (id),
  created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO workspaces (name, owner_id) VALUES ('Uncategorized', (SELECT id FROM users WHERE username = 'admin'));

CREATE TABLE projects (
  id           bigserial PRIMARY KEY,
  workspace_id bigint NOT NULL REFERENCES workspaces (id),
  name         text NOT NULL CHECK (name <> ''),
  description  text NOT NULL DEFAULT '',
  notes        text NOT NULL DEFAULT '',
  owner_id     bigint NOT NULL REFERENCES users (id),
  created_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, name)
);
INSERT INTO projects (workspace_id, name, owner_id)
  SELECT id, 'Uncategorized', owner_id FROM workspaces WHERE name = 'Uncategorized';

ALTER TABLE experiments ADD COLUMN project_id bigint REFERENCES projects (id);
UPDATE experiments SET project_id = (SELECT min(id) FROM projects);
ALTER TABLE experiments ALTER COLUMN project_id SET NOT NULL;
CREATE INDEX experiments_by_project ON experiments (project_id);
