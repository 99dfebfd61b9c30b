-- Whether the searcher metric is better smaller, so that lists can show each experiment's best
-- value without parsing its config. Rows from before take it from their config's text.
ALTER TABLE experiments ADD COLUMN smaller_is_better boolean NOT NULL DEFAULT true;
UPDATE experiments SET smaller_is_better = false WHERE config ~ 'smaller_is_better\s*=\s*false';
