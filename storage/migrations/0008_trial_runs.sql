-- How many runs (allocations) a trial has had: allocation ids "<trial>.<run>" stay unique across
-- master restarts, so a restored trial's new run is never mistaken for a container of an old one.
ALTER TABLE trials ADD COLUMN runs integer NOT NULL DEFAULT 0;
