-- Commands, shells, notebooks and TensorBoards: one process on an agent each, scheduled like a
-- trial. A task's row stays after it ends (Determined forgets tasks a day after they exit).
CREATE TABLE tasks (
  id               text PRIMARY KEY,
  kind             text NOT NULL,
  owner_id         bigint NOT NULL REFERENCES users (id),
  description      text NOT NULL,
  config           text NOT NULL,
  entrypoint       text[] NOT NULL,
  slots            integer NOT NULL,
  resource_pool    text NOT NULL,
  state            text NOT NULL,
  allocation_token text NOT NULL,
  context          bytea NOT NULL,
  agent_id         text NOT NULL DEFAULT '',
  exit_code        integer,
  exit_reason      text NOT NULL DEFAULT '',
  ready            boolean NOT NULL DEFAULT false,
  service_address  text NOT NULL DEFAULT '',
  service_token    text NOT NULL DEFAULT '',  -- a notebook's token: its proxy URL and Jupyter's
  service_user     text NOT NULL DEFAULT '',  -- whom a shell's sshd lets in (the agent's user)
  -- A shell's key pairs: its owner's (OpenSSH private key and public key line) and its sshd's.
  ssh_private_key  text NOT NULL DEFAULT '',
  ssh_public_key   text NOT NULL DEFAULT '',
  host_private_key text NOT NULL DEFAULT '',
  host_public_key  text NOT NULL DEFAULT '',
  start_time       timestamptz NOT NULL DEFAULT now(),
  end_time         timestamptz
);
CREATE INDEX tasks_unended ON tasks (start_time) WHERE state <> 'TASK_STATE_TERMINATED';

-- A task's log lines share the trials' table: trial_id is 0 for them.
ALTER TABLE task_logs ADD COLUMN task_id text NOT NULL DEFAULT '';
CREATE INDEX task_logs_task_id ON task_logs (task_id, id) WHERE task_id <> '';
