-- Secrets the server keeps in its database, shared by every instance on it. `lease_key` is mixed
-- into every lease token, so a token cannot be derived from the log (a claim's `requestId` is
-- recorded as its correlation id, and the command id derives from it). Made by the first
-- instance to start; never served or exported (`copy` and `export` move events only).
CREATE TABLE server_secrets (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
