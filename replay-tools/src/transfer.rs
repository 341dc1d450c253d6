//! Moving events between logs: `export` (NDJSON, one `RecordedEvent` per line, filtered; or, with
//! `--format otlp`, the runs that end in the selection as OpenTelemetry traces: OTLP/JSON, one
//! `ExportTraceServiceRequest` of at most `agentlog_otel::MAX_REQUEST_BYTES` per line, as the OpenTelemetry Collector's `otlpjsonfile` receiver
//! reads it, with the same spans and ids the server's exporter sends),
//! `import` (from that NDJSON) and `copy` (store to store, e.g. SQLite → PostgreSQL).
//!
//! `import` and `copy` go through the log's `import`: event ids, stream versions and recording
//! times are kept, and positions too when the target has not used them (always, for a copy into
//! an empty log); events already present are skipped, so re-running either is a no-op and an
//! interrupted one can simply be run again. A batch is atomic; `import` checks every line before
//! it writes the first. The target's read models are not
//! touched: the server catches them up at its next start (or run `rebuild`).

use std::{
    fs::File,
    io::{self, BufRead, BufReader, BufWriter, Write},
    path::PathBuf,
    process::ExitCode,
};

use agentlog_domain::envelope::RecordedEvent;
use agentlog_eventlog::{EventFilter, EventStore, ImportResult};
use anyhow::{Context, bail};
use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;

use crate::{options::Global, output, store};

/// Events per import transaction.
const IMPORT_BATCH: usize = 1_000;

/// A time given on the command line: RFC 3339, or a date (midnight UTC).
fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| format!("`{s}` is neither an RFC 3339 time nor a YYYY-MM-DD date"))
}

/// What `export` writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The events, one `RecordedEvent` per line (what `import` reads).
    #[default]
    Ndjson,
    /// The runs that end in the selection as OTLP/JSON traces, one export request per line.
    Otlp,
}

/// Arguments of `export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// What to write.
    #[arg(long, value_enum, default_value_t = Format::Ndjson)]
    pub format: Format,
    /// Write to this file instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Only events at or after this position.
    #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
    pub from: Option<i64>,
    /// Only events at or before this position.
    #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
    pub to: Option<i64>,
    /// Only events recorded at or after this time (RFC 3339 or YYYY-MM-DD, UTC).
    #[arg(long, value_parser = parse_time)]
    pub since: Option<DateTime<Utc>>,
    /// Only events recorded before this time (RFC 3339 or YYYY-MM-DD, UTC).
    #[arg(long, value_parser = parse_time)]
    pub until: Option<DateTime<Utc>>,
    /// Only these event types (repeatable; `operation.*` for a whole aggregate).
    #[arg(long = "type")]
    pub types: Vec<String>,
    /// Only these streams (repeatable; a trailing `*` makes it a prefix: `operation@*` every
    /// run, `task@alice/*` alice's tasks; `operation-*` runs written before ids were per owner).
    #[arg(long = "stream")]
    pub streams: Vec<String>,
}

/// Which events an export keeps beyond what the store's filter does.
#[derive(Debug, Clone, Default)]
struct Selection {
    types: Vec<String>,
    streams: Vec<String>,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
}

/// Does `pattern` (exact, or a prefix when it ends in `*`) match `value`?
fn matches(pattern: &str, value: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => value.starts_with(prefix),
        None => pattern == value,
    }
}

impl Selection {
    fn keeps(&self, e: &RecordedEvent) -> bool {
        (self.types.is_empty() || self.types.iter().any(|t| matches(t, &e.event_type)))
            && (self.streams.is_empty() || self.streams.iter().any(|s| matches(s, &e.stream_id)))
            && self.since.is_none_or(|t| e.recorded_at >= t)
            && self.until.is_none_or(|t| e.recorded_at < t)
    }

