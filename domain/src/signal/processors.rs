//! agentlog's built-in source and signal processors: pure functions from a source to the signals
//! it is worth, and from a signal to the actions it calls for. The action handlers (which do
//! I/O: create a notification, …) live in the api crate's source reactor.
//!
//! | source type | processor | signal |
//! |---|---|---|
//! | `agent.execution.completed`, `agent.execution.failed` | `execution-outcome` | `signal.execution.finished` (not for pauses) |
//! | `tool.outcome.completed`, `tool.outcome.failed` | `tool-outcome` | `signal.tool.outcome` |
//! | `agentlog.operation.lease_expired` | `lease-expiry` | `signal.run.interrupted` |
//! | `agentlog.cron.fired` | `cron-fire` | `signal.schedule.fired` |
//! | `agentlog.cron.exhausted` | `cron-exhaustion` | `signal.schedule.exhausted` |
//!
//! | signal type | processor | action |
//! |---|---|---|
//! | `signal.execution.finished` | `notify-failed-run` | `action.notification.create` (failed runs) |
//! | `signal.execution.finished` | `record-run-outcome` | `action.outcome.record` |
//! | `signal.tool.outcome` | `notify-tool-failure` | `action.notification.create` (failed tools) |
//! | `signal.run.interrupted` | `notify-interrupted-run` | `action.notification.create` |
//! | `signal.schedule.fired` | `record-schedule-fire` | `action.outcome.record` |
//! | `signal.schedule.exhausted` | `notify-schedule-exhausted` | `action.notification.create` |

use serde_json::{Value, json};

use super::policy::is_run_finished;
use super::registry::Registry;
use super::source::{SignalEmitted, SourceReceived};

/// A signal a source processor asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalPlan {
    /// Its type.
    pub signal_type: String,
    /// Its payload.
    pub payload: Value,
}

/// An action a signal processor asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionPlan {
    /// Its type.
    pub action_type: String,
    /// Its payload.
    pub payload: Value,
}

/// A source processor: `id` is recorded as the signal's policy.
#[derive(Debug, Clone, Copy)]
pub struct SourceProcessor {
    /// Its id.
    pub id: &'static str,
    /// The signals a source is worth.
    pub handle: fn(&SourceReceived) -> Vec<SignalPlan>,
}

/// A signal processor.
#[derive(Debug, Clone, Copy)]
pub struct SignalProcessor {
    /// Its id.
    pub id: &'static str,
    /// The actions a signal calls for.
    pub handle: fn(&SignalEmitted) -> Vec<ActionPlan>,
}

/// Signal: a run finished (done or failed).
pub const EXECUTION_FINISHED: &str = "signal.execution.finished";
/// Signal: a tool call's outcome (upstream's signal type).
pub const TOOL_OUTCOME: &str = "signal.tool.outcome";
/// Signal: a run was interrupted because its worker stopped renewing the lease.
pub const RUN_INTERRUPTED: &str = "signal.run.interrupted";
/// Signal: a cron job fired.
pub const SCHEDULE_FIRED: &str = "signal.schedule.fired";
/// Signal: a cron job used its last execution.
pub const SCHEDULE_EXHAUSTED: &str = "signal.schedule.exhausted";
/// Action: create a notification for the source's owner.
pub const CREATE_NOTIFICATION: &str = "action.notification.create";
/// Action: record a run's outcome in the chain (the audit trail of what the bus saw).
pub const RECORD_OUTCOME: &str = "action.outcome.record";

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn execution_outcome(source: &SourceReceived) -> Vec<SignalPlan> {
    // A `completed` that only reports a pause (waiting for a human or a tool) is not an end.
    if !is_run_finished(source) {
        return Vec::new();
    }
    let failed = source.source_type == "agent.execution.failed";
    let p = &source.payload;
    vec![SignalPlan {
        signal_type: EXECUTION_FINISHED.into(),
        payload: json!({
            "operationId": text(p, "operationId"),
            "agentId": text(p, "agentId"),
            "topicId": text(p, "topicId"),
            "status": if failed { "failed" } else { "completed" },
            "reason": text(p, "reason"),
            "error": p.get("error").cloned().unwrap_or(Value::Null),
        }),
    }]
}

