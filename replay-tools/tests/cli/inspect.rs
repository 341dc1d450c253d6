//! The read-only commands on a generated log: `run`, `chain`, `state` and `stats` — each
//! checked against the log itself, folded with the domain's code.

use std::collections::{BTreeMap, HashMap};

use agentlog_domain::{
    agents::{Agent, AgentEvent},
    aggregate::{Aggregate, DomainEvent},
    envelope::RecordedEvent,
    operations::{Operation, OperationStatus},
    tasks::Task,
};
use agentlog_eventlog::fold_recorded;
use serde_json::{Value, json};

use crate::{
    both,
    support::{Fixture, all_events, json_ok, replay, workload},
};

fn stream(events: &[RecordedEvent], stream_id: &str) -> Vec<RecordedEvent> {
    events.iter().filter(|e| e.stream_id == stream_id).cloned().collect()
}

fn positions(v: &Value) -> Vec<i64> {
    v["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["event"]["position"].as_i64().expect("position"))
        .collect()
}

async fn run_timeline(f: &Fixture) {
    let events = all_events(&*f.log.store).await;
    // a run with a sub-agent, so the timeline spans streams
    let spawn =
        events.iter().find(|e| e.event_type == "operation.child_spawned").expect("the workload spawns sub-agents");
    let op_id = spawn.stream_id.strip_prefix("operation-").expect("operation stream").to_string();
    let child = spawn.payload["childOperationId"].as_str().expect("child id").to_string();
    let own = stream(&events, &spawn.stream_id);
    let child_events = stream(&events, &format!("operation-{child}"));

    let v = json_ok(&replay(&f.url, &["--json", "run", &op_id]));
    let got = positions(&v);
    assert!(got.windows(2).all(|w| w[0] < w[1]), "log order: {got:?}");
    let own_positions: Vec<i64> = own.iter().map(|e| e.position).collect();
    assert_eq!(got.iter().copied().filter(|p| own_positions.contains(p)).collect::<Vec<_>>(), own_positions);
    assert!(child_events.iter().all(|e| got.contains(&e.position)), "the sub-agent's events are on the timeline");
    assert!(v["subAgents"].as_array().unwrap().iter().any(|c| c == &json!(child)));
    // its messages: every conversation event naming the run
    for e in events
        .iter()
        .filter(|e| e.payload.get("operationId") == Some(&json!(op_id)) && e.stream_id.starts_with("conversation-"))
    {
        assert!(got.contains(&e.position), "message event at {} is on the timeline", e.position);
    }
    // the state after each of the run's own events is the fold up to it
    for entry in v["entries"].as_array().unwrap() {
        let p = entry["event"]["position"].as_i64().unwrap();
        let (state, _) = fold_recorded::<Operation>(&own, Some(p)).unwrap();
        assert_eq!(entry["operation"]["status"], json!(state.status.as_str()), "status after position {p}");
        assert_eq!(entry["operation"]["stepCount"], json!(state.step_count));
    }
    let (end, _) = fold_recorded::<Operation>(&own, None).unwrap();
    assert_eq!(v["state"], serde_json::to_value(&end).unwrap());

    // the exact agent config it ran under: its agent's config at the version it recorded
    let agent = end.spec.as_ref().map(|s| s.agent.clone()).expect("a created run");
    let mut roster = Agent::default();
    for e in stream(&events, &format!("agent-{}", agent.agent_id)) {
        roster = roster.evolve(&AgentEvent::decode(&e.event_type, e.schema_version, &e.payload).unwrap());
        if roster.version == agent.config_version {
            break;
        }
    }
    assert_eq!(roster.version, agent.config_version, "the roster holds the run's config version");
    let used = &v["agentConfig"];
    assert_eq!(used["agentId"], json!(agent.agent_id), "{used}");
    assert_eq!(used["configVersion"], json!(agent.config_version), "{used}");
    assert_eq!(used["config"], serde_json::to_value(&roster.config).unwrap(), "{used}");

    // --at stops there, with the state as of then
    let at = own[own.len() / 2].position;
    let v = json_ok(&replay(&f.url, &["--json", "run", &op_id, "--at", &at.to_string()]));
    assert!(positions(&v).iter().all(|p| *p <= at));
    assert_eq!(positions(&v).iter().filter(|p| own_positions.contains(p)).count(), own.len() / 2 + 1);
    let (then, _) = fold_recorded::<Operation>(&own, Some(at)).unwrap();
    assert_eq!(v["state"], serde_json::to_value(&then).unwrap());

    // the table names the events and the state after them
    let out = replay(&f.url, &["run", &op_id]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("operation.created") && text.contains("operation.child_spawned"), "{text}");
    assert!(text.contains(&format!("run {op_id}")));
    let header = format!("agent {} config v{}: model=", agent.agent_id, agent.config_version);
    assert!(text.contains(&header) && text.contains("system role: "), "{text}");

    let out = replay(&f.url, &["run", "no-such-run"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no operation `no-such-run`"));
}

async fn chain_tree(f: &Fixture) {
    let events = all_events(&*f.log.store).await;
    // a chain that reaches a notification through other events (failed run → brief → notification)
    let root = events
        .iter()
        .filter(|e| e.event_type == "notification.created" && e.metadata.chain.parent_node_id.is_some())
        .map(|e| e.metadata.chain.root_source_id)
        .next()
        .unwrap_or_else(|| {
            let mut sizes: HashMap<uuid::Uuid, usize> = HashMap::new();
            for e in &events {
                *sizes.entry(e.metadata.chain.root_source_id).or_default() += 1;
            }
            sizes.into_iter().max_by_key(|(_, n)| *n).map(|(r, _)| r).unwrap()
        });
    let members: Vec<&RecordedEvent> = events.iter().filter(|e| e.metadata.chain.root_source_id == root).collect();
    let v = json_ok(&replay(&f.url, &["--json", "chain", &root.to_string()]));
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), members.len());
    assert_eq!(nodes[0]["event"]["eventId"], json!(root.to_string()));
    assert_eq!((nodes[0]["depth"].as_u64(), nodes[0]["kind"].as_str()), (Some(0), Some("source")));
    // depth first: each node's parent is the nearest earlier node one level up
    let mut path: Vec<Value> = Vec::new();
    for n in nodes {
        let depth = n["depth"].as_u64().unwrap() as usize;
        assert!(!n["orphan"].as_bool().unwrap());
        if depth > 0 {
            assert_eq!(n["event"]["metadata"]["chain"]["parentNodeId"], path[depth - 1], "{n}");
        }
        path.truncate(depth);
        path.push(n["event"]["eventId"].clone());
    }
    let out = replay(&f.url, &["chain", &root.to_string()]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    if members.len() > 1 {
        assert!(text.contains("└─"), "{text}");
    }
    let out = replay(&f.url, &["chain", "not-a-uuid"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not an event id"));
}

async fn state_as_of(f: &Fixture) {
    let events = all_events(&*f.log.store).await;
    let mut by_stream: BTreeMap<&str, Vec<RecordedEvent>> = BTreeMap::new();
    for e in &events {
        by_stream.entry(e.stream_id.as_str()).or_default().push(e.clone());
    }
    let (task_stream, task) = by_stream.iter().find(|(s, ev)| s.starts_with("task-") && ev.len() >= 3).expect("a task");
    let at = task[1].position;
    let v = json_ok(&replay(&f.url, &["--json", "state", task_stream, "--at", &at.to_string()]));
    let (want, version) = fold_recorded::<Task>(task, Some(at)).unwrap();
    assert_eq!(v["state"], serde_json::to_value(&want).unwrap());
    assert_eq!((v["version"].as_i64(), v["position"].as_i64()), (Some(version), Some(at)));
    assert_eq!(version, 2);
    let v = json_ok(&replay(&f.url, &["--json", "state", task_stream]));
    assert_eq!(v["state"], serde_json::to_value(fold_recorded::<Task>(task, None).unwrap().0).unwrap());

    // every kind of stream folds
    for prefix in ["operation-", "conversation-", "brief-", "notification-", "cron-", "group-", "agent-", "source-"] {
        if let Some((s, _)) = by_stream.iter().find(|(s, _)| s.starts_with(prefix)) {
            let out = replay(&f.url, &["state", s]);
            assert!(out.status.success(), "{s}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let out = replay(&f.url, &["state", "nonsense"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not a stream id"));
    let out = replay(&f.url, &["state", "task-does-not-exist"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("does not exist"));
}

async fn stats_match_a_direct_computation(f: &Fixture) {
    let events = all_events(&*f.log.store).await;
    let v = json_ok(&replay(&f.url, &["--json", "stats"]));
    assert_eq!(v["events"].as_u64(), Some(events.len() as u64));
    let by_type: BTreeMap<String, u64> = serde_json::from_value(v["byType"].clone()).unwrap();
    let generated: BTreeMap<String, u64> =
        workload().stats.by_type.iter().map(|(k, n)| (k.clone(), *n as u64)).collect();
    assert_eq!(by_type, generated);
    let by_day: BTreeMap<String, u64> = serde_json::from_value(v["byDay"].clone()).unwrap();
    assert_eq!(by_day.values().sum::<u64>(), events.len() as u64);

    // runs folded one stream at a time
    let mut streams: BTreeMap<&str, Vec<RecordedEvent>> = BTreeMap::new();
    for e in events.iter().filter(|e| e.stream_id.starts_with("operation-")) {
        streams.entry(e.stream_id.as_str()).or_default().push(e.clone());
    }
    let ops: Vec<Operation> = streams.values().map(|s| fold_recorded::<Operation>(s, None).unwrap().0).collect();
    assert_eq!(v["runs"].as_u64(), Some(ops.len() as u64));
    let cost: Option<u64> = ops.iter().filter_map(|o| o.usage.cost_micros).reduce(|a, b| a + b);
    let tokens: Option<u64> = ops.iter().filter_map(|o| o.usage.total_tokens).reduce(|a, b| a + b);
    assert_eq!(v["usage"]["costMicros"].as_u64(), cost);
    assert_eq!(v["usage"]["totalTokens"].as_u64(), tokens);
    assert!(cost.is_some(), "the workload measures cost");
    let per_agent: u64 = v["usageByAgent"].as_array().unwrap().iter().filter_map(|r| r["costMicros"].as_u64()).sum();
    assert_eq!(Some(per_agent), cost);

    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    let mut durations: Vec<i64> = Vec::new();
    let mut failed_by_agent: BTreeMap<String, u64> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.is_finished()) {
        let reason = o
            .completion_reason
            .map(|r| serde_json::to_value(r).unwrap().as_str().unwrap().to_string())
            .unwrap_or_else(|| o.status.as_str().to_string());
        *reasons.entry(reason).or_default() += 1;
        if let (Some(a), Some(b)) = (o.started_at, o.completed_at) {
            durations.push((b - a).num_milliseconds());
        }
        if o.status == OperationStatus::Error {
            *failed_by_agent.entry(o.spec.as_ref().unwrap().agent.agent_id.clone()).or_default() += 1;
        }
    }
    let got_reasons: BTreeMap<String, u64> = serde_json::from_value(v["completionReasons"].clone()).unwrap();
    assert_eq!(got_reasons, reasons);
    durations.sort_unstable();
    let rank = |q: f64| durations[((q * durations.len() as f64).ceil() as usize).max(1) - 1];
    assert_eq!(v["durations"]["count"].as_u64(), Some(durations.len() as u64));
    assert_eq!(v["durations"]["p50Ms"].as_i64(), Some(rank(0.5)));
    assert_eq!(v["durations"]["p95Ms"].as_i64(), Some(rank(0.95)));
    assert_eq!(v["durations"]["p99Ms"].as_i64(), Some(rank(0.99)));
    if let Some(worst) = failed_by_agent.values().max() {
        assert_eq!(v["failingAgents"][0]["failed"].as_u64(), Some(*worst));
    }

    let out = replay(&f.url, &["stats"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Events by type") && text.contains("p95") && text.contains("Agents that fail most"),
        "{text}"
    );
}

/// One log for the four read-only commands (loading a log is the slow part).
async fn read_only_commands(f: Fixture) {
    run_timeline(&f).await;
    chain_tree(&f).await;
    state_as_of(&f).await;
    stats_match_a_direct_computation(&f).await;
}

both!(read_only_commands as read_only_commands);