    /// The part of the selection the store can apply in SQL.
    fn store_filter(&self) -> EventFilter {
        let mut filter = EventFilter::all();
        if !self.types.is_empty() && self.types.iter().all(|t| !t.ends_with('*')) {
            filter.event_types = self.types.clone();
        }
        if let [one] = self.streams.as_slice() {
            filter.stream_prefix = Some(one.strip_suffix('*').unwrap_or(one).to_string());
        }
        filter
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Exported {
    /// Events written.
    pub events: u64,
    /// Spans written (`--format otlp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spans: Option<u64>,
    /// Position of the first and the last event written.
    pub first_position: Option<i64>,
    /// See `first_position`.
    pub last_position: Option<i64>,
}

/// Write the selected events of `store` as NDJSON to `out`.
async fn export_to(
    store: &dyn EventStore,
    args: &ExportArgs,
    out: &mut dyn Write,
    json: bool,
) -> anyhow::Result<Exported> {
    let selection =
        Selection { types: args.types.clone(), streams: args.streams.clone(), since: args.since, until: args.until };
    let after = args.from.map_or(0, |p| p.saturating_sub(1).max(0));
    let head = store.head_position().await.context("reading the log head")?;
    let end = args.to.map_or(head, |t| t.min(head));
    let bar = output::progress(u64::try_from(end - after).unwrap_or(0), "export", json);
    let mut done = Exported::default();
    // OTLP requests of a collector's usual size, one per line, however long a run.
    let mut batches = agentlog_otel::Batches::new("agentlog", agentlog_otel::MAX_REQUEST_BYTES);
    store::for_each_page(store, after, args.to, &selection.store_filter(), async |page| {
        for e in page.iter().filter(|e| selection.keeps(e)) {
            match args.format {
                Format::Ndjson => {
                    serde_json::to_writer(&mut *out, e).context("encoding an event")?;
                    out.write_all(b"\n").context("writing the export")?;
                }
                Format::Otlp => {
                    let mut reader = agentlog_otel::SpansOfEnd::open(store, e).await.context("reading a run")?;
                    let mut any = false;
                    while let Some(spans) = reader.next().await.context("reading a run")? {
                        any = true;
                        for span in spans {
                            if let Some(full) = batches.push(span) {
                                write_request(&mut *out, full, &mut done)?;
                            }
                        }
                    }
                    if !any {
                        continue;
                    }
                }
            }
            done.events += 1;
            done.first_position.get_or_insert(e.position);
            done.last_position = Some(e.position);
        }
        if let Some(last) = page.last() {
            bar.set_position(u64::try_from(last.position - after).unwrap_or(0));
        }
        Ok(())
    })
    .await?;
    if !batches.is_empty() {
        write_request(&mut *out, batches.take(), &mut done)?;
    }
    out.flush().context("writing the export")?;
    bar.finish_and_clear();
    Ok(done)
}

/// Write `spans` as one OTLP/JSON export request, a line.
fn write_request(out: &mut dyn Write, spans: Vec<agentlog_otel::Span>, done: &mut Exported) -> anyhow::Result<()> {
    *done.spans.get_or_insert(0) += spans.len() as u64;
    serde_json::to_writer(&mut *out, &agentlog_otel::export_request("agentlog", spans)).context("encoding spans")?;
    out.write_all(b"\n").context("writing the export")
}

/// Refuse a range that selects nothing by construction, before anything is opened or written.
fn check_range(args: &ExportArgs) -> anyhow::Result<()> {
    if let (Some(from), Some(to)) = (args.from, args.to)
        && from > to
    {
        bail!("--from {from} is after --to {to}");
    }
    if let (Some(since), Some(until)) = (args.since, args.until)
        && since >= until
    {
        bail!("--since {since} is not before --until {until}");
    }
    Ok(())
}

/// Run `export`. A regular file given with `-o` is written beside it first and takes its name
/// only when the export succeeded: a failed export leaves an existing file as it was. Anything
/// else (`/dev/null`, a pipe) is written in place.
pub async fn export(global: &Global, args: &ExportArgs) -> anyhow::Result<ExitCode> {
    check_range(args)?;
    let store = store::open(&global.database, store::Access::Read).await?;
    let in_place = args.output.as_ref().filter(|path| std::fs::metadata(path).is_ok_and(|m| !m.is_file()));
    let result = match (&args.output, in_place) {
        (Some(path), Some(_)) => match File::create(path) {
            Ok(file) => export_to(&*store, args, &mut BufWriter::new(file), global.json).await,
            Err(e) => Err(anyhow::Error::new(e).context(format!("opening {}", path.display()))),
        },
        (Some(path), None) => {
            let partial = path.with_file_name(format!(
                ".{}.partial",
                path.file_name().map_or("export".into(), |n| n.to_string_lossy())
            ));
            let written = match File::create(&partial) {
                Ok(file) => export_to(&*store, args, &mut BufWriter::new(file), global.json).await,
                Err(e) => Err(anyhow::Error::new(e).context(format!("creating {}", partial.display()))),
            };
            match written {
                Ok(done) => std::fs::rename(&partial, path)
                    .with_context(|| format!("moving the export to {}", path.display()))
                    .map(|()| done),
                Err(e) => {
                    let _ = std::fs::remove_file(&partial);
                    Err(e)
                }
            }
        }
        (None, _) => export_to(&*store, args, &mut BufWriter::new(io::stdout().lock()), global.json).await,
    };
    store.close().await;
    let done = result?;
    let what = match args.format {
        Format::Ndjson => format!("{} events", done.events),
        Format::Otlp => format!("{} runs as {} spans", done.events, done.spans.unwrap_or(0)),
    };
    let summary = format!(
        "exported {what} (positions {}–{})",
        done.first_position.map_or("-".into(), |p| p.to_string()),
        done.last_position.map_or("-".into(), |p| p.to_string())
    );
    match (&args.output, global.json) {
        // stdout carries the NDJSON: the summary goes to stderr
        (None, _) => eprintln!("{summary}"),
        (Some(_), true) => output::print_json(&done)?,
        (Some(_), false) => output::print_text(&format!("{summary}\n"))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Read from this NDJSON file (default: stdin).
    #[arg(short, long)]
    pub input: Option<PathBuf>,
}

/// What an import or copy did, over all its batches.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Transferred {
    /// Events read from the source.
    pub read: u64,
    /// Events written.
    pub imported: u64,
    /// Events already in the target (skipped).
    pub skipped: u64,
    /// Events whose position was taken in the target and that got the next free one.
    pub renumbered: u64,
    /// The target's highest position written (0 when nothing was).
    pub last_position: i64,
    /// `copy`: the reactions floor the target took from the source (0: none; see
    /// `agentlog_eventlog::REACTIONS_FLOOR`).
    pub reactions_floor: i64,
}

impl Transferred {
    fn add(&mut self, r: &ImportResult) {
        self.imported += r.imported as u64;
        self.skipped += r.skipped as u64;
        self.renumbered += r.renumbered as u64;
        self.last_position = self.last_position.max(r.last_position);
    }

    fn print(&self, json: bool) -> anyhow::Result<()> {
        if json {
            return output::print_json(self);
        }
        let floor = if self.reactions_floor > 0 {
            format!("; reactions floor {} carried", self.reactions_floor)
        } else {
            String::new()
        };
        output::print_text(&format!(
            "read {} events: {} imported, {} already present, {} renumbered; last position written {}{floor}\n",
            self.read, self.imported, self.skipped, self.renumbered, self.last_position
        ))
    }
}

async fn import_batch(store: &dyn EventStore, batch: Vec<RecordedEvent>, done: &mut Transferred) -> anyhow::Result<()> {
    let (first, last) = (batch.first().map(|e| e.position), batch.last().map(|e| e.position));
    let n = batch.len() as u64;
    let result = store.import(batch).await.with_context(|| {
        format!(
            "importing the events at source positions {}–{} ({} imported before them)",
            first.unwrap_or(0),
            last.unwrap_or(0),
            done.imported
        )
    })?;
    done.read += n;
    done.add(&result);
    Ok(())
}

async fn import_from(
    store: &dyn EventStore,
    input: Box<dyn BufRead + '_>,
    len: Option<u64>,
    json: bool,
) -> anyhow::Result<Transferred> {
    let bar = output::progress(len.unwrap_or(0), "import", json);
    let mut done = Transferred::default();
    let mut batch = Vec::with_capacity(IMPORT_BATCH);
    for (i, line) in input.lines().enumerate() {
        let line = line.with_context(|| format!("reading line {}", i + 1))?;
        bar.inc(line.len() as u64 + 1);
        if line.trim().is_empty() {
            continue;
        }
        let event: RecordedEvent =
            serde_json::from_str(&line).with_context(|| format!("line {} is not an exported event", i + 1))?;
        batch.push(event);
        if batch.len() == IMPORT_BATCH {
            import_batch(store, std::mem::take(&mut batch), &mut done).await?;
        }
    }
    if !batch.is_empty() {
        import_batch(store, batch, &mut done).await?;
    }
    bar.finish_and_clear();
    Ok(done)
}

/// Check that every line of `input` is an exported event (or blank), copying the lines to
/// `spool` when given; the lines' bytes. A bad line is named by its number.
fn check_lines(input: impl BufRead, mut spool: Option<&mut dyn Write>) -> anyhow::Result<u64> {
    let mut bytes = 0u64;
    for (i, line) in input.lines().enumerate() {
        let line = line.with_context(|| format!("reading line {}", i + 1))?;
        bytes += line.len() as u64 + 1;
        if !line.trim().is_empty() {
            serde_json::from_str::<RecordedEvent>(&line)
                .with_context(|| format!("line {} is not an exported event; nothing was imported", i + 1))?;
        }
        if let Some(out) = spool.as_mut() {
            out.write_all(line.as_bytes()).and_then(|()| out.write_all(b"\n")).context("spooling the input")?;
        }
    }
    Ok(bytes)
}

/// Run `import`. Every line is read and checked before the log is opened (created, migrated):
/// a bad line anywhere writes nothing. Standard input is spooled to a temporary file for that.
pub async fn import(global: &Global, args: &ImportArgs) -> anyhow::Result<ExitCode> {
    let spooled = std::env::temp_dir().join(format!("agentlog-import-{}.ndjson", uuid::Uuid::now_v7().simple()));
    let path = match &args.input {
        Some(path) if path.as_os_str() != "-" => {
            let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
            check_lines(BufReader::new(file), None)?;
            path.clone()
        }
        _ => {
            let checked =
                File::create(&spooled).with_context(|| format!("creating {}", spooled.display())).and_then(|file| {
                    let mut out = BufWriter::new(file);
                    check_lines(BufReader::new(io::stdin().lock()), Some(&mut out))?;
                    out.flush().context("spooling the input")
                });
            if let Err(e) = checked {
                let _ = std::fs::remove_file(&spooled);
                return Err(e);
            }
            spooled.clone()
        }
    };
    let result = async {
        let file = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
        let len = file.metadata().ok().map(|m| m.len());
        let store = store::open(&global.database, store::Access::Create).await?;
        let result = import_from(&*store, Box::new(BufReader::new(file)), len, global.json).await;
        store.close().await;
        result
    }
    .await;
    let _ = std::fs::remove_file(&spooled);
    result?.print(global.json)?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `copy`.
#[derive(Debug, clap::Args)]
pub struct CopyArgs {
    /// The source log (`sqlite:…`, a path or `postgres://…`).
    pub from: String,
    /// The target log (created when it is a SQLite file that does not exist).
    pub to: String,
}

/// Copy every event of `from` into `to`, in log order.
async fn copy_events(from: &dyn EventStore, to: &dyn EventStore, json: bool) -> anyhow::Result<Transferred> {
    let head = from.head_position().await.context("reading the source's head")?;
    let bar = output::progress(u64::try_from(head).unwrap_or(0), "copy", json);
    let mut done = Transferred::default();
    store::for_each_page(from, 0, Some(head), &EventFilter::all(), async |page| {
        let last = page.last().map_or(0, |e| e.position);
        import_batch(to, page, &mut done).await?;
        bar.set_position(u64::try_from(last).unwrap_or(0));
        Ok(())
    })
    .await?;
    bar.finish_and_clear();
    Ok(done)
}

/// [`copy_events`], and the source's reactions floor with it when the target was empty (its
/// positions are then the source's): a copy of a generated log is served as the original is,
/// without its reactions made again. Into a log that had events the floor cannot be carried
/// (the target's own events may wait for reactions), and a warning says so (not when the target
/// has it already: a copy run again).
pub async fn copy_log(from: &dyn EventStore, to: &dyn EventStore, json: bool) -> anyhow::Result<Transferred> {
    let floor =
        agentlog_eventlog::reactions_floor(&from.database()).await.context("reading the source's reactions floor")?;
    let had =
        agentlog_eventlog::reactions_floor(&to.database()).await.context("reading the target's reactions floor")?;
    let was_empty = to.head_position().await.context("reading the target's head")? == 0;
    let mut done = copy_events(from, to, json).await?;
    if floor > had {
        if was_empty {
            agentlog_eventlog::set_reactions_floor(&to.database(), floor)
                .await
                .context("carrying the reactions floor to the target")?;
            done.reactions_floor = floor;
        } else {
            eprintln!(
                "warning: the source's reactions floor ({floor}) was not carried, since the target had events: a \
                 server on the target reacts to the copied events again"
            );
        }
    }
    Ok(done)
}

/// Run `copy`.
pub async fn copy(global: &Global, args: &CopyArgs) -> anyhow::Result<ExitCode> {
    if args.from == args.to {
        bail!("copy needs two different logs; both are {}", agentlog_eventlog::redact(&args.from));
    }
    let from = store::open(&args.from, store::Access::Read).await.context("the source")?;
    let to = match store::open(&args.to, store::Access::Create).await.context("the target") {
        Ok(to) => to,
        Err(e) => {
            from.close().await;
            return Err(e);
        }
    };
    let result = copy_log(&*from, &*to, global.json).await;
    from.close().await;
    to.close().await;
    result?.print(global.json)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_and_times() {
        assert!(matches("operation-*", "operation-1"));
        assert!(matches("operation.started", "operation.started"));
        assert!(!matches("operation-1", "operation-12"));
        assert_eq!(parse_time("2026-11-02").unwrap().to_rfc3339(), "2026-11-02T00:00:00+00:00");
        assert!(parse_time("2026-11-02T08:00:00Z").is_ok());
        assert!(parse_time("yesterday").is_err());
    }
}
