-- Topic ids are per owner (two users may each hold a topic `t1`): the conversations read model
-- is keyed by (user_id, topic_id) and rebuilt from the log, as a missing checkpoint makes the
-- runner do.
DELETE FROM projection_dropped_indexes
WHERE table_name IN ('conversation_topics', 'conversation_messages', 'conversation_threads',
                     'conversation_message_groups');

DROP TABLE conversation_topics;
CREATE TABLE conversation_topics (
    topic_id         TEXT   NOT NULL,
    user_id          TEXT   NOT NULL,
    title            TEXT,
    agent_id         TEXT,
    group_id         TEXT,
    message_count    BIGINT NOT NULL,
    messages_version BIGINT NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    PRIMARY KEY (user_id, topic_id)
);
CREATE INDEX conversation_topics_by_owner ON conversation_topics (user_id, created_at, topic_id);

DROP TABLE conversation_messages;
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
    PRIMARY KEY (user_id, topic_id, message_id)
);
CREATE INDEX conversation_messages_by_seq ON conversation_messages (user_id, topic_id, seq);
CREATE INDEX conversation_messages_by_change ON conversation_messages (user_id, topic_id, changed_at);

DROP TABLE conversation_threads;
CREATE TABLE conversation_threads (
    topic_id          TEXT   NOT NULL,
    thread_id         TEXT   NOT NULL,
    user_id           TEXT   NOT NULL,
    source_message_id TEXT   NOT NULL,
    kind              TEXT   NOT NULL,
    title             TEXT,
    created_at        BIGINT NOT NULL,
    PRIMARY KEY (user_id, topic_id, thread_id)
);

DROP TABLE conversation_message_groups;
CREATE TABLE conversation_message_groups (
    topic_id           TEXT   NOT NULL,
    group_id           TEXT   NOT NULL,
    user_id            TEXT   NOT NULL,
    seq                BIGINT NOT NULL,
    kind               TEXT   NOT NULL,
    message_ids        TEXT   NOT NULL,
    pinned_message_ids TEXT   NOT NULL,
    parent_message_id  TEXT,
    content            TEXT,
    title              TEXT,
    description        TEXT,
    metadata           TEXT,
    created_at         BIGINT NOT NULL,
    PRIMARY KEY (user_id, topic_id, group_id)
);

DELETE FROM projection_checkpoints WHERE name = 'conversations';
