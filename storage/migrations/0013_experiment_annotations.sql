-- What people write about an experiment besides its config: labels, notes (markdown), and
-- whether it is archived (hidden from lists by default; only ended experiments are archived).
ALTER TABLE experiments ADD COLUMN labels text[] NOT NULL DEFAULT '{}';
ALTER TABLE experiments ADD COLUMN notes text NOT NULL DEFAULT '';
ALTER TABLE experiments ADD COLUMN archived boolean NOT NULL DEFAULT false;
CREATE INDEX experiments_by_owner ON experiments (owner_id);
