-- Read models of the work a user hands to agents: tasks (with dependencies, topics, documents,
-- comments), briefs, notifications, cron jobs, and conversations (topics, messages, threads).
-- One file for SQLite and PostgreSQL: BIGINT, DOUBLE PRECISION and TEXT only (JSON as TEXT,
-- times as epoch microseconds, flags as 0/1). Every table carries its owner (`user_id`) so
-- owner-scoped queries are one index lookup.

CREATE TABLE tasks (
    task_id                 TEXT   PRIMARY KEY,
    user_id                 TEXT   NOT NULL,
    identifier              TEXT   NOT NULL,
    name                    TEXT,
    instruction             TEXT   NOT NULL,
    description             TEXT,
    status                  TEXT   NOT NULL,
    priority                BIGINT NOT NULL,
    parent_task_id          TEXT,
    assignee_agent_id       TEXT,
    created_by_agent_id     TEXT,
    automation_mode         TEXT,
    heartbeat_interval_secs BIGINT,
    heartbeat_timeout_secs  BIGINT,
    last_heartbeat_at       BIGINT,
    next_heartbeat_at       BIGINT,
    heartbeat_tick_token    TEXT,
    schedule_pattern        TEXT,
    schedule_timezone       TEXT   NOT NULL,
    schedule_max_executions BIGINT,
    schedule_started_at     BIGINT,
    total_topics            BIGINT NOT NULL,
    max_topics              BIGINT,
    current_topic_id        TEXT,
    last_completed_topic_id TEXT,
    consecutive_failures    BIGINT NOT NULL,
    config                  TEXT   NOT NULL,
    error                   TEXT,
    started_at              BIGINT,
    completed_at            BIGINT,
    created_at              BIGINT NOT NULL,
    updated_at              BIGINT NOT NULL
);
CREATE INDEX tasks_by_owner ON tasks (user_id, created_at, task_id);
CREATE INDEX tasks_by_owner_status ON tasks (user_id, status, created_at, task_id);
CREATE INDEX tasks_by_status ON tasks (status, created_at, task_id);
CREATE INDEX tasks_by_assignee ON tasks (assignee_agent_id, created_at, task_id);
CREATE INDEX tasks_by_parent ON tasks (parent_task_id, created_at, task_id);
CREATE INDEX tasks_by_identifier ON tasks (identifier);

CREATE TABLE task_dependencies (
    task_id       TEXT   NOT NULL,
    depends_on_id TEXT   NOT NULL,
    kind          TEXT   NOT NULL,
    user_id       TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (task_id, depends_on_id)
);
CREATE INDEX task_dependencies_by_upstream ON task_dependencies (depends_on_id);

CREATE TABLE task_documents (
    task_id     TEXT   NOT NULL,
    document_id TEXT   NOT NULL,
    pinned_by   TEXT   NOT NULL,
    user_id     TEXT   NOT NULL,
    pinned_at   BIGINT NOT NULL,
    PRIMARY KEY (task_id, document_id)
);

CREATE TABLE task_topics (
    task_id       TEXT   NOT NULL,
    topic_id      TEXT   NOT NULL,
    user_id       TEXT   NOT NULL,
    seq           BIGINT NOT NULL,
    operation_id  TEXT   NOT NULL,
    agent_id      TEXT   NOT NULL,
    status        TEXT   NOT NULL,
    run_trigger   TEXT   NOT NULL,
    handoff       TEXT,
    error         TEXT,
    error_code    TEXT,
    review_score  BIGINT,
    review_passed BIGINT,
    review_scores TEXT,
    reviewed_at   BIGINT,
    started_at    BIGINT NOT NULL,
    ended_at      BIGINT,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (task_id, topic_id)
);
CREATE INDEX task_topics_by_topic ON task_topics (topic_id);
CREATE INDEX task_topics_by_seq ON task_topics (task_id, seq, topic_id);

CREATE TABLE task_comments (
    task_id     TEXT   NOT NULL,
    comment_id  TEXT   NOT NULL,
    user_id     TEXT   NOT NULL,
    author_kind TEXT   NOT NULL,
    author_id   TEXT   NOT NULL,
    content     TEXT   NOT NULL,
    brief_id    TEXT,
    topic_id    TEXT,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (task_id, comment_id)
);
CREATE INDEX task_comments_by_time ON task_comments (task_id, created_at, comment_id);

