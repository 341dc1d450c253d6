//! `agentlog-baseline`: the smallest GraphQL write endpoint over the same databases as
//! agentlog — axum, async-graphql and sqlx, one durable `INSERT` of one event row per request,
//! nothing else (no commands, no validation, no read models, no group commit). The write path's
//! point of comparison (`scripts/write-ceiling.sh`, BENCHMARKS.md): what any server of this stack
//! pays for a request and a commit.
//!
//! ```sh
//! agentlog-baseline --database sqlite:base.db --listen 127.0.0.1:8091
//! curl -s localhost:8091/graphql -H 'content-type: application/json' \
//!   -d '{"query":"mutation { append(streamId: \"s\", eventType: \"t\", payload: {}) { position } }"}'
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use async_graphql::{Context, EmptySubscription, Json, Object, Schema, SimpleObject};
use async_graphql_axum::GraphQL;
use axum::{Router, routing::get};
use clap::Parser;
use sqlx::{
    PgPool, Row, SqlitePool,
    postgres::PgPoolOptions,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};

/// Serve one durable insert per GraphQL request.
#[derive(Debug, Parser)]
#[command(name = "agentlog-baseline", version)]
struct Cli {
    /// `sqlite:<file>` (created; WAL, synchronous=FULL as agentlog's default) or `postgres://…`.
    #[arg(long)]
    database: String,
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:8091")]
    listen: String,
}

/// The table: the shape and indexes of agentlog's `events`.
const SCHEMA: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS events (position {serial} PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, \
     stream_id TEXT NOT NULL, stream_version BIGINT NOT NULL, event_type TEXT NOT NULL, \
     schema_version INTEGER NOT NULL, payload TEXT NOT NULL, metadata TEXT NOT NULL, \
     root_source_id TEXT NOT NULL, parent_node_id TEXT, user_id TEXT NOT NULL, recorded_at BIGINT NOT NULL, \
     UNIQUE (stream_id, stream_version))",
    "CREATE INDEX IF NOT EXISTS events_by_type ON events (event_type, position)",
    "CREATE INDEX IF NOT EXISTS events_by_root_source ON events (root_source_id, position)",
    "CREATE INDEX IF NOT EXISTS events_by_user ON events (user_id, position)",
];

/// The insert, in its own transaction (autocommit): one event at its stream's next version.
const INSERT: &str = "INSERT INTO events (event_id, stream_id, stream_version, event_type, schema_version, payload, \
     metadata, root_source_id, parent_node_id, user_id, recorded_at) \
     VALUES ($1, $2, (SELECT COALESCE(MAX(stream_version), 0) + 1 FROM events WHERE stream_id = $2), \
     $3, 1, $4, $5, $1, NULL, 'baseline', $6) RETURNING position";

/// The database.
enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Db {
    async fn open(database: &str) -> anyhow::Result<Self> {
        Ok(match database.strip_prefix("sqlite:") {
            Some(path) => {
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Full)
                    .busy_timeout(std::time::Duration::from_secs(30));
                Db::Sqlite(SqlitePoolOptions::new().max_connections(4).connect_with(options).await?)
            }
            None => Db::Postgres(PgPoolOptions::new().max_connections(16).connect(database).await?),
        })
    }

    async fn create_table(&self) -> anyhow::Result<()> {
        for statement in SCHEMA {
            match self {
                Db::Sqlite(pool) => {
                    let statement =
                        statement.replace("{serial}", "INTEGER").replace("PRIMARY KEY,", "PRIMARY KEY AUTOINCREMENT,");
                    sqlx::query(&statement).execute(pool).await?;
                }
                Db::Postgres(pool) => {
                    sqlx::query(&statement.replace("{serial}", "BIGSERIAL")).execute(pool).await?;
                }
            }
        }
        Ok(())
    }
}

struct Query;

#[Object]
impl Query {
    /// The last position written (0 when empty).
    async fn head_position(&self, ctx: &Context<'_>) -> async_graphql::Result<i64> {
        const HEAD: &str = "SELECT COALESCE(MAX(position), 0) FROM events";
        Ok(match ctx.data::<Db>()? {
            Db::Sqlite(pool) => sqlx::query(HEAD).fetch_one(pool).await?.try_get::<i64, _>(0)?,
            Db::Postgres(pool) => sqlx::query(HEAD).fetch_one(pool).await?.try_get::<i64, _>(0)?,
        })
    }
}

/// What `append` answers.
#[derive(SimpleObject)]
struct Appended {
    /// Where the event landed.
    position: i64,
}

struct Mutation;

#[Object]
impl Mutation {
    /// Append one event to `streamId` at its next version: one statement, committed durably.
    async fn append(
        &self,
        ctx: &Context<'_>,
        stream_id: String,
        event_type: String,
        payload: Json<serde_json::Value>,
    ) -> async_graphql::Result<Appended> {
        let event_id = uuid::Uuid::now_v7().to_string();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0);
        let metadata = serde_json::json!({"eventId": event_id, "userId": "baseline"}).to_string();
        let payload = payload.0.to_string();
        let position = match ctx.data::<Db>()? {
            Db::Sqlite(pool) => sqlx::query(INSERT)
                .bind(&event_id)
                .bind(&stream_id)
                .bind(&event_type)
                .bind(payload)
                .bind(metadata)
                .bind(now)
                .fetch_one(pool)
                .await?
                .try_get::<i64, _>(0)?,
            Db::Postgres(pool) => sqlx::query(INSERT)
                .bind(&event_id)
                .bind(&stream_id)
                .bind(&event_type)
                .bind(payload)
                .bind(metadata)
                .bind(now)
                .fetch_one(pool)
                .await?
                .try_get::<i64, _>(0)?,
        };
        Ok(Appended { position })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_writer(std::io::stderr).init();
    let cli = Cli::parse();
    let db = Db::open(&cli.database).await.with_context(|| format!("opening {}", cli.database))?;
    db.create_table().await.context("creating the events table")?;
    let schema = Schema::build(Query, Mutation, EmptySubscription).data(db).finish();
    let app = Router::new().route_service("/graphql", GraphQL::new(schema)).route("/readyz", get(|| async { "ok" }));
    let listener =
        tokio::net::TcpListener::bind(&cli.listen).await.with_context(|| format!("listening on {}", cli.listen))?;
    tracing::info!(listen = %cli.listen, "agentlog-baseline serving /graphql");
    axum::serve(listener, app).await.context("serving")?;
    Ok(())
}
