-- A task's process acts for its owner with a token of its own kind (DET_USER_TOKEN): it ends with
-- the task and may not create tokens or users, so it is told apart from a user's access tokens.
ALTER TABLE user_tokens DROP CONSTRAINT user_tokens_kind_check;
ALTER TABLE user_tokens ADD CONSTRAINT user_tokens_kind_check
  CHECK (kind IN ('TOKEN_KIND_SESSION', 'TOKEN_KIND_ACCESS', 'TOKEN_KIND_TASK'));
