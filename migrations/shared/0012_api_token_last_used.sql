-- When each token was last used (to the minute: a request updates it at most once a minute).
ALTER TABLE api_tokens ADD COLUMN last_used_at BIGINT;
