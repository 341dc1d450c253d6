//! agentlog's built-in source and signal processors: pure functions from a source to the signals
//! it is worth, and from a signal to the actions it calls for. The action handlers (which do
//! I/O: create a notification, …) live in the api crate's source reactor.
//!
//! | source type | processor | signal |
//! |---|---|---|
//! | `agent.execution.completed`, `agent.execution.failed` | `execution-outcome` | `signal.execution.finished` (not for pauses) |
//! | `tool.outcome.completed`, `tool.outcome.failed` | `tool-outcome` | `signal.tool.outcome` |
//!
//! | signal type | processor | action |
//! |---|---|---|
//! | `signal.execution.finished` | `notify-failed-run` | `action.notification.create` (failed runs) |
//! | `signal.execution.finished` | `record-run-outcome` | `action.outcome.record` |
//! | `signal.tool.outcome` | `notify-tool-failure` | `action.notification.create` (failed tools) |

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

/// The built-in source processors.
pub fn source_processors() -> Registry<SourceProcessor> {
    let mut r = Registry::default();
    let execution = SourceProcessor { id: "execution-outcome", handle: execution_outcome };
    let tool = SourceProcessor { id: "tool-outcome", handle: tool_outcome };
    r.register("agent.execution.completed", execution)
        .register("agent.execution.failed", execution)
        .register("tool.outcome.completed", tool)
        .register("tool.outcome.failed", tool);
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
        assert_eq!(source_processors().list(None).len(), 4);
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
}
