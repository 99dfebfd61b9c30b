-- The progress a search without a length reports (Determined 0.38's single, random and grid with
-- no max_length): its trials' processes say how far they are, which no batch count can. NULL for
-- every other search, whose progress is its trials' batches over the batches they aim for.
ALTER TABLE experiments ADD COLUMN searcher_progress float8;
