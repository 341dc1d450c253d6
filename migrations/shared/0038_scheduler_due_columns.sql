-- The scheduler reads only what is due, not every job and task on every pass (issue 23): each
-- cron job's next due instant, each scheduled task's next slot, a heartbeat task's tick while it
-- may tick, and a running task's heartbeat deadline, kept by their projections (pure functions
-- of the log) behind partial indexes. `last_schedule_run_at` and `running_topics` are what a
-- task's due instants are derived from. The projections' versions change with this migration:
-- both rebuild on start and fill the columns.
ALTER TABLE cron_jobs ADD COLUMN next_due_at BIGINT;
CREATE INDEX cron_jobs_due ON cron_jobs (next_due_at) WHERE next_due_at IS NOT NULL;

ALTER TABLE tasks ADD COLUMN last_schedule_run_at BIGINT;
ALTER TABLE tasks ADD COLUMN running_topics BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN next_schedule_at BIGINT;
ALTER TABLE tasks ADD COLUMN heartbeat_tick_due_at BIGINT;
ALTER TABLE tasks ADD COLUMN heartbeat_deadline_at BIGINT;
CREATE INDEX tasks_schedule_due ON tasks (next_schedule_at) WHERE next_schedule_at IS NOT NULL;
CREATE INDEX tasks_heartbeat_tick_due ON tasks (heartbeat_tick_due_at) WHERE heartbeat_tick_due_at IS NOT NULL;
CREATE INDEX tasks_heartbeat_deadline ON tasks (heartbeat_deadline_at) WHERE heartbeat_deadline_at IS NOT NULL;
