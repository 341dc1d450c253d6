//! `export`, `import` and `copy`: an export round-trips through import exactly (ids, versions,
//! positions, recording times, content); filters select what they say; re-running an import
//! or a copy is a no-op; a copy SQLite → PostgreSQL → SQLite gives back the same log.

use std::collections::BTreeSet;

use agentlog_domain::envelope::RecordedEvent;
use agentlog_eventlog::{
    StoreOptions,
    testing::{TempPostgres, TempSqlite, pg_url},
};
use chrono::Utc;

use crate::{
    both,
    support::{Fixture, all_events, fast, fixture, json_ok, replay},
};

fn read_ndjson(path: &std::path::Path) -> Vec<RecordedEvent> {
    std::fs::read_to_string(path)
        .expect("read the export")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an exported event"))
        .collect()
}

async fn events_at(url: &str) -> Vec<RecordedEvent> {
    let store = agentlog_eventlog::open_store(url, StoreOptions::default()).await.expect("open");
    let events = all_events(&*store).await;
    store.close().await;
    events
}

async fn export_import_round_trip(f: Fixture) {
    let original = all_events(&*f.log.store).await;
    let dir = std::env::temp_dir();
    let file = dir.join(format!("agentlog-export-{}.ndjson", uuid::Uuid::now_v7().simple()));
    let path = file.to_str().unwrap();
    let v = json_ok(&replay(&f.url, &["--json", "export", "-o", path]));
    assert_eq!(v["events"].as_u64(), Some(original.len() as u64));
    assert_eq!(read_ndjson(&file), original);

    // into a new SQLite file (created by import), then again: nothing new
    let target = TempSqlite::new();
    let v = json_ok(&replay(&target.url(), &["--json", "import", "-i", path]));
    assert_eq!((v["imported"].as_u64(), v["skipped"].as_u64()), (Some(original.len() as u64), Some(0)));
    assert_eq!(v["renumbered"].as_u64(), Some(0));
    assert_eq!(events_at(&target.url()).await, original, "ids, versions, positions, times and content kept");
    let v = json_ok(&replay(&target.url(), &["--json", "import", "-i", path]));
    assert_eq!((v["imported"].as_u64(), v["skipped"].as_u64()), (Some(0), Some(original.len() as u64)));
    // the imported log keeps every invariant
    json_ok(&replay(&target.url(), &["--json", "verify", "--log-only"]));

    // filters: types (exact and by aggregate), streams (exact and prefix), positions, time
    let filtered = |args: &[&str]| {
        let out = replay(&f.url, &[&["export"], args].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<RecordedEvent>(l).unwrap())
            .collect::<Vec<_>>()
    };
    let want = |keep: &dyn Fn(&RecordedEvent) -> bool| original.iter().filter(|e| keep(e)).cloned().collect::<Vec<_>>();
    assert_eq!(
        filtered(&["--type", "operation.started", "--type", "operation.failed"]),
        want(&|e| e.event_type == "operation.started" || e.event_type == "operation.failed")
    );
    assert_eq!(filtered(&["--type", "brief.*"]), want(&|e| e.event_type.starts_with("brief.")));
    let one = &original.iter().find(|e| e.stream_id.starts_with("task-")).unwrap().stream_id;
    assert_eq!(filtered(&["--stream", one]), want(&|e| &e.stream_id == one));
    assert_eq!(
        filtered(&["--stream", "cron-*", "--stream", one]),
        want(&|e| e.stream_id.starts_with("cron-") || &e.stream_id == one)
    );
    let (from, to) = (original[10].position, original[40].position);
    assert_eq!(
        filtered(&["--from", &from.to_string(), "--to", &to.to_string()]),
        want(&|e| e.position >= from && e.position <= to)
    );
    let tomorrow = (Utc::now() + chrono::Duration::days(1)).format("%Y-%m-%d").to_string();
    assert!(filtered(&["--since", &tomorrow]).is_empty());
    assert_eq!(filtered(&["--until", &tomorrow]).len(), original.len());

    // bad input: a line that is not an event fails with its line number, and writes nothing more
    std::fs::write(&file, "{\"not\": \"an event\"}\n").unwrap();
    let out = replay(&target.url(), &["import", "-i", path]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("line 1"));
    // Every line is checked before anything is written: good events before a bad line are not
    // imported, and a log that did not exist is not created.
    let mut lines: String = original.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    lines.push_str("garbage\n");
    std::fs::write(&file, &lines).unwrap();
    let fresh = std::env::temp_dir().join(format!("agentlog-import-{}.db", uuid::Uuid::now_v7().simple()));
    let out = replay(&format!("sqlite:{}", fresh.display()), &["import", "-i", path]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("line {}", original.len() + 1)), "{stderr}");
    assert!(!fresh.exists(), "a refused import created the log");
    let _ = std::fs::remove_file(&file);
}

