-- The Unix identity a det user's work runs as on agents, when an admin linked one (Determined's
-- agent_user_group, set with det user link-with-agent-user): all four columns or none. An
-- unlinked user runs as security.task_uid_base + its id, which the master computes per run.
ALTER TABLE users
  ADD COLUMN agent_uid   bigint CHECK (agent_uid > 0),
  ADD COLUMN agent_gid   bigint CHECK (agent_gid > 0),
  ADD COLUMN agent_user  text,
  ADD COLUMN agent_group text,
  ADD CONSTRAINT users_agent_user_group_whole CHECK (
    (agent_uid IS NULL) = (agent_gid IS NULL) AND (agent_uid IS NULL) = (agent_user IS NULL) AND
    (agent_uid IS NULL) = (agent_group IS NULL));
