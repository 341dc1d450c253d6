//! Cross-aggregate rules: conversation busy, background sub-agent limit, child registration,
//! cancel cascade three levels deep, task run start, brief approval.

use super::brief_resolution::resolve_brief;
use super::cancel_cascade::{cancel_cascade, stamp_cascade};
use super::operation_start::{child_result_for_parent, start_operation};
use super::task_run::start_task_run;
use crate::aggregate::{Aggregate, DomainEvent, StreamEvents};
use crate::briefs::{Brief, BriefCommand, BriefType, CreateBrief};
use crate::conversations::{Conversation, ConversationCommand};
use crate::error::DomainError;
use crate::operations::{
    CreateOperation, Operation, OperationCommand, OperationEvent, OperationKind, OperationStatus,
};
use crate::tasks::{CreateTask, RunTask, RunTrigger, Task, TaskCommand, TaskStatus};
use crate::testing::*;
use crate::values::AgentRef;

fn agent() -> AgentRef {
    AgentRef { agent_id: "a1".into(), config_version: 1, model: None, provider: None }
}

fn conversation() -> Conversation {
    run_all::<Conversation>(&[ConversationCommand::Create {
        topic_id: "t1".into(),
        title: None,
        agent_id: None,
        group_id: None,
    }])
}

fn conv_op(id: &str) -> CreateOperation {
    let mut c = CreateOperation::new(id, OperationKind::Conversation, agent());
    c.topic_id = Some("t1".into());
    c
}

fn sub_agent(id: &str, parent: &str, background: bool) -> CreateOperation {
    let mut c = CreateOperation::new(id, OperationKind::Subagent, agent());
    c.topic_id = Some("t1".into());
    c.parent_operation_id = Some(parent.into());
    c.background = background;
    c
}

/// Apply a multi-stream part to a state.
fn fold<A: Aggregate>(state: A, part: &StreamEvents<A::Event>) -> A {
    part.events.iter().fold(state, |s, e| s.evolve(e))
}

fn running(id: &str, parent: Option<&str>) -> Operation {
    let mut c = CreateOperation::new(id, OperationKind::Subagent, agent());
    c.parent_operation_id = parent.map(str::to_string);
    if parent.is_none() {
        c.kind = OperationKind::Conversation;
    }
    let op = apply(Operation::default(), &OperationCommand::Create(c), &system_ctx(0)).0;
    apply(op, &OperationCommand::Claim { worker_id: "w".into(), lease_secs: 600 }, &system_ctx(1)).0
}

#[test]
fn a_second_unfinished_conversation_operation_is_refused_as_busy() {
    let conv = conversation();
    let started = start_operation(
        &conv_op("op1"),
        &Operation::default(),
        Some(&conv),
        &[],
        None,
        &system_ctx(1),
    )
    .unwrap();
    let conv = fold(conv, started.conversation.as_ref().unwrap());
    let op1 = fold(Operation::default(), &started.operation);
    let e = start_operation(
        &conv_op("op2"),
        &Operation::default(),
        Some(&conv),
        std::slice::from_ref(&op1),
        None,
        &system_ctx(2),
    )
    .unwrap_err();
    assert_eq!(
        e,
        DomainError::ConversationBusy { topic_id: "t1".into(), operation_id: "op1".into() }
    );
    assert_eq!(e.code().as_str(), "CONVERSATION_BUSY");
    // an operation left out of `tracked` counts as unfinished
    assert!(
        start_operation(
            &conv_op("op2"),
            &Operation::default(),
            Some(&conv),
            &[],
            None,
            &system_ctx(2)
        )
        .is_err()
    );
    // once op1 has finished, the next start releases it
    let op1 = apply(op1, &OperationCommand::Cancel { reason: None }, &system_ctx(3)).0;
    let started = start_operation(
        &conv_op("op2"),
        &Operation::default(),
        Some(&conv),
        &[op1],
        None,
        &system_ctx(4),
    )
    .unwrap();
    let conv = fold(conv, started.conversation.as_ref().unwrap());
    assert_eq!(conv.active_operation.as_deref(), Some("op2"));
}

