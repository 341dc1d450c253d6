//! Fifty clients on the same conversation, the same task and the same operation at once
//! (`agentlog-load --scenario contention`): each races to claim the operation and to start a
//! second operation on the busy conversation, then appends messages (all branches of one root),
//! comments on the task and reports steps, retrying a CONFLICT as a client would. Every outcome
//! is an acknowledgement or a CONFLICT / CONVERSATION_BUSY refusal; exactly one claim wins; the
//! acknowledged mutations and the events in the log match one for one; no stream version or
//! event id is stored twice; the read models equal a rebuild.
//!
//! A heavier run: `AGENTLOG_CONTENTION_MUTATIONS=5000 cargo test --release -p agentlog-api --test it -- concurrency --nocapture`

use std::time::Duration;

use agentlog_load::{Config, Record, Scenario};

use crate::{
    faults::TempRecord,
    support::{Db, Server, check_acknowledged, check_log, read_log, verify_read_models},
};

const CLIENTS: usize = 50;

async fn fifty_clients_on_one_of_each(db: Db) {
    let server = Server::start(db).await;
    let record = TempRecord::create();
    let mut config = Config::new(server.base.clone(), server.admin_token.clone());
    config.scenario = Scenario::Contention;
    config.clients = CLIENTS;
    config.subscribers = 1;
    // The setup, two races per client, then rounds of three mutations (retries count too): on
    // a 2-core machine each mutation on the one contended stream waits for the others.
    let max = std::env::var("AGENTLOG_CONTENTION_MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    config.max_mutations = Some(max);
    config.duration = Some(Duration::from_secs(120));
    config.record = Some(record.0.clone());
    let report = agentlog_load::run(config).await.expect("the load run");
    eprintln!("{report}");

    for (op, o) in &report.operations {
        for code in o.errors.keys() {
            assert!(code == "CONFLICT" || code == "CONVERSATION_BUSY", "{op} answered {code}: {report}");
        }
    }
    let claims = &report.operations["claimOperation"];
    assert_eq!(claims.acknowledged, 1, "one claim wins");
    assert_eq!(claims.errors.get("CONFLICT"), Some(&(CLIENTS as u64 - 1)), "every other claim is a CONFLICT");
    let starts = &report.operations["startOperation"];
    assert_eq!(starts.acknowledged, 1, "only the setup's operation starts on the busy conversation");
    assert_eq!(starts.errors.get("CONVERSATION_BUSY"), Some(&(CLIENTS as u64)));
    let sub = &report.subscribers[0];
    assert!(sub.caught_up && sub.duplicates == 0, "{sub:?}");

    let db = server.stop();
    let events = read_log(&db).await;
    check_log(&events);
    let records = Record::read_file(&record.0).expect("the record file");
    assert_eq!(records.len() as u64, report.acknowledged);
    check_acknowledged(&records, &events);

    let id_of = |op: &str, key: &str| {
        let r = records.iter().find(|r| r.op == op).unwrap_or_else(|| panic!("no acknowledged {op}"));
        r.ids[key].as_str().expect("an id").to_string()
    };
    // Topic ids are per owner: the topic's stream is where its creation landed.
    let topic = id_of("createConversation", "topicId");
    let conversation = events
        .iter()
        .find(|e| e.event_type == "conversation.created" && e.payload["topicId"] == topic.as_str())
        .map(|e| e.stream_id.clone())
        .expect("the topic's creation");
    // Task ids are per owner too: the task's stream is where its creation landed.
    let task_id = id_of("createTask", "taskId");
    let task = events
        .iter()
        .find(|e| e.event_type == "task.created" && e.payload["taskId"] == task_id.as_str())
        .map(|e| e.stream_id.clone())
        .expect("the task's creation");
    let operation_id = id_of("claimOperation", "operationId");
    let operation = events
        .iter()
        .find(|e| e.event_type == "operation.created" && e.payload["operationId"] == operation_id.as_str())
        .map(|e| e.stream_id.clone())
        .expect("the operation's creation");
    let acked = |op: &str| records.iter().filter(|r| r.op == op && r.position > 0).count();
    let logged = |stream: &str, event_type: &str| {
        events.iter().filter(|e| e.stream_id == stream && e.event_type == event_type).count()
    };
    for (op, stream, event_type) in [
        ("appendMessage", &conversation, "conversation.message_appended"),
        ("startOperation", &conversation, "conversation.operation_attached"),
        ("addTaskComment", &task, "task.comment_added"),
        ("reportStep", &operation, "operation.step_recorded"),
        ("claimOperation", &operation, "operation.claimed"),
    ] {
        assert_eq!(acked(op), logged(stream, event_type), "acknowledged {op} vs {event_type} in {stream}");
    }
    assert!(acked("appendMessage") > 10, "the clients contended: {report}");
    verify_read_models(&db).await;
}

both!(fifty_clients_on_one_of_each as fifty_clients_on_one_of_each);