fn tool_outcome(source: &SourceReceived) -> Vec<SignalPlan> {
    let p = &source.payload;
    let failed = source.source_type == "tool.outcome.failed";
    let tool = p.get("tool").cloned().unwrap_or(Value::Null);
    vec![SignalPlan {
        signal_type: TOOL_OUTCOME.into(),
        payload: json!({
            "tool": tool,
            "status": if failed { "failed" } else { p.pointer("/outcome/status").and_then(Value::as_str).unwrap_or("succeeded") },
            "operationId": text(p, "operationId"),
            "error": p.pointer("/outcome/error").cloned().unwrap_or(Value::Null),
        }),
    }]
}

fn notify_failed_run(signal: &SignalEmitted) -> Vec<ActionPlan> {
    let p = &signal.payload;
    if text(p, "status") != Some("failed") {
        return Vec::new();
    }
    let operation = text(p, "operationId").unwrap_or("an operation");
    let message = p.pointer("/error/message").and_then(Value::as_str).or_else(|| text(p, "error"));
    vec![ActionPlan {
        action_type: CREATE_NOTIFICATION.into(),
        payload: json!({
            "category": "operation",
            "type": "run_failed",
            "title": "A run failed",
            "body": format!("{operation} failed: {}", message.unwrap_or("no reason given")),
            "dedupeKey": format!("{}:run-failed", signal.signal_id),
            "operationId": text(p, "operationId"),
        }),
    }]
}

fn record_run_outcome(signal: &SignalEmitted) -> Vec<ActionPlan> {
    let p = &signal.payload;
    vec![ActionPlan {
        action_type: RECORD_OUTCOME.into(),
        payload: json!({ "operationId": text(p, "operationId"), "status": text(p, "status") }),
    }]
}

fn notify_tool_failure(signal: &SignalEmitted) -> Vec<ActionPlan> {
    let p = &signal.payload;
    if text(p, "status") != Some("failed") {
        return Vec::new();
    }
    let tool = p.pointer("/tool/identifier").and_then(Value::as_str).unwrap_or("a tool");
    vec![ActionPlan {
        action_type: CREATE_NOTIFICATION.into(),
        payload: json!({
            "category": "tool",
            "type": "tool_failed",
            "title": format!("{tool} failed"),
            "body": p.pointer("/error/message").and_then(Value::as_str).unwrap_or("The tool call failed."),
            "dedupeKey": format!("{}:tool-failed", signal.signal_id),
            "operationId": text(p, "operationId"),
        }),
    }]
}

fn lease_expiry(source: &SourceReceived) -> Vec<SignalPlan> {
    let p = &source.payload;
    vec![SignalPlan {
        signal_type: RUN_INTERRUPTED.into(),
        payload: json!({
            "operationId": text(p, "operationId"),
            "workerId": text(p, "workerId"),
            "expiredAt": text(p, "expiredAt"),
        }),
    }]
}

fn notify_interrupted_run(signal: &SignalEmitted) -> Vec<ActionPlan> {
    let p = &signal.payload;
    let operation = text(p, "operationId").unwrap_or("an operation");
    let worker = text(p, "workerId").unwrap_or("its worker");
    vec![ActionPlan {
        action_type: CREATE_NOTIFICATION.into(),
        payload: json!({
            "category": "operation",
            "type": "run_interrupted",
            "title": "A run was interrupted",
            "body": format!("Worker {worker} stopped renewing its lease on operation {operation}; the run was interrupted; resumeOperation puts it back in the queue."),
            // One notice per expiry, however many signals reach here.
            "dedupeKey": format!("lease:{operation}:{}", text(p, "expiredAt").unwrap_or_default()),
            "operationId": text(p, "operationId"),
        }),
    }]
}

fn cron_fire(source: &SourceReceived) -> Vec<SignalPlan> {
    let p = &source.payload;
    vec![SignalPlan {
        signal_type: SCHEDULE_FIRED.into(),
        payload: json!({
            "jobId": text(p, "jobId"),
            "agentId": text(p, "agentId"),
            "totalExecutions": p.get("totalExecutions").cloned().unwrap_or(Value::Null),
        }),
    }]
}

fn record_schedule_fire(signal: &SignalEmitted) -> Vec<ActionPlan> {
    let p = &signal.payload;
    vec![ActionPlan {
        action_type: RECORD_OUTCOME.into(),
        payload: json!({
            "jobId": text(p, "jobId"),
            "totalExecutions": p.get("totalExecutions").cloned().unwrap_or(Value::Null),
        }),
    }]
}

