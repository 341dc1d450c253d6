-- The log position of each notification's `notification.created` event: `origin` reads that
-- event and its chain ("why does this notification exist?") in one request.
ALTER TABLE notifications ADD COLUMN created_position BIGINT NOT NULL DEFAULT 0;
