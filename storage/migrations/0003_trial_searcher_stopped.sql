-- Whether the searcher stopped a trial early (ASHA's rungs), for `det experiment describe`.
ALTER TABLE trials ADD COLUMN searcher_stopped boolean NOT NULL DEFAULT false;
