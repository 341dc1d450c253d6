//! The write path's closed-loop load (`agentlog-load --scenario write`, the benchmark of
//! `scripts/write-ceiling.sh`): workers report steps one per `reportStep` or many per
//! `reportBatch`, as fast as the server answers. Every report is acknowledged, the log holds
//! one `operation.step_recorded` per acknowledged step, and the read models equal a rebuild.

use std::time::Duration;

use agentlog_load::{Config, Record, Scenario};

use crate::{
    faults::TempRecord,
    support::{Db, Server, check_acknowledged, check_log, read_log, verify_read_models},
};

async fn workers_report_steps_closed_loop(db: Db) {
    let server = Server::start(db).await;
    for batch in [1, 10] {
        let record = TempRecord::create();
        let mut config = Config::new(server.base.clone(), server.admin_token.clone());
        config.scenario = Scenario::Write;
        config.clients = 4;
        config.subscribers = 0;
        config.batch = batch;
        config.max_mutations = Some(60);
        config.duration = Some(Duration::from_secs(120));
        config.record = Some(record.0.clone());
        let report = agentlog_load::run(config).await.expect("the load run");
        eprintln!("{report}");
        let op = if batch == 1 { "reportStep" } else { "reportBatch" };
        assert!(report.operations.values().all(|o| o.errors.is_empty()), "{report}");
        let reports = report.operations[op].acknowledged;
        assert!(reports > 0, "{report}");
        let records = Record::read_file(&record.0).expect("the record file");
        assert_eq!(records.len() as u64, report.acknowledged);
        let events = read_log(&server.db).await;
        check_log(&events);
        check_acknowledged(&records, &events);
        let ops: std::collections::HashSet<&str> = records
            .iter()
            .filter(|r| r.op == op)
            .filter_map(|r| r.ids.get("operationId").and_then(|v| v.as_str()))
            .collect();
        let steps = events
            .iter()
            .filter(|e| e.event_type == "operation.step_recorded")
            // The run ids are unique to this load: the stream's name ends with one.
            .filter(|e| ops.iter().any(|id| e.stream_id.ends_with(id)))
            .count() as u64;
        assert_eq!(steps, reports * batch as u64, "one step event per acknowledged step: {report}");
        assert!(report.appended >= (reports * batch as u64) as i64, "{report}");
    }
    let db = server.stop();
    verify_read_models(&db).await;
}

both!(workers_report_steps_closed_loop as workers_report_steps_closed_loop);

/// `--rate`: the clients send on a fixed schedule (what `scripts/latency-at-size.sh` compares two
/// servers with): never more than rate × duration, never ahead of the schedule, and every one
/// of them acknowledged.
async fn a_fixed_schedule_bounds_what_is_sent(db: Db) {
    let server = Server::start(db).await;
    let run = |duration: u64, max: Option<u64>| {
        let mut config = Config::new(server.base.clone(), server.admin_token.clone());
        config.scenario = Scenario::Write;
        config.clients = 4;
        config.subscribers = 0;
        config.rate = Some(40.0);
        config.duration = Some(Duration::from_secs(duration));
        config.max_mutations = max;
        agentlog_load::run(config)
    };
    // Each client every 100 ms, 25 ms apart: at most 80 in 2 s (4 clients unpaced send hundreds).
    let report = run(2, None).await.expect("the load run");
    eprintln!("{report}");
    assert_eq!(report.rate, Some(40.0));
    assert!(report.operations.values().all(|o| o.errors.is_empty()), "{report}");
    assert!((20..=80).contains(&report.sent), "{report}");
    assert_eq!(report.acknowledged, report.sent, "{report}");
    // 30 mutations: some client sends an 8th, not before 700 ms.
    let report = run(60, Some(30)).await.expect("the load run");
    eprintln!("{report}");
    assert_eq!(report.sent, 30, "{report}");
    assert!(report.elapsed >= Duration::from_millis(700), "{report}");
    assert_eq!(report.acknowledged, report.sent, "{report}");
    let db = server.stop();
    verify_read_models(&db).await;
}

both!(a_fixed_schedule_bounds_what_is_sent as write_load_fixed_schedule);