both!(export_import_round_trip as export_import);

/// SQLite → PostgreSQL → SQLite keeps everything; a second copy writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_sqlite_to_postgres_and_back() {
    let Some(admin) = pg_url("transfer::copy_sqlite_to_postgres_and_back") else { return };
    let f = fixture(agentlog_eventlog::testing::sqlite_log(fast()).await).await;
    let original = all_events(&*f.log.store).await;
    let pg = TempPostgres::create(&admin).await.expect("a PostgreSQL database");
    let back = TempSqlite::new();

    let v = json_ok(&replay(&f.url, &["--json", "copy", &f.url, &pg.url]));
    assert_eq!(v["imported"].as_u64(), Some(original.len() as u64));
    assert_eq!(events_at(&pg.url).await, original);
    let v = json_ok(&replay(&f.url, &["--json", "copy", &pg.url, &back.url()]));
    assert_eq!(v["imported"].as_u64(), Some(original.len() as u64));
    assert_eq!(events_at(&back.url()).await, original);

    // re-running is a no-op, both ways
    let back_url = back.url();
    for (from, to) in [(f.url.as_str(), pg.url.as_str()), (pg.url.as_str(), back_url.as_str())] {
        let v = json_ok(&replay(&f.url, &["--json", "copy", from, to]));
        assert_eq!((v["imported"].as_u64(), v["skipped"].as_u64()), (Some(0), Some(original.len() as u64)));
    }
    assert_eq!(events_at(&pg.url).await.len(), original.len());

    // the copy keeps every invariant of the log
    json_ok(&replay(&pg.url, &["--json", "verify", "--log-only"]));
    let types: BTreeSet<&str> = original.iter().map(|e| e.event_type.as_str()).collect();
    assert!(types.len() > 40, "a realistic log: {} event types", types.len());

    let out = replay(&f.url, &["copy", &f.url, &f.url]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("two different logs"));
}

