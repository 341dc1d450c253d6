//! Signal sources, the source → signal → action flow, and the policies.

use proptest::prelude::*;
use serde_json::json;

use super::policy::*;
use super::source::{ActionError, scope_key_of_payload};
use super::*;
use crate::aggregate::{Aggregate, DomainEvent};
use crate::briefs::{Brief, BriefCommand, BriefEvent, BriefPriority, BriefType, CreateBrief};
use crate::envelope::Actor;
use crate::error::DomainError;
use crate::operations::event::{HumanAsked, OperationFailed};
use crate::operations::hitl::{CardKind, HitlCard};
use crate::operations::{
    CreateOperation, Operation, OperationCommand, OperationError, OperationKind,
};
use crate::stamp::stamp;
use crate::testing::*;
use crate::values::AgentRef;

fn receive(id: &str, kind: &str, payload: serde_json::Value) -> SourceCommand {
    SourceCommand::Receive {
        source_id: id.into(),
        source_type: kind.into(),
        payload,
        scope_key: None,
        timestamp_ms: 1,
    }
}

#[test]
fn upstream_has_seventeen_source_types_six_from_the_browser() {
    assert_eq!(AGENT_SIGNAL_SOURCE_TYPES.len(), 17);
    assert!(CLIENT_SOURCE_TYPES.iter().all(|t| is_source_type(t) && t.starts_with("client.")));
    assert!(!is_source_type("quick_note.analyze.requested"), "only later upstream");
    assert!(!is_client_source_type("agent.execution.completed"));
}

#[test]
fn agentlogs_own_source_types_are_accepted_and_kept_apart_from_upstreams() {
    for t in AGENTLOG_SOURCE_TYPES {
        assert!(is_source_type(t) && is_agentlog_source_type(t) && t.starts_with("agentlog."));
        assert!(!AGENT_SIGNAL_SOURCE_TYPES.contains(&t) && !is_client_source_type(t));
        let (source, events) =
            apply(Source::default(), &receive("s", t, json!({})), &system_ctx(1));
        assert_eq!(types(&events), ["signal.source_received"], "{t}");
        assert_eq!(source.source_type, t);
    }
    assert!(AGENT_SIGNAL_SOURCE_TYPES.iter().all(|t| !is_agentlog_source_type(t)));
}

#[test]
fn agentlog_facts_become_sources_with_ids_derived_from_the_fact() {
    use crate::cron_jobs::{CronFired, CronJob, CronToggled};
    use crate::operations::event::LeaseExpired;
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-30T10:00:00Z").unwrap().to_utc();
    let op = op(OperationKind::Conversation, None);
    assert!(!op.user_id.is_empty());
    let expired = LeaseExpired { worker_id: "w1".into(), expired_at: at, at };
    let reactions = on_lease_expired(&op, &expired);
    let [Reaction::ReceiveSource(s)] = reactions.as_slice() else { panic!("{reactions:?}") };
    assert_eq!(s.source_type, "agentlog.operation.lease_expired");
    assert_eq!(s.source_id, format!("~lease-expired:op1:{}", at.timestamp_millis()));
    assert_eq!(s.payload["workerId"], "w1");
    assert_eq!(s.payload["userId"], op.user_id.as_str());
    assert_eq!(s.payload["topicId"], "tp", "the scope key derives from it");
    assert_eq!(on_lease_expired(&op, &expired), on_lease_expired(&op, &expired), "pure");

    let job = CronJob {
        job_id: "j1".into(),
        user_id: "alice".into(),
        agent_id: "a1".into(),
        total_executions: 2,
        ..CronJob::default()
    };
    let fired = CronFired {
        job_id: "j1".into(),
        local_time: at.fixed_offset(),
        total_executions: 2,
        remaining_executions: Some(0),
        at,
    };
    let reactions = on_cron_fired(&job, &fired);
    let [Reaction::ReceiveSource(f)] = reactions.as_slice() else { panic!("{reactions:?}") };
    assert_eq!((f.source_type, f.source_id.as_str()), ("agentlog.cron.fired", "~cron-fired:j1:2"));
    let reactions = on_cron_exhausted(&job, &CronToggled { at });
    let [Reaction::ReceiveSource(x)] = reactions.as_slice() else { panic!("{reactions:?}") };
    assert_eq!(
        (x.source_type, x.source_id.as_str()),
        ("agentlog.cron.exhausted", "~cron-exhausted:j1:2")
    );
}

#[test]
fn the_same_source_id_twice_is_one_source() {
    let cmd = receive("s1", "tool.outcome.completed", json!({"topicId": "tp", "userId": "u1"}));
    let (source, events) = apply(Source::default(), &cmd, &system_ctx(1));
    assert_eq!(types(&events), ["signal.source_received"]);
    assert_eq!(source.scope_key, "topic:tp", "derived from the payload");
    let (_, again) = apply(source, &cmd, &system_ctx(2));
    assert!(again.is_empty());
    // and racing producers append the same event id
    let (a, b) = (system_ctx(1), system_ctx(50));
    let ea = stamp(&Source::default(), &Source::default().decide(&cmd, &a).unwrap(), &a);
    let eb = stamp(&Source::default(), &Source::default().decide(&cmd, &b).unwrap(), &b);
    assert_eq!(ea[0].event_id, eb[0].event_id);
    assert_eq!(ea[0].metadata.chain.root_source_id, ea[0].event_id, "a source roots its chain");
    assert_eq!(ea[0].metadata.scope_key, "topic:tp");
}

