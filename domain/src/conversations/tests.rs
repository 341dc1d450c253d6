//! Conversation: transition table, idempotent appends, branches, threads, tracking, properties.

use proptest::prelude::*;

use super::*;
use crate::envelope::Actor;
use crate::testing::*;

fn open() -> ConversationCommand {
    ConversationCommand::Create {
        topic_id: "t1".into(),
        title: None,
        agent_id: Some("a1".into()),
        group_id: None,
    }
}

fn msg(id: &str, role: &str, parent: Option<&str>, request: Option<&str>) -> ConversationCommand {
    ConversationCommand::AppendMessage(ChatMessage {
        message_id: id.into(),
        role: role.into(),
        content: format!("text of {id}"),
        parent_id: parent.map(str::to_string),
        request_id: request.map(str::to_string),
        ..ChatMessage::default()
    })
}

fn attach(id: &str, background: bool, released: &[&str]) -> ConversationCommand {
    ConversationCommand::AttachOperation {
        operation_id: id.into(),
        kind: if background { OperationKind::Subagent } else { OperationKind::Conversation },
        background,
        released: released.iter().map(|s| (*s).to_string()).collect(),
    }
}

fn base() -> Conversation {
    run_all::<Conversation>(&[
        open(),
        msg("m1", "user", None, Some("r1")),
        msg("m2", "assistant", Some("m1"), None),
    ])
}