/// `generate` sets the reactions floor at the head (its workload made the reactions), and `copy`
/// carries it to an empty target, SQLite → PostgreSQL → SQLite, so a server on the copy does
/// not react again; into a target that had events it is not carried, and a warning says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reactions_floor_is_generated_and_copied() {
    let Some(admin) = pg_url("transfer::the_reactions_floor_is_generated_and_copied") else { return };
    let floor_at = async |url: &str| {
        let store = agentlog_eventlog::open_store(url, StoreOptions::default()).await.expect("open");
        let floor = agentlog_eventlog::reactions_floor(&store.database()).await.expect("floor");
        store.close().await;
        floor
    };
    let generated = TempSqlite::new();
    let g = json_ok(&replay(&generated.url(), &["--json", "generate", "--events", "500", "--seed", "99"]));
    let head = g["head"].as_i64().expect("head");
    assert_eq!(floor_at(&generated.url()).await, head, "generate: the floor at the head");

    let pg = TempPostgres::create(&admin).await.expect("a PostgreSQL database");
    let v = json_ok(&replay(&generated.url(), &["--json", "copy", &generated.url(), &pg.url]));
    assert_eq!(v["reactionsFloor"].as_i64(), Some(head), "{v}");
    assert_eq!(floor_at(&pg.url).await, head);
    let back = TempSqlite::new();
    let text = replay(&pg.url, &["copy", &pg.url, &back.url()]);
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(text.status.success() && out.contains(&format!("; reactions floor {head} carried")), "{text:?}");
    assert_eq!(floor_at(&back.url()).await, head);
    // A copy run again writes nothing and has nothing to say about the floor.
    let again = replay(&pg.url, &["copy", &pg.url, &back.url()]);
    assert!(again.status.success() && again.stderr.is_empty(), "{again:?}");

    // Into a log with events of its own (here the first 100, imported, whose reactions a
    // server there may still owe): not carried.
    let file = std::env::temp_dir().join(format!("agentlog-part-{}.ndjson", uuid::Uuid::now_v7().simple()));
    let part = file.to_str().expect("utf-8 path");
    json_ok(&replay(&generated.url(), &["--json", "export", "--to", "100", "-o", part]));
    let target = TempSqlite::new();
    json_ok(&replay(&target.url(), &["--json", "import", "-i", part]));
    let _ = std::fs::remove_file(&file);
    let out = replay(&target.url(), &["--json", "copy", &generated.url(), &target.url()]);
    let v = json_ok(&out);
    assert_eq!((v["skipped"].as_i64(), v["reactionsFloor"].as_i64()), (Some(100), Some(0)), "{v}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("reactions floor"), "{out:?}");
    assert_eq!(floor_at(&target.url()).await, 0);
}

/// `export --format otlp`: every run that ends in the range as OTLP/JSON, one export request per
/// line, with the spans (and ids) the server's exporter sends for the same runs.
async fn export_as_otlp(f: Fixture) {
    let original = all_events(&*f.log.store).await;
    let ends: Vec<&RecordedEvent> = original.iter().filter(|e| agentlog_otel::is_run_end(e).is_some()).collect();
    assert!(ends.len() >= 3, "the workload ends runs");
    let out = replay(&f.url, &["export", "--format", "otlp"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("OTLP/JSON")).collect();
    assert!(!lines.is_empty());
    let spans: Vec<&serde_json::Value> = lines
        .iter()
        .flat_map(|r| r["resourceSpans"].as_array().unwrap())
        .flat_map(|rs| rs["scopeSpans"].as_array().unwrap())
        .flat_map(|ss| ss["spans"].as_array().unwrap())
        .collect();
    let runs = spans.iter().filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with("invoke_agent "))).count();
    assert_eq!(runs, ends.len(), "one invoke_agent span per run that ended");
    // the same spans as the library builds for one run, ids as OTLP/JSON's hex
    let end = ends[0];
    let want = agentlog_otel::spans_of_end(&*f.log.store, end).await.unwrap();
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let first = spans.iter().find(|s| s["spanId"] == hex(&want[0].span_id)).expect("the run's span");
    assert_eq!(first["traceId"], hex(&want[0].trace_id));
    assert_eq!(first["name"], want[0].name);
    // a range: only the runs that end in it
    let at = end.position.to_string();
    let out = replay(&f.url, &["--json", "export", "--format", "otlp", "--from", &at, "--to", &at, "-o", "/dev/null"]);
    let v = json_ok(&out);
    assert_eq!(v["events"].as_u64(), Some(1), "{v}");
    assert_eq!(v["spans"].as_u64(), Some(want.len() as u64), "{v}");
    // A device is written in place, never replaced by a file renamed over it.
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let null = std::fs::metadata("/dev/null").expect("/dev/null");
        assert!(null.file_type().is_char_device(), "/dev/null is still the device");
    }
}

both!(export_as_otlp as export_otlp);
