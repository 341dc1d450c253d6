//! The chain rule and deterministic ids, as stamped.

use super::*;
use crate::briefs::{Brief, BriefCommand, BriefType, CreateBrief};
use crate::envelope::RecordedEvent;
use crate::operations::{CreateOperation, Operation, OperationCommand, OperationKind};
use crate::testing::*;
use crate::values::AgentRef;

fn claimable() -> Operation {
    let create = CreateOperation::new(
        "op1",
        OperationKind::Conversation,
        AgentRef { agent_id: "a1".into(), config_version: 1, model: None, provider: None },
    );
    apply(Operation::default(), &OperationCommand::Create(create), &system_ctx(0)).0
}

fn claim() -> OperationCommand {
    OperationCommand::Claim { worker_id: "w1".into(), lease_secs: 60 }
}

fn recorded(event: &NewEvent, position: i64) -> RecordedEvent {
    RecordedEvent {
        position,
        event_id: event.event_id,
        stream_id: "operation-op1".into(),
        stream_version: position,
        event_type: event.event_type.clone(),
        schema_version: event.schema_version,
        payload: event.payload.clone(),
        metadata: event.metadata.clone(),
        recorded_at: at(position),
    }
}

#[test]
fn a_source_command_roots_the_chain_at_its_first_event() {
    let op = claimable();
    let ctx = worker_ctx("w1", 5);
    let events = op.decide(&claim(), &ctx).unwrap();
    let stamped = stamp(&op, &events, &ctx);
    assert_eq!(stamped.len(), 2, "claimed + started");
    let first = &stamped[0];
    assert_eq!(first.metadata.chain.root_source_id, first.event_id);
    assert_eq!(first.metadata.chain.parent_node_id, None);
    assert_eq!(first.metadata.chain.chain_id, format!("chain:{}", first.event_id));
    assert_eq!(first.event_id, ctx.first_event_id());
    let second = &stamped[1];
    assert_eq!(second.metadata.chain.root_source_id, first.event_id);
    assert_eq!(second.metadata.chain.parent_node_id, Some(first.event_id));
    assert_eq!(second.metadata.causation_id, Some(first.event_id));
    assert_eq!(second.metadata.actor, crate::envelope::Actor::worker("w1"));
    assert_eq!(second.metadata.user_id, "u1");
    assert_eq!(second.metadata.scope_key, "agent:a1:user:u1");
}

#[test]
fn a_caused_command_keeps_the_root_and_points_at_its_cause() {
    let op = claimable();
    let source_ctx = system_ctx(5).with_chain_id("chain:custom").with_correlation("req-9");
    let source = stamp(&op, &op.decide(&claim(), &source_ctx).unwrap(), &source_ctx);
    assert_eq!(source[0].metadata.chain.chain_id, "chain:custom");
    let trigger = recorded(&source[1], 7);
    let ctx = Context::reacting_to(&trigger, "policy.test", crate::envelope::Actor::system("bus"));
    assert_eq!(ctx.user_id, "u1");
    assert_eq!(ctx.correlation_id.as_deref(), Some("req-9"));
    let brief = Brief::default();
    let cmd = BriefCommand::Create(CreateBrief::new("b1", BriefType::Insight, "T", "S"));
    let stamped = stamp(&brief, &brief.decide(&cmd, &ctx).unwrap(), &ctx);
    let chain = &stamped[0].metadata.chain;
    assert_eq!(chain.root_source_id, source[0].event_id, "the same root as the source");
    assert_eq!(chain.parent_node_id, Some(trigger.event_id));
    assert_eq!(chain.chain_id, "chain:custom");
    assert_eq!(stamped[0].metadata.causation_id, Some(trigger.event_id));
}

#[test]
fn same_inputs_give_the_same_outputs_and_a_retry_the_same_ids() {
    let op = claimable();
    let ctx = worker_ctx("w1", 5);
    let a = stamp(&op, &op.decide(&claim(), &ctx).unwrap(), &ctx);
    let b = stamp(&op, &op.decide(&claim(), &ctx).unwrap(), &ctx);
    assert_eq!(a, b);
    // a retry reads the clock again, but keeps its command id: same event ids
    let retry = Context { now: at(9), ..ctx.clone() };
    let c = stamp(&op, &op.decide(&claim(), &retry).unwrap(), &retry);
    assert_eq!(
        a.iter().map(|e| e.event_id).collect::<Vec<_>>(),
        c.iter().map(|e| e.event_id).collect::<Vec<_>>()
    );
    // another command: other ids
    let other = worker_ctx("w1", 6);
    let d = stamp(&op, &op.decide(&claim(), &other).unwrap(), &other);
    assert_ne!(a[0].event_id, d[0].event_id);
    assert!(a.iter().all(|e| e.event_id.get_version_num() == 7));
}

#[test]
fn a_reactor_running_twice_decides_the_same_events() {
    let op = claimable();
    let source_ctx = system_ctx(5);
    let source = stamp(&op, &op.decide(&claim(), &source_ctx).unwrap(), &source_ctx);
    let trigger = recorded(&source[0], 3);
    let first = Context::reacting_to(&trigger, "reactor.a", crate::envelope::Actor::system("a"));
    let again = Context::reacting_to(&trigger, "reactor.a", crate::envelope::Actor::system("a"));
    assert_eq!(first, again);
    let other_reactor =
        Context::reacting_to(&trigger, "reactor.b", crate::envelope::Actor::system("b"));
    assert_ne!(first.command_id, other_reactor.command_id);
}

#[test]
fn every_event_of_a_multi_stream_decision_carries_the_chain() {
    let ctx = system_ctx(5);
    let mut stamper = ctx.stamper();
    let op = claimable();
    let brief = Brief::default();
    let w1 = stamper.write(
        &op,
        &crate::aggregate::StreamEvents::new("operation-op1", op.decide(&claim(), &ctx).unwrap()),
    );
    let cmd = BriefCommand::Create(CreateBrief::new("b1", BriefType::Insight, "T", "S"));
    let w2 = stamper.write(
        &brief,
        &crate::aggregate::StreamEvents::new("brief-b1", brief.decide(&cmd, &ctx).unwrap()),
    );
    let root = w1.events[0].event_id;
    let all: Vec<&NewEvent> = w1.events.iter().chain(&w2.events).collect();
    assert!(all.iter().all(|e| e.metadata.chain.root_source_id == root));
    assert!(all.iter().skip(1).all(|e| e.metadata.chain.parent_node_id == Some(root)));
    let ids: std::collections::BTreeSet<_> = all.iter().map(|e| e.event_id).collect();
    assert_eq!(ids.len(), all.len(), "indices run across streams");
}
