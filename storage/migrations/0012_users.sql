-- Users, their sessions and access tokens, and who owns each experiment.
-- A password is stored only as its Argon2id string (libsodium's crypto_pwhash_str); a bearer
-- token only as its SHA-256. `admin` exists from the start with no password: the master sets a
-- random one at its first start and writes it to DATA_DIR/admin-password, so no cluster ever
-- has a blank or well-known password. Experiments stored before users existed belong to admin.
CREATE TABLE users (
  id            bigserial PRIMARY KEY,
  username      text NOT NULL UNIQUE CHECK (username <> '' AND username !~ '^[0-9]+$'),
  password_hash text,
  admin         boolean NOT NULL DEFAULT false,
  active        boolean NOT NULL DEFAULT true,
  created_at    timestamptz NOT NULL DEFAULT now()
);
INSERT INTO users (username, admin) VALUES ('admin', true);

CREATE TABLE user_tokens (
  id           bigserial PRIMARY KEY,
  user_id      bigint NOT NULL REFERENCES users (id),
  token_sha256 bytea NOT NULL UNIQUE,
  kind         text NOT NULL CHECK (kind IN ('TOKEN_KIND_SESSION', 'TOKEN_KIND_ACCESS')),
  description  text NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  revoked_at   timestamptz
);
CREATE INDEX user_tokens_by_user ON user_tokens (user_id);

ALTER TABLE experiments ADD COLUMN owner_id bigint REFERENCES users (id);
UPDATE experiments SET owner_id = (SELECT id FROM users WHERE username = 'admin');
ALTER TABLE experiments ALTER COLUMN owner_id SET NOT NULL;
