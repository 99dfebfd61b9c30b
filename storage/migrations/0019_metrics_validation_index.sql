-- A master start brings each restorable trial's summary up to its metric rows (trials' summaries
-- trail their commits, see storage::summary_timing): the latest validation row beyond the stored
-- step is then one probe even in a trial with none, whose training rows the plain index would
-- walk one by one. Validation rows are few, so COPY maintains this index for few rows.
CREATE INDEX metrics_validation_batches ON metrics (trial_id, total_batches) WHERE "group" = 'validation';
