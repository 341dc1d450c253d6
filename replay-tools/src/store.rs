//! Opening the log the way the server does (`sqlite:…`, a file path, or `postgres://…`; the
//! read models share its database), and reading it in pages.

use std::{sync::Arc, time::Duration};

use agentlog_domain::envelope::RecordedEvent;
use agentlog_eventlog::{
    EventFilter, EventStore, StoreOptions, missing_sqlite_file, open_store, redact, schema_refusal,
};
use anyhow::{Context, bail};

/// Events per read: large enough to amortise a query, small enough to bound memory.
pub const PAGE: usize = 2_000;

/// What opening may do to the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read an existing log at this build's schema, never changing it (every command that only
    /// reads): a log that lacks one of this build's migrations is refused, since applying it
    /// here could rewrite a live server's table under its feet (0040 rewrites `events`).
    Read,
    /// An existing log, migrated to this build's schema first (`rebuild`, which writes).
    Write,
    /// Create (and migrate) a missing SQLite file (the target of `import`, `copy`, `generate`).
    Create,
}

/// Open the log at `url` for `access`. A SQLite file that does not exist is an error unless
/// `access` creates: a mistyped path must not quietly audit an empty new log.
pub async fn open(url: &str, access: Access) -> anyhow::Result<Arc<dyn EventStore>> {
    open_with(url, access, READ_CONNECTIONS).await
}

/// Readers of a command's log: a bulk rebuild on PostgreSQL applies every projection at once,
/// each on a connection of its own, beside the log's reader.
pub const READ_CONNECTIONS: u32 = 8;

/// [`open`] with at most `read_connections` readers (each SQLite connection keeps a page
/// cache of its own: `verify`, whose memory is bounded, needs three).
pub async fn open_with(url: &str, access: Access, read_connections: u32) -> anyhow::Result<Arc<dyn EventStore>> {
    open_with_options(url, access, options(read_connections)).await
}

/// The options every command opens its log with, with `read_connections` readers.
pub fn options(read_connections: u32) -> StoreOptions {
    StoreOptions {
        // A CLI process does not need to hear about other instances' appends quickly.
        listen_notify: false,
        poll_interval: Duration::from_secs(5),
        read_connections,
        ..StoreOptions::default()
    }
}

/// [`open`] with `options` (see [`options`]).
pub async fn open_with_options(
    url: &str,
    access: Access,
    options: StoreOptions,
) -> anyhow::Result<Arc<dyn EventStore>> {
    if access != Access::Create
        && let Some(path) = missing_sqlite_file(url)
    {
        bail!("no log at `{path}`: the file does not exist (pass --database or set AGENTLOG_DATABASE_URL)");
    }
    if access == Access::Read {
        refuse_another_schema(url).await?;
    }
    let options = StoreOptions { migrate: access != Access::Read, ..options };
    open_store(url, options).await.with_context(|| format!("opening the log at {}", redact(url)))
}

/// The head of the log at `url` as it is, without migrating it: `None` when there is no log
/// there yet (no file, no `events` table). For a command that migrates only an empty log.
pub async fn head_unmigrated(url: &str) -> anyhow::Result<Option<i64>> {
    if missing_sqlite_file(url).is_some() {
        return Ok(None);
    }
    let options = StoreOptions { migrate: false, ..options(1) };
    let store = open_store(url, options).await.with_context(|| format!("opening the log at {}", redact(url)))?;
    let head = store.head_position().await.ok();
    store.close().await;
    Ok(head)
}

/// An error unless the log at `url` has exactly this build's migrations.
async fn refuse_another_schema(url: &str) -> anyhow::Result<()> {
    let refusal = schema_refusal(url, "agentlog-replay")
        .await
        .with_context(|| format!("reading the schema of the log at {}", redact(url)))?;
    match refusal {
        Some(why) => bail!(why),
        None => Ok(()),
    }
}

/// Every event of one stream, in version order.
pub async fn read_stream(store: &dyn EventStore, stream_id: &str) -> anyhow::Result<Vec<RecordedEvent>> {
    let mut out: Vec<RecordedEvent> = Vec::new();
    loop {
        let from = out.last().map_or(1, |e| e.stream_version + 1);
        let page =
            store.read_stream(stream_id, from, PAGE).await.with_context(|| format!("reading stream `{stream_id}`"))?;
        let done = page.len() < PAGE;
        out.extend(page);
        if done {
            return Ok(out);
        }
    }
}

/// Every event after `after` (up to `up_to`, inclusive, when given) that passes `filter`,
/// handed to `each` page by page in log order.
pub async fn for_each_page<F>(
    store: &dyn EventStore,
    after: i64,
    up_to: Option<i64>,
    filter: &EventFilter,
    mut each: F,
) -> anyhow::Result<()>
where
    F: AsyncFnMut(Vec<RecordedEvent>) -> anyhow::Result<()>,
{
    let mut cursor = after;
    loop {
        let mut page = store
            .read_all(cursor, filter, PAGE)
            .await
            .with_context(|| format!("reading the log after position {cursor}"))?;
        let full = page.len() == PAGE;
        let Some(last) = page.last().map(|e| e.position) else { return Ok(()) };
        cursor = last;
        if let Some(limit) = up_to {
            page.retain(|e| e.position <= limit);
        }
        let reached_end = up_to.is_some_and(|limit| cursor >= limit);
        if !page.is_empty() {
            each(page).await?;
        }
        if !full || reached_end {
            return Ok(());
        }
    }
}

/// Every event after `after` that passes `filter`, in log order.
pub async fn read_all(
    store: &dyn EventStore,
    after: i64,
    up_to: Option<i64>,
    filter: &EventFilter,
) -> anyhow::Result<Vec<RecordedEvent>> {
    let mut out = Vec::new();
    for_each_page(store, after, up_to, filter, async |page| {
        out.extend(page);
        Ok(())
    })
    .await?;
    Ok(out)
}