#[test]
fn at_most_three_background_sub_agents_per_conversation() {
    let mut conv = conversation();
    let mut parent = running("p", None);
    let mut children = Vec::new();
    for i in 0..3 {
        let create = sub_agent(&format!("bg{i}"), "p", true);
        let s = start_operation(
            &create,
            &Operation::default(),
            Some(&conv),
            &children,
            Some(&parent),
            &system_ctx(10 + i),
        )
        .unwrap();
        conv = fold(conv, s.conversation.as_ref().unwrap());
        parent = fold(parent, s.parent.as_ref().unwrap());
        children.push(fold(Operation::default(), &s.operation));
    }
    assert_eq!(parent.children.len(), 3);
    let e = start_operation(
        &sub_agent("bg3", "p", true),
        &Operation::default(),
        Some(&conv),
        &children,
        Some(&parent),
        &system_ctx(20),
    )
    .unwrap_err();
    assert!(matches!(e, DomainError::LimitExceeded { max: 3, .. }), "{e}");
    // foreground sub-agents do not count
    let fg = start_operation(
        &sub_agent("fg", "p", false),
        &Operation::default(),
        Some(&conv),
        &children,
        Some(&parent),
        &system_ctx(21),
    )
    .unwrap();
    assert!(fg.conversation.is_none());
    // one finishes: room for one more
    children[0] =
        apply(children[0].clone(), &OperationCommand::Cancel { reason: None }, &system_ctx(22)).0;
    let s = start_operation(
        &sub_agent("bg3", "p", true),
        &Operation::default(),
        Some(&conv),
        &children,
        Some(&parent),
        &system_ctx(23),
    )
    .unwrap();
    let conv = fold(conv, s.conversation.as_ref().unwrap());
    assert!(
        !conv.background_operations.contains("bg0") && conv.background_operations.contains("bg3")
    );
}

#[test]
fn a_sub_agent_needs_a_live_parent_and_a_known_conversation() {
    let conv = conversation();
    let e = start_operation(
        &sub_agent("c", "p", false),
        &Operation::default(),
        Some(&conv),
        &[],
        None,
        &system_ctx(1),
    )
    .unwrap_err();
    assert!(matches!(e, DomainError::NotFound { aggregate: "parent operation", .. }));
    let done = apply(
        running("p", None),
        &OperationCommand::Complete { result: None, handoff: None, brief_judgement: None },
        &system_ctx(2),
    )
    .0;
    let e = start_operation(
        &sub_agent("c", "p", false),
        &Operation::default(),
        Some(&conv),
        &[],
        Some(&done),
        &system_ctx(3),
    )
    .unwrap_err();
    assert!(matches!(e, DomainError::AlreadyFinished { .. }));
    let e = start_operation(&conv_op("x"), &Operation::default(), None, &[], None, &system_ctx(3))
        .unwrap_err();
    assert!(matches!(e, DomainError::NotFound { aggregate: "conversation", .. }));
}

#[test]
fn a_start_is_one_chain_across_streams() {
    let conv = conversation();
    let parent = running("p", None);
    let create = sub_agent("c", "p", true);
    let s = start_operation(
        &create,
        &Operation::default(),
        Some(&conv),
        &[],
        Some(&parent),
        &system_ctx(5),
    )
    .unwrap();
    let writes = s.stamp(&Operation::default(), Some(&conv), Some(&parent), &system_ctx(5));
    assert_eq!(
        writes.iter().map(|w| w.stream_id.as_str()).collect::<Vec<_>>(),
        ["operation@u1/c", "conversation@u1/t1", "operation@u1/p"]
    );
    let root = writes[0].events[0].event_id;
    for w in &writes {
        for e in &w.events {
            assert_eq!(e.metadata.chain.root_source_id, root);
        }
    }
    assert_eq!(writes[1].events[0].metadata.chain.parent_node_id, Some(root));
    assert_eq!(writes[2].events[0].metadata.chain.parent_node_id, Some(root));
    assert_eq!(writes[1].events[0].metadata.scope_key, "topic:t1");
}