CREATE TABLE briefs (
    brief_id         TEXT   PRIMARY KEY,
    user_id          TEXT   NOT NULL,
    brief_type       TEXT   NOT NULL,
    priority         TEXT   NOT NULL,
    title            TEXT   NOT NULL,
    summary          TEXT   NOT NULL,
    actions          TEXT   NOT NULL,
    documents        TEXT   NOT NULL,
    task_id          TEXT,
    topic_id         TEXT,
    operation_id     TEXT,
    cron_job_id      TEXT,
    agent_id         TEXT,
    brief_trigger    TEXT,
    error_code       TEXT,
    metadata         TEXT,
    read_at          BIGINT,
    resolved_action  TEXT,
    resolved_comment TEXT,
    resolved_at      BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX briefs_by_owner ON briefs (user_id, created_at, brief_id);
CREATE INDEX briefs_unresolved ON briefs (user_id, created_at, brief_id) WHERE resolved_at IS NULL;
CREATE INDEX briefs_by_task ON briefs (task_id, created_at, brief_id);
CREATE INDEX briefs_by_time ON briefs (created_at, brief_id);

CREATE TABLE notifications (
    notification_id TEXT   PRIMARY KEY,
    user_id         TEXT   NOT NULL,
    category        TEXT   NOT NULL,
    notification_type TEXT NOT NULL,
    title           TEXT   NOT NULL,
    body            TEXT   NOT NULL,
    dedupe_key      TEXT,
    action_url      TEXT,
    metadata        TEXT,
    is_read         BIGINT NOT NULL,
    is_archived     BIGINT NOT NULL,
    read_at         BIGINT,
    archived_at     BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
-- Inbox: newest first, non-archived (optionally unread only, or one category).
CREATE INDEX notifications_inbox ON notifications (user_id, created_at, notification_id) WHERE is_archived = 0;
CREATE INDEX notifications_inbox_category ON notifications (user_id, category, created_at, notification_id) WHERE is_archived = 0;
-- Unread count: a count over this partial index, never over the rows.
CREATE INDEX notifications_unread ON notifications (user_id, created_at, notification_id) WHERE is_read = 0 AND is_archived = 0;
-- Archive clean-up: archived notifications, oldest change first.
CREATE INDEX notifications_archived ON notifications (updated_at, created_at, notification_id) WHERE is_archived = 1;
CREATE INDEX notifications_by_dedupe_key ON notifications (user_id, dedupe_key);

CREATE TABLE cron_jobs (
    job_id               TEXT   PRIMARY KEY,
    user_id              TEXT   NOT NULL,
    agent_id             TEXT   NOT NULL,
    group_id             TEXT,
    name                 TEXT,
    pattern              TEXT   NOT NULL,
    timezone             TEXT   NOT NULL,
    content              TEXT   NOT NULL,
    enabled              BIGINT NOT NULL,
    max_executions       BIGINT,
    remaining_executions BIGINT,
    conditions           TEXT   NOT NULL,
    last_executed_at     BIGINT,
    total_executions     BIGINT NOT NULL,
    last_fire_local_day  TEXT,
    fires_on_last_day    BIGINT NOT NULL,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL
);
CREATE INDEX cron_jobs_by_owner ON cron_jobs (user_id, created_at, job_id);
CREATE INDEX cron_jobs_by_agent ON cron_jobs (agent_id, created_at, job_id);
CREATE INDEX cron_jobs_dispatchable ON cron_jobs (last_executed_at, job_id) WHERE enabled = 1;

CREATE TABLE conversation_topics (
    topic_id         TEXT   PRIMARY KEY,
    user_id          TEXT   NOT NULL,
    title            TEXT,
    agent_id         TEXT,
    group_id         TEXT,
    message_count    BIGINT NOT NULL,
    messages_version BIGINT NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX conversation_topics_by_owner ON conversation_topics (user_id, created_at, topic_id);

-- One row per message: `message` is the LobeHub-shaped JSON object the parser reads; `seq` is
-- the position of its append (creation order); `changed_at` the position of its last change,
-- so a cached tree fetches only what changed since it was built.
CREATE TABLE conversation_messages (
    topic_id   TEXT   NOT NULL,
    message_id TEXT   NOT NULL,
    user_id    TEXT   NOT NULL,
    seq        BIGINT NOT NULL,
    role       TEXT   NOT NULL,
    parent_id  TEXT,
    thread_id  TEXT,
    message    TEXT   NOT NULL,
    deleted    BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    changed_at BIGINT NOT NULL,
    PRIMARY KEY (topic_id, message_id)
);
CREATE INDEX conversation_messages_by_seq ON conversation_messages (topic_id, seq);
CREATE INDEX conversation_messages_by_change ON conversation_messages (topic_id, changed_at);

CREATE TABLE conversation_threads (
    topic_id          TEXT   NOT NULL,
    thread_id         TEXT   NOT NULL,
    source_message_id TEXT   NOT NULL,
    kind              TEXT   NOT NULL,
    title             TEXT,
    created_at        BIGINT NOT NULL,
    PRIMARY KEY (topic_id, thread_id)
);
