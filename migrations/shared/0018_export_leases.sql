-- Which server instance runs an exporter that must run once across instances (the OTLP trace
-- exporter): the holder renews its lease while it works; another instance takes over once
-- `expires_at` (epoch microseconds) has passed.
CREATE TABLE export_leases (
    name       TEXT   PRIMARY KEY,
    holder     TEXT   NOT NULL,
    expires_at BIGINT NOT NULL
);