fn cron_exhaustion(source: &SourceReceived) -> Vec<SignalPlan> {
    let p = &source.payload;
    vec![SignalPlan {
        signal_type: SCHEDULE_EXHAUSTED.into(),
        payload: json!({
            "jobId": text(p, "jobId"),
            "name": text(p, "name"),
            "totalExecutions": p.get("totalExecutions").cloned().unwrap_or(Value::Null),
        }),
    }]
}

fn notify_schedule_exhausted(signal: &SignalEmitted) -> Vec<ActionPlan> {
    let p = &signal.payload;
    let job = text(p, "jobId").unwrap_or("a cron job");
    let name = text(p, "name").unwrap_or(job);
    let runs = p.get("totalExecutions").and_then(Value::as_u64).unwrap_or(0);
    vec![ActionPlan {
        action_type: CREATE_NOTIFICATION.into(),
        payload: json!({
            "category": "cron",
            "type": "cron_exhausted",
            "title": format!("{name} has finished"),
            "body": format!("The cron job ran {runs} times, its last allowed execution, and was switched off."),
            "dedupeKey": format!("cron-exhausted:{job}:{runs}"),
            "actionUrl": format!("/cron/{job}"),
        }),
    }]
}

/// The built-in source processors.
pub fn source_processors() -> Registry<SourceProcessor> {
    let mut r = Registry::default();
    let execution = SourceProcessor { id: "execution-outcome", handle: execution_outcome };
    let tool = SourceProcessor { id: "tool-outcome", handle: tool_outcome };
    r.register("agent.execution.completed", execution)
        .register("agent.execution.failed", execution)
        .register("tool.outcome.completed", tool)
        .register("tool.outcome.failed", tool)
        .register(
            "agentlog.operation.lease_expired",
            SourceProcessor { id: "lease-expiry", handle: lease_expiry },
        )
        .register("agentlog.cron.fired", SourceProcessor { id: "cron-fire", handle: cron_fire })
        .register(
            "agentlog.cron.exhausted",
            SourceProcessor { id: "cron-exhaustion", handle: cron_exhaustion },
        );
    r
}

