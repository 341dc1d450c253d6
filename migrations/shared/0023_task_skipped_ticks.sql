-- No idle burn: a heartbeat task may require new input since its last run; a tick without it
-- is skipped (`task.tick_skipped`), counted here.
ALTER TABLE tasks ADD COLUMN heartbeat_require_input BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN skipped_ticks BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN last_skipped_tick_at BIGINT;
