-- Successive-halving searchers place each trial in a rung; PBT copies a trial from a parent.
ALTER TABLE trials ADD COLUMN rung integer;
ALTER TABLE trials ADD COLUMN parent_trial_id bigint REFERENCES trials (id);