/// The built-in signal processors (two for a finished run: several handlers per type).
pub fn signal_processors() -> Registry<SignalProcessor> {
    let mut r = Registry::default();
    r.register(
        EXECUTION_FINISHED,
        SignalProcessor { id: "notify-failed-run", handle: notify_failed_run },
    )
    .register(
        EXECUTION_FINISHED,
        SignalProcessor { id: "record-run-outcome", handle: record_run_outcome },
    )
    .register(
        TOOL_OUTCOME,
        SignalProcessor { id: "notify-tool-failure", handle: notify_tool_failure },
    )
    .register(
        RUN_INTERRUPTED,
        SignalProcessor { id: "notify-interrupted-run", handle: notify_interrupted_run },
    )
    .register(
        SCHEDULE_FIRED,
        SignalProcessor { id: "record-schedule-fire", handle: record_schedule_fire },
    )
    .register(
        SCHEDULE_EXHAUSTED,
        SignalProcessor { id: "notify-schedule-exhausted", handle: notify_schedule_exhausted },
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(t: &str, payload: Value) -> SourceReceived {
        SourceReceived {
            source_id: "s1".into(),
            source_type: t.into(),
            payload,
            scope_key: "user:u".into(),
            timestamp: 0,
        }
    }

    fn signals(s: &SourceReceived) -> Vec<SignalPlan> {
        source_processors().matches(&s.source_type).iter().flat_map(|p| (p.handle)(s)).collect()
    }

    #[test]
    fn a_pause_is_not_a_finished_run() {
        let pause = source(
            "agent.execution.completed",
            json!({"operationId": "op1", "reason": "waiting_for_human"}),
        );
        assert!(signals(&pause).is_empty());
        let done =
            source("agent.execution.completed", json!({"operationId": "op1", "reason": "done"}));
        assert_eq!(signals(&done)[0].payload["status"], "completed");
    }

    #[test]
    fn a_failed_run_gets_two_actions_from_two_processors() {
        let failed = source(
            "agent.execution.failed",
            json!({"operationId": "op1", "error": {"message": "boom"}}),
        );
        let plan = &signals(&failed)[0];
        let signal = SignalEmitted {
            signal_id: "signal:1".into(),
            signal_type: plan.signal_type.clone(),
            policy_id: "execution-outcome".into(),
            payload: plan.payload.clone(),
            at: chrono::DateTime::UNIX_EPOCH,
        };
        let processors = signal_processors().matches(EXECUTION_FINISHED);
        assert_eq!(
            processors.iter().map(|p| p.id).collect::<Vec<_>>(),
            ["notify-failed-run", "record-run-outcome"]
        );
        let actions: Vec<ActionPlan> =
            processors.iter().flat_map(|p| (p.handle)(&signal)).collect();
        assert_eq!(
            actions.iter().map(|a| a.action_type.as_str()).collect::<Vec<_>>(),
            [CREATE_NOTIFICATION, RECORD_OUTCOME]
        );
        assert_eq!(actions[0].payload["body"], "op1 failed: boom");
    }

    #[test]
    fn every_processor_is_registered_for_known_source_types() {
        assert_eq!(source_processors().list(None).len(), 7);
        for t in [
            "agent.execution.completed",
            "agent.execution.failed",
            "tool.outcome.completed",
            "tool.outcome.failed",
        ] {
            assert!(super::super::is_source_type(t), "{t}");
            assert_eq!(source_processors().matches(t).len(), 1);
        }
    }

    #[test]
    fn each_of_agentlogs_own_source_types_has_a_processor_and_its_signals_a_handler() {
        for t in super::super::AGENTLOG_SOURCE_TYPES {
            let processors = source_processors().matches(t);
            assert_eq!(processors.len(), 1, "{t}");
            let plans =
                (processors[0].handle)(&source(t, json!({"jobId": "j1", "operationId": "op1"})));
            assert_eq!(plans.len(), 1, "{t}");
            assert_eq!(signal_processors().matches(&plans[0].signal_type).len(), 1, "{t}");
        }
    }

    fn emitted(plan: &SignalPlan) -> SignalEmitted {
        SignalEmitted {
            signal_id: "signal:1".into(),
            signal_type: plan.signal_type.clone(),
            policy_id: "p".into(),
            payload: plan.payload.clone(),
            at: chrono::DateTime::UNIX_EPOCH,
        }
    }

    fn actions(plan: &SignalPlan) -> Vec<ActionPlan> {
        let signal = emitted(plan);
        signal_processors()
            .matches(&signal.signal_type)
            .iter()
            .flat_map(|p| (p.handle)(&signal))
            .collect()
    }

    #[test]
    fn an_expired_lease_tells_the_owner_once_per_expiry() {
        let expired = source(
            "agentlog.operation.lease_expired",
            json!({"operationId": "op1", "workerId": "w1", "expiredAt": "2026-11-30T10:00:00Z"}),
        );
        let plan = &signals(&expired)[0];
        assert_eq!(plan.signal_type, RUN_INTERRUPTED);
        let acts = actions(plan);
        assert_eq!(acts.len(), 1);
        assert_eq!(acts[0].action_type, CREATE_NOTIFICATION);
        assert_eq!(acts[0].payload["type"], "run_interrupted");
        assert_eq!(acts[0].payload["dedupeKey"], "lease:op1:2026-11-30T10:00:00Z");
        assert!(acts[0].payload["body"].as_str().unwrap().contains("Worker w1"));
    }

    #[test]
    fn a_cron_fire_is_recorded_and_an_exhausted_job_is_announced() {
        let fired = source("agentlog.cron.fired", json!({"jobId": "j1", "totalExecutions": 3}));
        let acts = actions(&signals(&fired)[0]);
        assert_eq!(acts.len(), 1);
        assert_eq!(acts[0].action_type, RECORD_OUTCOME);
        assert_eq!(acts[0].payload, json!({"jobId": "j1", "totalExecutions": 3}));

        let done = source(
            "agentlog.cron.exhausted",
            json!({"jobId": "j1", "name": "Digest", "totalExecutions": 3}),
        );
        let acts = actions(&signals(&done)[0]);
        assert_eq!(acts[0].action_type, CREATE_NOTIFICATION);
        assert_eq!(acts[0].payload["title"], "Digest has finished");
        assert_eq!(acts[0].payload["dedupeKey"], "cron-exhausted:j1:3");
        assert_eq!(acts[0].payload["actionUrl"], "/cron/j1");
    }
}
