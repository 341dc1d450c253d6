//! `verify` and `rebuild`: a generated log verifies clean; a rebuilt read model still does; a
//! tampered read-model row and a log tampered through raw SQL (append-only triggers disabled)
//! are each caught and reported by table / stream and position.

use std::collections::BTreeMap;

use agentlog_eventlog::testing::RawDb;
use agentlog_projections::{
    ReadDb, all_projections,
    checksum::{TableChecksum, table_checksums},
};
use serde_json::Value;

use crate::{
    both,
    support::{Fixture, all_events, json_ok, replay},
};

/// Every read-model table's checksum.
async fn checksums(f: &Fixture) -> BTreeMap<String, TableChecksum> {
    let tables: Vec<&str> = all_projections().iter().flat_map(|p| p.tables().iter().copied()).collect();
    table_checksums(&ReadDb::from(f.log.store.database()), &tables).await.unwrap()
}

/// The problems of a `verify --json` run that must have found some (exit 1).
fn problems(url: &str) -> Vec<Value> {
    // Pages of 7 rows: most links and stream predecessors are looked up in the table.
    let out = replay(url, &["--json", "verify", "--page-size", "7"]);
    assert_eq!(out.status.code(), Some(1), "verify must fail: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    v["problems"].as_array().expect("problems").clone()
}

/// Run `sql` on the log's table with its append-only triggers out of the way.
async fn tamper_log(raw: &RawDb, sql: &str) {
    // one batch on one connection: the trigger is gone only while the tampering runs
    let batch = match raw {
        RawDb::Sqlite(_) => format!(
            "DROP TRIGGER events_refuse_update; {sql}; CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events \
             BEGIN SELECT RAISE(ABORT, 'agentlog events are append-only: UPDATE refused'); END"
        ),
        RawDb::Postgres(_) => {
            format!("ALTER TABLE events DISABLE TRIGGER USER; {sql}; ALTER TABLE events ENABLE TRIGGER USER")
        }
    };
    raw.execute(&batch).await.unwrap();
    assert!(raw.execute(sql).await.is_err(), "the trigger is back");
}

async fn verify_is_clean_then_catches_tampering(f: Fixture) {
    let v = json_ok(&replay(&f.url, &["--json", "verify"]));
    assert_eq!(v["problems"], serde_json::json!([]), "{v:#}");
    assert_eq!(v["head"].as_i64(), Some(f.head));
    assert_eq!(v["projections"].as_array().unwrap().len(), all_projections().len());

    // rebuilding one read model, then all, changes nothing
    let before = checksums(&f).await;
    let r = json_ok(&replay(&f.url, &["--json", "rebuild", "--projection", "operations"]));
    assert_eq!((r["position"].as_i64(), r["projections"][0].as_str()), (Some(f.head), Some("operations")));
    // Where the time went, each part in milliseconds (the operations' events all applied).
    for part in ["readingLog", "committing", "finishing"] {
        assert!(r["spent"][part].is_u64(), "{part}: {r:#}");
    }
    let applied = &r["spent"]["applying"][0];
    assert_eq!(applied["projection"], "operations", "{r:#}");
    assert!(applied["events"].as_u64().is_some_and(|n| n > 0), "{r:#}");
    json_ok(&replay(&f.url, &["--json", "rebuild"]));
    assert_eq!(checksums(&f).await, before);
    let out = replay(&f.url, &["rebuild", "--projection", "nope"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no read model `nope`"));

    // 1. a read-model row changed behind the projections' back
    let events = all_events(&*f.log.store).await;
    let op = events.iter().find(|e| e.event_type == "operation.failed").expect("a failed run");
    let op_id = op.stream_id.strip_prefix("operation-").unwrap();
    f.log.raw.execute(&format!("UPDATE operations SET status = 'done' WHERE id = '{op_id}'")).await.unwrap();
    let found = problems(&f.url);
    assert!(found.iter().all(|p| p["check"] == "read_model"), "{found:#?}");
    let row = found.iter().find(|p| p["table"] == "operations.operations").expect("the operations table differs");
    let detail = row["detail"].as_str().unwrap();
    assert!(detail.contains(op_id) && detail.contains("status") && detail.contains("\"done\""), "{detail}");

    // 2. the log itself: a payload that no longer decodes, and a stream version moved
    let started = events.iter().find(|e| e.event_type == "operation.started").unwrap();
    let moved = events.iter().find(|e| e.stream_version == 2 && e.stream_id.starts_with("task-")).unwrap();
    tamper_log(
        &f.log.raw,
        &format!("UPDATE events SET payload = '{{\"bogus\": true}}' WHERE position = {}", started.position),
    )
    .await;
    tamper_log(&f.log.raw, &format!("UPDATE events SET stream_version = 1000 WHERE position = {}", moved.position))
        .await;
    // 3. a parentNodeId that names no event
    let child = events.iter().find(|e| e.metadata.chain.parent_node_id.is_some()).unwrap();
    let bogus = "01900000-0000-7000-8000-00000000dead";
    // both the metadata (what readers use) and its indexed copy now name an event that never was
    let sql = match &f.log.raw {
        RawDb::Sqlite(_) => format!(
            "UPDATE events SET parent_node_id = '{bogus}', \
             metadata = json_set(metadata, '$.chain.parentNodeId', '{bogus}') WHERE position = {}",
            child.position
        ),
        RawDb::Postgres(_) => format!(
            "UPDATE events SET parent_node_id = '{bogus}'::uuid, \
             metadata = jsonb_set(metadata::jsonb, '{{chain,parentNodeId}}', '\"{bogus}\"') WHERE position = {}",
            child.position
        ),
    };
    tamper_log(&f.log.raw, &sql).await;
    let found = problems(&f.url);
    let has = |check: &str, stream: &str, position: i64| {
        found.iter().any(|p| p["check"] == check && p["streamId"] == stream && p["position"].as_i64() == Some(position))
    };
    assert!(has("payload", &started.stream_id, started.position), "{found:#?}");
    assert!(has("stream_versions", &moved.stream_id, moved.position), "{found:#?}");
    assert!(
        found.iter().any(|p| p["check"] == "chain_links"
            && p["position"].as_i64() == Some(child.position)
            && p["streamId"] == child.stream_id.as_str()
            && p["detail"].as_str().unwrap().contains("resolves to no event")),
        "{found:#?}"
    );
    // only the log problems planted, plus the read models built from the untampered log
    assert!(
        found.iter().all(|p| {
            p["check"] == "read_model"
                || p["position"].as_i64().is_some_and(|x| {
                    [started.position, moved.position, child.position].contains(&x) || x > moved.position
                })
        }),
        "{found:#?}"
    );

    // the read model tampered with before is still reported
    assert!(found.iter().any(|p| p["table"] == "operations.operations"));
    // and a table report names them (the log's checks only: the read models were shown above)
    let out = replay(&f.url, &["verify", "--log-only"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("problem(s) found") && text.contains(&moved.stream_id), "{text}");
}

both!(verify_is_clean_then_catches_tampering as verify_and_rebuild);