#[test]
fn scope_keys_follow_the_producer_order() {
    assert_eq!(
        scope_key_of_payload(&json!({"taskId": "t", "agentId": "a", "userId": "u"})),
        "task:t"
    );
    assert_eq!(
        scope_key_of_payload(
            &json!({"platform": "slack", "applicationId": "x", "platformThreadId": "y"})
        ),
        "bot:slack:x:y"
    );
    assert_eq!(scope_key_of_payload(&json!({"agentId": "a", "userId": "u"})), "agent:a:user:u");
    assert_eq!(
        scope_key_of_payload(&json!({"topicId": 3})),
        "fallback:global",
        "only strings count"
    );
}

#[test]
fn source_signal_action_and_result() {
    use SourceCommand as C;
    assert!(matches!(
        refused(&Source::default(), &receive("s", "bogus.type", json!({})), &system_ctx(1)),
        DomainError::Validation { .. }
    ));
    assert!(matches!(
        refused(&Source::default(), &receive("s", "runtime.after_step", json!([])), &system_ctx(1)),
        DomainError::Validation { .. }
    ));
    let emit = C::EmitSignal {
        signal_type: "signal.tool.outcome".into(),
        policy_id: "p".into(),
        payload: json!({}),
    };
    assert!(matches!(
        refused(&Source::default(), &emit, &system_ctx(1)),
        DomainError::NotFound { .. }
    ));
    let s =
        apply(Source::default(), &receive("s1", "tool.outcome.failed", json!({})), &system_ctx(1))
            .0;
    let (s, events) = apply(s, &emit, &system_ctx(2));
    let SourceEvent::SignalEmitted(signal) = &events[0] else { panic!() };
    assert!(signal.signal_id.starts_with("signal:"));
    let dispatch = |signal_id: &str| C::DispatchAction {
        signal_id: signal_id.into(),
        action_type: "action.nudge.handle".into(),
        payload: json!({}),
    };
    assert!(matches!(
        refused(&s, &dispatch("signal:nope"), &system_ctx(3)),
        DomainError::NotFound { .. }
    ));
    let (s, events) = apply(s, &dispatch(&signal.signal_id), &system_ctx(3));
    let SourceEvent::ActionDispatched(action) = &events[0] else { panic!() };
    let result = |status, attempt, error| C::RecordActionResult {
        action_id: action.action_id.clone(),
        status,
        attempt,
        detail: None,
        error,
    };
    let err = || {
        Some(ActionError {
            code: "E".into(),
            message: "m".into(),
            retriable: Some(true),
            retry_after_ms: None,
        })
    };
    assert!(matches!(
        refused(&s, &result(ActionStatus::Failed, 1, None), &system_ctx(4)),
        DomainError::Validation { .. }
    ));
    let (s, _) = apply(s, &result(ActionStatus::Failed, 1, err()), &system_ctx(4));
    assert!(
        matches!(
            refused(&s, &result(ActionStatus::Applied, 1, None), &system_ctx(5)),
            DomainError::Validation { .. }
        ),
        "attempts go up"
    );
    let (s, _) = apply(s, &result(ActionStatus::Applied, 2, None), &system_ctx(5));
    assert!(matches!(
        refused(&s, &result(ActionStatus::Skipped, 3, None), &system_ctx(6)),
        DomainError::AlreadyFinished { .. }
    ));
}

fn op(kind: OperationKind, parent: Option<&str>) -> Operation {
    let mut c = CreateOperation::new(
        "op1",
        kind,
        AgentRef { agent_id: "a1".into(), config_version: 1, model: None, provider: None },
    );
    c.parent_operation_id = parent.map(str::to_string);
    c.topic_id = Some("tp".into());
    apply(Operation::default(), &OperationCommand::Create(c), &system_ctx(0)).0
}

fn failed() -> OperationFailed {
    OperationFailed {
        error: OperationError {
            message: "model down".into(),
            error_type: None,
            code: Some("quota_exceeded".into()),
        },
        at: at(5),
    }
}

