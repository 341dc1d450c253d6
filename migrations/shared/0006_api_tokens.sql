-- Bearer tokens of the API. Only a SHA-256 of each secret is stored.
CREATE TABLE api_tokens (
    token_id   TEXT   PRIMARY KEY,
    token_hash TEXT   NOT NULL UNIQUE,
    user_id    TEXT   NOT NULL,
    role       TEXT   NOT NULL,
    name       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
