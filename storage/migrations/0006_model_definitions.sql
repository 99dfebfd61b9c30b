-- The model directory a user submitted with an experiment (`det submit CONFIG DIR`), as a tar archive.
CREATE TABLE model_definitions (
  experiment_id bigint PRIMARY KEY REFERENCES experiments (id),
  archive bytea NOT NULL
);