#[test]
fn cancel_cascades_to_every_unfinished_descendant_three_levels_deep() {
    // root → (a, b); a → (a1 [done], a2); a1 → a1x (background, still running)
    let mut root = running("root", None);
    let mut a = running("a", Some("root"));
    let b = running("b", Some("root"));
    let mut a1 = running("a1", Some("a"));
    let a2 = running("a2", Some("a"));
    let a1x = running("a1x", Some("a1"));
    let register = |parent: Operation, child: &str| {
        apply(
            parent,
            &OperationCommand::RegisterChild {
                child_operation_id: child.into(),
                background: false,
            },
            &system_ctx(2),
        )
        .0
    };
    root = register(register(root, "a"), "b");
    a = register(register(a, "a1"), "a2");
    a1 = register(a1, "a1x");
    let a1 = apply(
        a1,
        &OperationCommand::Complete { result: None, handoff: None, brief_judgement: None },
        &system_ctx(3),
    )
    .0;
    let all = [a.clone(), b.clone(), a1.clone(), a2.clone(), a1x.clone()];
    let parts = cancel_cascade(&root, &all, Some("user stop".into()), &system_ctx(10)).unwrap();
    let streams: Vec<&str> = parts.iter().map(|p| p.stream_id.as_str()).collect();
    assert_eq!(
        streams,
        [
            "operation@u1/root",
            "operation@u1/a",
            "operation@u1/b",
            "operation@u1/a2",
            "operation@u1/a1x"
        ],
        "a1 is finished and untouched"
    );
    for part in &parts[1..] {
        let OperationEvent::Cancelled(c) = &part.events[0] else { panic!() };
        assert_eq!(c.cascade_from.as_deref(), Some("root"));
    }
    // applying the cascade leaves nothing unfinished
    let finished = [&a, &b, &a2, &a1x]
        .iter()
        .zip(&parts[1..])
        .map(|(op, part)| fold((*op).clone(), part))
        .all(|op| op.status == OperationStatus::Cancelled);
    assert!(finished);
    // one chain: the root's cancel is the source of every other
    let states: Vec<&Operation> = vec![&root, &a, &b, &a2, &a1x];
    let writes = stamp_cascade(&parts, &states, &system_ctx(10));
    let source = writes[0].events[0].event_id;
    assert!(
        writes.iter().skip(1).all(|w| w.events[0].metadata.chain.parent_node_id == Some(source))
    );
    // a missing descendant is refused, not silently left running
    let e = cancel_cascade(&root, std::slice::from_ref(&a), None, &system_ctx(10)).unwrap_err();
    assert!(matches!(e, DomainError::NotFound { .. }));
    // cancelling a finished root ends nothing twice
    let done_root = apply(root, &OperationCommand::Cancel { reason: None }, &system_ctx(11)).0;
    assert!(matches!(
        cancel_cascade(&done_root, &all, None, &system_ctx(12)).unwrap_err(),
        DomainError::AlreadyFinished { .. }
    ));
}

#[test]
fn a_finished_child_reports_to_its_parent_capped() {
    let child = running("c", Some("p"));
    let long = "x".repeat(40_000);
    let (child, events) = apply(
        child,
        &OperationCommand::Complete { result: Some(long), handoff: None, brief_judgement: None },
        &system_ctx(5),
    );
    let (parent_id, cmd) = child_result_for_parent(&child, &events[0]).unwrap();
    assert_eq!(parent_id, "p");
    let parent = apply(
        running("p", None),
        &OperationCommand::RegisterChild { child_operation_id: "c".into(), background: false },
        &system_ctx(2),
    )
    .0;
    let parent =
        apply(parent, &OperationCommand::AwaitAsync { keys: vec!["c".into()] }, &system_ctx(3)).0;
    let (parent, events) = apply(parent, &cmd, &system_ctx(6));
    let OperationEvent::AsyncResultReceived(r) = &events[0] else { panic!() };
    assert_eq!(
        (r.result.as_ref().map(String::len), r.truncated, r.resumes),
        (Some(32_000), true, true)
    );
    assert_eq!(parent.status, OperationStatus::Running);
    assert!(child_result_for_parent(&running("top", None), &events[0]).is_none());
}

