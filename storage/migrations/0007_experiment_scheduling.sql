-- Scheduling settings changed after submission (det experiment set, det job update); NULL keeps the config's.
ALTER TABLE experiments ADD COLUMN priority integer;
ALTER TABLE experiments ADD COLUMN weight double precision;
ALTER TABLE experiments ADD COLUMN max_slots integer;
