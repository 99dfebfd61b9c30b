-- The highest training and validation step each trial stored (-1: none), kept with every metric
-- write: a restored trial drops a resumed run's repeated steps by them, and a master start reads
-- them here instead of scanning every metric row.
ALTER TABLE trials ADD COLUMN stored_training_step bigint NOT NULL DEFAULT -1,
                   ADD COLUMN stored_validation_step bigint NOT NULL DEFAULT -1;
UPDATE trials t SET stored_training_step = s.training, stored_validation_step = s.validation
  FROM (SELECT trial_id,
               COALESCE(max(total_batches) FILTER (WHERE "group" = 'training'), -1) AS training,
               COALESCE(max(total_batches) FILTER (WHERE "group" = 'validation'), -1) AS validation
          FROM metrics GROUP BY trial_id) s
 WHERE s.trial_id = t.id;