fn task() -> Task {
    run_all::<Task>(&[TaskCommand::Create(CreateTask::new("t1", "T-1", "do it"))])
}

fn run_cmd() -> RunTask {
    RunTask {
        topic_id: "tp1".into(),
        operation_id: "op1".into(),
        trigger: RunTrigger::Manual,
        continue_topic: false,
        agent: AgentRef {
            agent_id: "inbox".into(),
            config_version: 2,
            model: Some("m".into()),
            provider: None,
        },
        extra_prompt: None,
    }
}

#[test]
fn a_task_run_creates_its_topic_and_its_operation() {
    let t = task();
    let start = start_task_run(
        &t,
        "task@u1/t1",
        &Operation::default(),
        &run_cmd(),
        Some(50),
        &system_ctx(1),
    )
    .unwrap();
    let op = fold(Operation::default(), &start.operation);
    let spec = op.spec.as_ref().unwrap();
    assert_eq!(
        (spec.kind, spec.task_id.as_deref(), spec.topic_id.as_deref()),
        (OperationKind::Task, Some("t1"), Some("tp1"))
    );
    assert_eq!(
        (spec.agent.config_version, spec.max_steps, spec.trigger.as_deref()),
        (2, Some(50), Some("task:manual"))
    );
    let t = fold(t, &start.task);
    assert_eq!(t.status, TaskStatus::Running);
    let writes = start.stamp(&task(), &Operation::default(), &system_ctx(1));
    assert_eq!(writes[1].events[0].metadata.scope_key, "topic:tp1");
    assert_eq!(writes[0].events[0].metadata.scope_key, "task:t1");
    let e = start_task_run(
        &t,
        "task@u1/t1",
        &Operation::default(),
        &RunTask { topic_id: "tp2".into(), ..run_cmd() },
        None,
        &system_ctx(2),
    )
    .unwrap_err();
    assert!(matches!(e, DomainError::TopicRunning { .. }));
    assert_eq!(e.code().as_str(), "CONFLICT");
}

fn brief(t: BriefType, task: Option<&str>) -> Brief {
    let mut c = CreateBrief::new("b1", t, "Done", "Summary");
    c.task_id = task.map(str::to_string);
    run_all::<Brief>(&[BriefCommand::Create(c)])
}

