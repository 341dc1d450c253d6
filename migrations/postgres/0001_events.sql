-- The append-only event log (PostgreSQL).
--
-- Ordering: every appending transaction takes the transaction-level advisory lock
-- pg_advisory_xact_lock(7461626) before it takes positions from the identity sequence, and
-- holds it until it commits. Commits therefore happen in position order, and a reader that has
-- seen position p can never later meet a committed event below p (see ARCHITECTURE.md).
CREATE TABLE events (
    position       BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id       UUID        NOT NULL UNIQUE,
    stream_id      TEXT        NOT NULL,
    stream_version BIGINT      NOT NULL,
    event_type     TEXT        NOT NULL,
    schema_version INTEGER     NOT NULL,
    payload        JSONB       NOT NULL,
    metadata       JSONB       NOT NULL,
    root_source_id UUID        NOT NULL,
    parent_node_id UUID,
    user_id        TEXT        NOT NULL,
    recorded_at    TIMESTAMPTZ NOT NULL,
    UNIQUE (stream_id, stream_version)
);

CREATE INDEX events_by_type ON events (event_type, position);
CREATE INDEX events_by_root_source ON events (root_source_id, position);
CREATE INDEX events_by_user ON events (user_id, position);

CREATE FUNCTION agentlog_events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'agentlog events are append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION agentlog_events_refuse_change();
CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION agentlog_events_refuse_change();
CREATE TRIGGER events_refuse_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION agentlog_events_refuse_change();