#[test]
fn an_operation_failure_becomes_an_urgent_error_brief_and_then_a_notification() {
    let reactions = on_operation_failed(&op(OperationKind::Conversation, None), &failed());
    let [Reaction::CreateBrief(brief)] = reactions.as_slice() else { panic!("{reactions:?}") };
    assert_eq!((brief.brief_type, brief.priority), (BriefType::Error, BriefPriority::Urgent));
    assert_eq!(
        brief.brief_id,
        brief_id_for("operation-failed", "op1"),
        "the same failure never makes two briefs"
    );
    // the brief, once created, turns into the notification
    let created =
        Brief::default().decide(&BriefCommand::Create(brief.clone()), &system_ctx(6)).unwrap();
    let BriefEvent::Created(created) = &created[0] else { panic!() };
    let actions: Vec<&str> =
        created.brief.actions.iter().flatten().map(|a| a.key.as_str()).collect();
    assert_eq!(actions, ["upgrade", "feedback"], "a billing error offers an upgrade");
    let reactions = on_brief_created(created);
    let [Reaction::CreateNotification(n)] = reactions.as_slice() else { panic!() };
    assert_eq!(n.dedupe_key.as_deref(), Some(format!("brief:{}", brief.brief_id).as_str()));
    assert_eq!((n.user_id.as_str(), n.notification_type.as_str()), ("u1", "brief_error"));
    // task runs and sub-agents report elsewhere
    assert!(on_operation_failed(&op(OperationKind::Task, None), &failed()).is_empty());
    assert!(on_operation_failed(&op(OperationKind::Subagent, Some("p")), &failed()).is_empty());
}

#[test]
fn a_human_asked_becomes_a_decision_notification() {
    let asked = HumanAsked {
        card: HitlCard::new("c1", "Ship it?", CardKind::Confirm),
        deadline: None,
        at: at(3),
    };
    let reactions = on_human_asked(&op(OperationKind::Conversation, None), &asked);
    let [Reaction::CreateNotification(n)] = reactions.as_slice() else { panic!() };
    assert_eq!(
        (n.category.as_str(), n.notification_type.as_str(), n.title.as_str()),
        ("hitl", "decision_required", "Ship it?")
    );
    assert_eq!(n.dedupe_key.as_deref(), Some("hitl:op1:c1"));
}

#[test]
fn a_completed_that_is_only_a_pause_is_not_finished() {
    let received = |reason: &str| super::source::SourceReceived {
        source_id: "s".into(),
        source_type: "agent.execution.completed".into(),
        payload: json!({"operationId": "op1", "steps": 3, "reason": reason}),
        scope_key: "user:u1".into(),
        timestamp: 0,
    };
    assert!(is_run_finished(&received("done")));
    assert!(!is_run_finished(&received("waiting_for_human")));
    assert!(!is_run_finished(&received("waiting_for_async_tool")));
}

#[test]
fn policy_briefs_are_created_with_the_triggers_chain() {
    let brief = CreateBrief::new(brief_id_for("x", "y"), BriefType::Insight, "T", "S");
    let source_ctx = system_ctx(1);
    let op0 = op(OperationKind::Conversation, None);
    let src = stamp(
        &op0,
        &op0.decide(&OperationCommand::Cancel { reason: None }, &source_ctx).unwrap(),
        &source_ctx,
    );
    let trigger = crate::envelope::RecordedEvent {
        position: 1,
        event_id: src[0].event_id,
        stream_id: "operation-op1".into(),
        stream_version: 2,
        event_type: src[0].event_type.clone(),
        schema_version: 1,
        payload: src[0].payload.clone(),
        metadata: src[0].metadata.clone(),
        recorded_at: at(1),
    };
    let ctx = crate::context::Context::reacting_to(
        &trigger,
        ids::OPERATION_FAILED,
        Actor::system("signal-bus"),
    );
    let events = Brief::default().decide(&BriefCommand::Create(brief), &ctx).unwrap();
    let stamped = stamp(&Brief::default(), &events, &ctx);
    assert_eq!(stamped[0].metadata.chain.root_source_id, src[0].event_id);
    assert_eq!(stamped[0].metadata.chain.parent_node_id, Some(trigger.event_id));
    assert_eq!(events[0].event_type(), "brief.created");
}

fn command() -> impl Strategy<Value = SourceCommand> {
    use SourceCommand as C;
    let kind = prop::sample::select(AGENT_SIGNAL_SOURCE_TYPES.to_vec());
    prop_oneof![
        (kind, prop::sample::select(vec!["s1", "s2"])).prop_map(|(k, id)| receive(
            id,
            k,
            json!({"userId": "u1"})
        )),
        Just(C::EmitSignal {
            signal_type: "signal.x".into(),
            policy_id: "p".into(),
            payload: json!({"n": 1})
        }),
        "signal:[a-z0-9-]{0,3}".prop_map(|signal_id| C::DispatchAction {
            signal_id,
            action_type: "action.x".into(),
            payload: json!(null)
        }),
        (
            "action:[a-z]{0,2}",
            prop::sample::select(vec![
                ActionStatus::Applied,
                ActionStatus::Skipped,
                ActionStatus::Failed,
                ActionStatus::Pending
            ]),
            0u32..3
        )
            .prop_map(|(action_id, status, attempt)| C::RecordActionResult {
                action_id,
                status,
                attempt,
                detail: None,
                error: None
            }),
    ]
}

proptest! {
    #[test]
    fn random_command_sequences_keep_the_source_consistent(commands in prop::collection::vec(command(), 1..20)) {
        let times: Vec<(i64, Actor)> = commands.iter().map(|_| (1, Actor::system("bus"))).collect();
        let steps: Vec<_> = commands.into_iter().zip(timeline(&times)).collect();
        let (source, _) = exercise::<Source>(&steps);
        prop_assert!(source.signals.iter().all(|s| s.starts_with("signal:")));
    }
}