#[test]
fn approving_a_result_brief_completes_its_task_unless_scheduled() {
    let paused = run_all::<Task>(&[
        TaskCommand::Create(CreateTask::new("t1", "T-1", "do it")),
        TaskCommand::ChangeStatus { to: TaskStatus::Paused, error: None },
    ]);
    let r = resolve_brief(
        &brief(BriefType::Result, Some("t1")),
        "brief@u1/b1",
        Some((&paused, "task-t1")),
        "approve",
        None,
        &system_ctx(5),
    )
    .unwrap();
    let t = fold(paused.clone(), r.task.as_ref().unwrap());
    assert_eq!(t.status, TaskStatus::Completed);
    let writes = r.stamp(&brief(BriefType::Result, Some("t1")), Some(&paused), &system_ctx(5));
    assert_eq!(writes.len(), 2);

    // a decision brief never completes its task; other actions neither
    let r = resolve_brief(
        &brief(BriefType::Decision, Some("t1")),
        "brief@u1/b1",
        Some((&paused, "task-t1")),
        "approve",
        None,
        &system_ctx(5),
    )
    .unwrap();
    assert!(r.task.is_none());
    let r = resolve_brief(
        &brief(BriefType::Result, Some("t1")),
        "brief@u1/b1",
        Some((&paused, "task-t1")),
        "read",
        None,
        &system_ctx(5),
    )
    .unwrap();
    assert!(r.task.is_none());
    // a scheduled task is parked for its next tick and stays so
    let mut scheduled = CreateTask::new("t1", "T-1", "do it");
    scheduled.automation_mode = Some(crate::tasks::AutomationMode::Schedule);
    scheduled.schedule.pattern = Some("* * * * *".into());
    let scheduled = run_all::<Task>(&[
        TaskCommand::Create(scheduled),
        TaskCommand::ChangeStatus { to: TaskStatus::Scheduled, error: None },
    ]);
    let r = resolve_brief(
        &brief(BriefType::Result, Some("t1")),
        "brief@u1/b1",
        Some((&scheduled, "task-t1")),
        "approve",
        None,
        &system_ctx(5),
    )
    .unwrap();
    assert!(r.task.is_none());
    // a brief without a task, or whose task is gone, resolves alone
    assert!(
        resolve_brief(
            &brief(BriefType::Result, None),
            "brief@u1/b1",
            None,
            "approve",
            None,
            &system_ctx(5)
        )
        .unwrap()
        .task
        .is_none()
    );
    assert!(
        resolve_brief(
            &brief(BriefType::Result, Some("t1")),
            "brief@u1/b1",
            None,
            "approve",
            None,
            &system_ctx(5)
        )
        .unwrap()
        .task
        .is_none()
    );
    // resolved once
    let resolved = fold(
        brief(BriefType::Result, Some("t1")),
        &resolve_brief(
            &brief(BriefType::Result, Some("t1")),
            "brief@u1/b1",
            None,
            "approve",
            None,
            &system_ctx(5),
        )
        .unwrap()
        .brief,
    );
    assert!(matches!(
        resolve_brief(
            &resolved,
            "brief@u1/b1",
            Some((&paused, "task-t1")),
            "approve",
            None,
            &system_ctx(6)
        )
        .unwrap_err(),
        DomainError::AlreadyResolved { .. }
    ));
}

#[test]
fn approving_while_a_run_is_going_cancels_the_run_first() {
    let t = task();
    let start =
        start_task_run(&t, "task@u1/t1", &Operation::default(), &run_cmd(), None, &system_ctx(1))
            .unwrap();
    let running = fold(t, &start.task);
    let r = resolve_brief(
        &brief(BriefType::Result, Some("t1")),
        "brief@u1/b1",
        Some((&running, "task-t1")),
        "approve",
        None,
        &system_ctx(5),
    )
    .unwrap();
    let part = r.task.as_ref().unwrap();
    assert_eq!(
        part.events.iter().map(DomainEvent::event_type).collect::<Vec<_>>(),
        ["task.topic_canceled", "task.status_changed"]
    );
    let done = fold(running, part);
    assert!(done.check_invariants().is_ok());
}

#[test]
fn a_sub_agent_below_the_depth_limit_is_refused_with_limit() {
    use super::operation_start::start_operation_within;
    // A chain top → c1 → c2: each start records its depth from its parent.
    let mut parent = running("top", None);
    for (n, id) in ["c1", "c2"].iter().enumerate() {
        let mut child = sub_agent(id, parent.id(), false);
        child.topic_id = None;
        child.depth = 99; // a caller's value is not taken
        let s = start_operation_within(
            2,
            &child,
            &Operation::default(),
            None,
            &[],
            Some(&parent),
            &system_ctx(2),
        )
        .unwrap();
        let created = fold(Operation::default(), &s.operation);
        assert_eq!(created.spec.as_ref().map(|s| s.depth), Some(n as u32 + 1));
        let claimed = OperationCommand::Claim { worker_id: "w".into(), lease_secs: 600 };
        parent = apply(created, &claimed, &system_ctx(3)).0;
    }
    let mut too_deep = sub_agent("c3", "c2", false);
    too_deep.topic_id = None;
    let e = start_operation_within(
        2,
        &too_deep,
        &Operation::default(),
        None,
        &[],
        Some(&parent),
        &system_ctx(4),
    );
    assert!(
        matches!(e, Err(DomainError::LimitExceeded { limit: "subagentDepth", max: 2 })),
        "{e:?}"
    );
}
