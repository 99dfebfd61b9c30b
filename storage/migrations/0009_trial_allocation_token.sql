-- The token of a trial's latest run: a master restarted while a Core API process runs takes
-- the process back (reattach) only if it still knows the token the process calls with.
ALTER TABLE trials ADD COLUMN allocation_token text NOT NULL DEFAULT '';