#[test]
fn transition_table() {
    use ConversationCommand as C;
    let none = Conversation::default();
    let live = base();
    let deleted = apply(base(), &C::DeleteMessage { message_id: "m2".into() }, &system_ctx(9)).0;
    let states = [("none", &none), ("live", &live), ("m2 deleted", &deleted)];
    let edit = C::EditMessage {
        message_id: "m2".into(),
        content: Some("new".into()),
        metadata: None,
        extra: Map::new(),
    };
    let empty_edit = C::EditMessage {
        message_id: "m2".into(),
        content: None,
        metadata: None,
        extra: Map::new(),
    };
    let thread = C::CreateThread {
        thread_id: "th1".into(),
        source_message_id: "m2".into(),
        kind: ThreadKind::Standalone,
        title: None,
    };
    let table: Vec<(&str, C, [Expect; 3])> = vec![
        (
            "create",
            open(),
            [ok(&["conversation.created"]), no("AlreadyExists"), no("AlreadyExists")],
        ),
        (
            "append",
            msg("m3", "user", Some("m2"), None),
            [
                no("NotFound"),
                ok(&["conversation.message_appended"]),
                ok(&["conversation.message_appended"]),
            ],
        ),
        (
            "append a known request",
            msg("m9", "user", None, Some("r1")),
            [no("NotFound"), ok(&[]), ok(&[])],
        ),
        (
            "append a known id",
            msg("m1", "user", None, None),
            [no("NotFound"), no("AlreadyExists"), no("AlreadyExists")],
        ),
        (
            "append to a missing parent",
            msg("m3", "user", Some("zz"), None),
            [no("NotFound"), no("NotFound"), no("NotFound")],
        ),
        (
            "append a rootless tool message",
            msg("m3", "tool", None, None),
            [no("NotFound"), no("Validation"), no("Validation")],
        ),
        (
            "edit",
            edit,
            [no("NotFound"), ok(&["conversation.message_edited"]), no("InvalidTransition")],
        ),
        ("empty edit", empty_edit, [no("NotFound"), no("Validation"), no("InvalidTransition")]),
        (
            "delete",
            C::DeleteMessage { message_id: "m2".into() },
            [no("NotFound"), ok(&["conversation.message_deleted"]), no("InvalidTransition")],
        ),
        (
            "switch branch",
            C::SwitchBranch { message_id: "m1".into(), active_branch_index: 0 },
            [
                no("NotFound"),
                ok(&["conversation.branch_switched"]),
                ok(&["conversation.branch_switched"]),
            ],
        ),
        (
            "thread",
            thread,
            [no("NotFound"), ok(&["conversation.thread_created"]), no("InvalidTransition")],
        ),
        (
            "attach",
            attach("op1", false, &[]),
            [
                no("NotFound"),
                ok(&["conversation.operation_attached"]),
                ok(&["conversation.operation_attached"]),
            ],
        ),
    ];
    let mut failures = Vec::new();
    for (name, command, row) in &table {
        for ((state_name, state), expect) in states.iter().zip(row) {
            if let Some(m) = check(*state, command, &system_ctx(10), expect) {
                failures.push(format!("{name} on {state_name}: {m}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn append_is_idempotent_on_the_request_id() {
    let c = base();
    let (c, events) = apply(c, &msg("m-retry", "user", None, Some("r1")), &system_ctx(10));
    assert!(events.is_empty());
    assert_eq!(c.message_for_request("r1"), Some("m1"));
    assert!(!c.messages.contains_key("m-retry"));
}

#[test]
fn branch_index_may_point_at_an_existing_branch_or_one_past_it() {
    let c = run_all::<Conversation>(&[
        open(),
        msg("u1", "user", None, None),
        msg("a1", "assistant", Some("u1"), None),
        msg("a2", "assistant", Some("u1"), None),
        msg("t1", "tool", Some("u1"), None),
    ]);
    assert_eq!(c.messages["u1"].non_tool_children, 2, "tool children are not branches");
    let switch =
        |i| ConversationCommand::SwitchBranch { message_id: "u1".into(), active_branch_index: i };
    assert!(c.decide(&switch(1), &system_ctx(9)).is_ok());
    assert!(c.decide(&switch(2), &system_ctx(9)).is_ok(), "optimistic: a new branch");
    assert!(matches!(refused(&c, &switch(3), &system_ctx(9)), DomainError::Validation { .. }));
}

#[test]
fn thread_messages_need_their_thread() {
    let c = base();
    let in_thread = |thread: &str| {
        ConversationCommand::AppendMessage(ChatMessage {
            message_id: "x".into(),
            role: "user".into(),
            thread_id: Some(thread.into()),
            parent_id: Some("m2".into()),
            ..ChatMessage::default()
        })
    };
    assert!(matches!(refused(&c, &in_thread("th1"), &system_ctx(9)), DomainError::NotFound { .. }));
    let thread = ConversationCommand::CreateThread {
        thread_id: "th1".into(),
        source_message_id: "m2".into(),
        kind: ThreadKind::Continuation,
        title: None,
    };
    let (c, _) = apply(c, &thread, &system_ctx(9));
    assert!(c.decide(&in_thread("th1"), &system_ctx(10)).is_ok());
}

#[test]
fn tracks_one_conversation_operation_and_three_background_sub_agents() {
    let c = base();
    let (c, _) = apply(c, &attach("op1", false, &[]), &system_ctx(10));
    let busy = refused(&c, &attach("op2", false, &[]), &system_ctx(11));
    assert_eq!(
        busy,
        DomainError::ConversationBusy { topic_id: "t1".into(), operation_id: "op1".into() }
    );
    let (c, _) = apply(c, &attach("op2", false, &["op1"]), &system_ctx(12));
    assert_eq!(c.active_operation.as_deref(), Some("op2"));
    let mut c = c;
    for i in 0..3 {
        c = apply(c, &attach(&format!("bg{i}"), true, &[]), &system_ctx(13 + i)).0;
    }
    let limit = refused(&c, &attach("bg3", true, &[]), &system_ctx(20));
    assert!(matches!(limit, DomainError::LimitExceeded { max: 3, .. }));
    let (c, _) = apply(c, &attach("bg3", true, &["bg0"]), &system_ctx(21));
    assert_eq!(c.background_operations.len(), 3);
}

fn command() -> impl Strategy<Value = ConversationCommand> {
    use ConversationCommand as C;
    let id = prop::sample::select(vec!["m1", "m2", "m3", "m4", "m5"]).prop_map(str::to_string);
    let role = prop::sample::select(vec!["user", "assistant", "tool"]).prop_map(str::to_string);
    let op = prop::sample::select(vec!["op1", "op2", "bg1", "bg2", "bg3", "bg4"])
        .prop_map(str::to_string);
    prop_oneof![
        Just(open()),
        (
            id.clone(),
            role,
            prop::option::of(id.clone()),
            prop::option::of(prop::sample::select(vec!["r1", "r2"]))
        )
            .prop_map(|(m, r, p, q)| msg(&m, &r, p.as_deref(), q)),
        (id.clone(), "[a-z]{0,4}").prop_map(|(message_id, c)| C::EditMessage {
            message_id,
            content: Some(c),
            metadata: None,
            extra: Map::new()
        }),
        id.clone().prop_map(|message_id| C::DeleteMessage { message_id }),
        (id.clone(), 0u32..3).prop_map(|(message_id, active_branch_index)| C::SwitchBranch {
            message_id,
            active_branch_index
        }),
        (prop::sample::select(vec!["th1", "th2"]), id.clone()).prop_map(|(t, m)| C::CreateThread {
            thread_id: t.into(),
            source_message_id: m,
            kind: ThreadKind::Isolation,
            title: None
        }),
        (op.clone(), any::<bool>(), prop::collection::vec(op, 0..2)).prop_map(|(o, bg, rel)| {
            attach(&o, bg, &rel.iter().map(String::as_str).collect::<Vec<_>>())
        }),
        (
            prop::sample::select(vec!["g1", "g2", "m5"]),
            any::<bool>(),
            prop::collection::vec(id.clone(), 0..4),
            prop::collection::vec(id.clone(), 0..2)
        )
            .prop_map(|(g, compress, members, pins)| {
                let kind = if compress {
                    MessageGroupKind::Compression
                } else {
                    MessageGroupKind::Parallel
                };
                let members: Vec<&str> = members.iter().map(String::as_str).collect();
                let pins: Vec<&str> = pins.iter().map(String::as_str).collect();
                group(g, kind, &members, &pins)
            }),
        prop::sample::select(vec!["g1", "g2"])
            .prop_map(|g| C::RemoveMessageGroup { group_id: g.into() }),
    ]
}

proptest! {
    #[test]
    fn random_command_sequences_keep_the_conversation_consistent(commands in prop::collection::vec(command(), 1..40)) {
        let times: Vec<(i64, Actor)> = commands.iter().map(|_| (1, Actor::user("u1"))).collect();
        let mut steps = vec![(open(), system_ctx(0))];
        steps.extend(commands.into_iter().zip(timeline(&times)));
        exercise::<Conversation>(&steps);
    }
}

fn group(
    id: &str,
    kind: MessageGroupKind,
    members: &[&str],
    pinned: &[&str],
) -> ConversationCommand {
    let ids = |l: &[&str]| l.iter().map(|s| (*s).to_string()).collect();
    ConversationCommand::CreateMessageGroup(NewMessageGroup {
        group_id: id.into(),
        kind: Some(kind),
        message_ids: ids(members),
        pinned_message_ids: ids(pinned),
        content: (kind == MessageGroupKind::Compression).then(|| "summary".into()),
        ..NewMessageGroup::default()
    })
}

#[test]
fn message_groups_take_each_message_once() {
    use MessageGroupKind::{Compression, Parallel};
    let ctx = system_ctx(5);
    let state = run_all::<Conversation>(&[
        open(),
        msg("m1", "user", None, None),
        msg("m2", "assistant", Some("m1"), None),
        msg("m3", "assistant", Some("m1"), None),
        msg("m4", "user", Some("m2"), None),
    ]);
    let (grouped, events) =
        apply(state.clone(), &group("g1", Compression, &["m1", "m2"], &["m2"]), &ctx);
    assert_eq!(types(&events), ["conversation.message_group_created"]);
    assert_eq!(grouped.messages["m2"].message_group.as_deref(), Some("g1"));
    let refusals = [
        (group("g2", Compression, &["m2"], &[]), "AlreadyExists"),
        (group("g1", Compression, &["m4"], &[]), "AlreadyExists"),
        (group("m4", Compression, &["m3"], &[]), "AlreadyExists"),
        (group("g2", Compression, &["nope"], &[]), "NotFound"),
        (group("g2", Compression, &["m3", "m3"], &[]), "Validation"),
        (group("g2", Compression, &["m3"], &["m4"]), "Validation"),
        (group("g2", Compression, &[], &[]), "Validation"),
        (group("g2", Parallel, &["m3"], &[]), "Validation"),
        (group("g2", Parallel, &["m3", "m4"], &[]), "Validation"),
        (group("g2", Parallel, &["m3", "m4"], &["m3"]), "Validation"),
        (group("", Compression, &["m3"], &[]), "Validation"),
    ];
    for (command, expected) in refusals {
        assert_eq!(variant(&refused(&grouped, &command, &ctx)), expected, "{command:?}");
    }
    // A message id may not take a group's id either.
    assert_eq!(variant(&refused(&grouped, &msg("g1", "user", None, None), &ctx)), "AlreadyExists");
    // Parallel siblings: the group remembers what they answer.
    let (_, events) = apply(state.clone(), &group("p1", Parallel, &["m2", "m3"], &[]), &ctx);
    match &events[..] {
        [ConversationEvent::MessageGroupCreated(e)] => {
            assert_eq!(e.parent_message_id.as_deref(), Some("m1"))
        }
        other => panic!("{other:?}"),
    }
    // Removing frees the members.
    let (freed, events) =
        apply(grouped, &ConversationCommand::RemoveMessageGroup { group_id: "g1".into() }, &ctx);
    assert_eq!(types(&events), ["conversation.message_group_removed"]);
    assert!(freed.messages["m2"].message_group.is_none());
    assert!(freed.check_invariants().is_ok());
    let again = ConversationCommand::RemoveMessageGroup { group_id: "g1".into() };
    assert_eq!(variant(&refused(&freed, &again, &ctx)), "NotFound");
    apply(freed, &group("g2", Compression, &["m2"], &[]), &ctx);
}
