//! Brief: transition table, default actions, resolve once, properties.

use proptest::prelude::*;

use super::*;
use crate::envelope::Actor;
use crate::testing::*;

fn create(t: BriefType) -> BriefCommand {
    BriefCommand::Create(CreateBrief::new("b1", t, "Title", "Summary"))
}

fn resolve(action: &str, comment: Option<&str>) -> BriefCommand {
    BriefCommand::Resolve { action: action.into(), comment: comment.map(str::to_string) }
}

#[test]
fn transition_table() {
    let none = Brief::default();
    let open = run_all::<Brief>(&[create(BriefType::Decision)]);
    let read = run_all::<Brief>(&[create(BriefType::Decision), BriefCommand::MarkRead]);
    let resolved = run_all::<Brief>(&[create(BriefType::Decision), resolve("approve", None)]);
    let states = [("none", &none), ("open", &open), ("read", &read), ("resolved", &resolved)];
    let table: Vec<(&str, BriefCommand, [Expect; 4])> = vec![
        (
            "create",
            create(BriefType::Decision),
            [ok(&["brief.created"]), no("AlreadyExists"), no("AlreadyExists"), no("AlreadyExists")],
        ),
        ("read", BriefCommand::MarkRead, [no("NotFound"), ok(&["brief.read"]), ok(&[]), ok(&[])]),
        (
            "approve",
            resolve("approve", None),
            [
                no("NotFound"),
                ok(&["brief.resolved"]),
                ok(&["brief.resolved"]),
                no("AlreadyResolved"),
            ],
        ),
        (
            "not an action",
            resolve("retry", None),
            [no("NotFound"), no("Validation"), no("Validation"), no("AlreadyResolved")],
        ),
        (
            "feedback without comment",
            resolve("feedback", None),
            [no("NotFound"), no("Validation"), no("Validation"), no("AlreadyResolved")],
        ),
        (
            "feedback",
            resolve("feedback", Some("more")),
            [
                no("NotFound"),
                ok(&["brief.resolved"]),
                ok(&["brief.resolved"]),
                no("AlreadyResolved"),
            ],
        ),
        (
            "bulk read",
            resolve("read", None),
            [
                no("NotFound"),
                ok(&["brief.resolved"]),
                ok(&["brief.resolved"]),
                no("AlreadyResolved"),
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
fn default_actions_per_type() {
    let keys = |t, code| default_actions(t, code).into_iter().map(|a| a.key).collect::<Vec<_>>();
    assert_eq!(keys(BriefType::Decision, None), ["approve", "feedback"]);
    assert_eq!(keys(BriefType::Error, None), ["retry", "feedback"]);
    assert_eq!(keys(BriefType::Error, Some("insufficient_budget")), ["upgrade", "feedback"]);
    assert_eq!(keys(BriefType::Insight, None), ["acknowledge"]);
    assert_eq!(keys(BriefType::Result, None), ["approve", "comment"]);
    let b = run_all::<Brief>(&[create(BriefType::Insight)]);
    assert_eq!(
        b.brief.as_ref().and_then(|b| b.actions.as_ref()).map(Vec::len),
        Some(1),
        "defaults are recorded"
    );
}

#[test]
fn a_result_brief_offers_approve_and_comment() {
    let b = run_all::<Brief>(&[create(BriefType::Result)]);
    assert!(b.decide(&resolve("approve", None), &system_ctx(5)).is_ok());
    assert!(matches!(
        refused(&b, &resolve("comment", None), &system_ctx(5)),
        DomainError::Validation { .. }
    ));
    assert!(b.decide(&resolve("comment", Some("looks good")), &system_ctx(5)).is_ok());
    assert!(matches!(
        refused(&b, &resolve("retry", None), &system_ctx(5)),
        DomainError::Validation { .. }
    ));
    // Actions given at creation are the only ones: approve is no hidden extra.
    let mut only_link = match create(BriefType::Result) {
        BriefCommand::Create(c) => c,
        other => panic!("{other:?}"),
    };
    only_link.actions = Some(vec![link_action("link", "Open", "/x")]);
    let b = run_all::<Brief>(&[BriefCommand::Create(only_link)]);
    assert!(matches!(
        refused(&b, &resolve("approve", None), &system_ctx(5)),
        DomainError::Validation { .. }
    ));
}

#[test]
fn link_urls_are_http_or_relative() {
    use crate::values::is_safe_link;
    for ok in
        ["https://example.com/a", "HTTP://x", "/settings/billing", "runs/1", "?q=1", "#top", "/a:b"]
    {
        assert!(is_safe_link(ok), "{ok}");
    }
    for bad in [
        "javascript:alert(1)",
        "JavaScript:x",
        "java\tscript:x",
        " javascript:x",
        "data:text/html,x",
        "vbscript:x",
        "x:y",
        "",
    ] {
        assert!(!is_safe_link(bad), "{bad}");
    }
    let mut hostile = match create(BriefType::Result) {
        BriefCommand::Create(c) => c,
        other => panic!("{other:?}"),
    };
    hostile.actions = Some(vec![link_action("open", "Open", "javascript:alert(1)")]);
    let e = refused(&Brief::default(), &BriefCommand::Create(hostile), &system_ctx(1));
    assert!(matches!(e, DomainError::Validation { .. }), "{e:?}");
}

#[test]
fn resolved_once_unlike_upstream() {
    let b = run_all::<Brief>(&[create(BriefType::Decision), resolve("approve", None)]);
    let e = refused(&b, &resolve("feedback", Some("changed my mind")), &system_ctx(9));
    assert_eq!(e, DomainError::AlreadyResolved { brief_id: "b1".into(), action: "approve".into() });
    assert!(b.read_at.is_some(), "resolving also reads");
}

fn command() -> impl Strategy<Value = BriefCommand> {
    let t = prop::sample::select(vec![
        BriefType::Decision,
        BriefType::Result,
        BriefType::Insight,
        BriefType::Error,
    ]);
    prop_oneof![
        t.prop_map(create),
        Just(BriefCommand::MarkRead),
        (
            prop::sample::select(vec!["approve", "retry", "feedback", "read", "acknowledge", "x"]),
            prop::option::of("[a-z]{0,4}")
        )
            .prop_map(|(a, c)| BriefCommand::Resolve { action: a.into(), comment: c }),
    ]
}

proptest! {
    #[test]
    fn random_command_sequences_keep_the_brief_consistent(commands in prop::collection::vec(command(), 1..20)) {
        let times: Vec<(i64, Actor)> = commands.iter().map(|_| (1, Actor::user("u1"))).collect();
        let steps: Vec<_> = commands.into_iter().zip(timeline(&times)).collect();
        let (brief, accepted) = exercise::<Brief>(&steps);
        let resolves = steps.len();
        prop_assert!(accepted <= resolves);
        prop_assert!(brief.resolved_at.is_none() || brief.resolved_action.is_some());
    }
}
