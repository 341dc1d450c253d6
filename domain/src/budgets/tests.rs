//! Budget: set, change, remove; validation and ownership; the rules at the limit.

use super::*;
use crate::testing::{apply, refused, system_ctx};
use crate::values::Usage;

fn set(spec: BudgetSpec) -> BudgetCommand {
    BudgetCommand::Set { spec, scope_owner: None }
}

fn spec() -> BudgetSpec {
    BudgetSpec::user("b1", "u1", Some(1_000), Some(500))
}

#[test]
fn set_change_and_remove_are_events_and_a_repeat_is_none() {
    let (b, events) = apply(Budget::default(), &set(spec()), &system_ctx(1));
    assert_eq!(events.len(), 1);
    assert!(b.exists());
    assert_eq!(b.decide(&set(spec()), &system_ctx(2)), Ok(Vec::new()));
    let changed = BudgetSpec { limit_cost_micros: Some(2_000), ..spec() };
    let (b, events) = apply(b, &set(changed.clone()), &system_ctx(3));
    assert_eq!(events.len(), 1);
    assert_eq!(b.spec, Some(changed));
    let (b, events) = apply(b, &BudgetCommand::Remove, &system_ctx(4));
    assert_eq!(events.len(), 1);
    assert!(!b.exists());
    assert_eq!(b.user_id, "u1");
    assert!(matches!(
        refused(&b, &BudgetCommand::Remove, &system_ctx(5)),
        DomainError::NotFound { .. }
    ));
}

#[test]
fn bad_terms_are_refused() {
    let cases: Vec<(BudgetSpec, &str)> = vec![
        (BudgetSpec { limit_cost_micros: None, limit_tokens: None, ..spec() }, "limitCostMicros"),
        (BudgetSpec { limit_cost_micros: Some(0), ..spec() }, "limitCostMicros"),
        (BudgetSpec { limit_tokens: Some(0), ..spec() }, "limitTokens"),
        (BudgetSpec { warn_percent: 0, ..spec() }, "warnPercent"),
        (BudgetSpec { warn_percent: 101, ..spec() }, "warnPercent"),
        (BudgetSpec { scope_id: None, ..spec() }, "scopeId"),
        (BudgetSpec { scope: BudgetScopeKind::Global, ..spec() }, "scopeId"),
        (BudgetSpec { budget_id: "a b".into(), ..spec() }, "budgetId"),
        (BudgetSpec { time_zone: String::new(), ..spec() }, "timeZone"),
        // a user budgets only their own runs
        (BudgetSpec { scope_id: Some("u2".into()), ..spec() }, "scopeId"),
    ];
    for (bad, field) in cases {
        match Budget::default().decide(&set(bad.clone()), &system_ctx(1)) {
            Err(DomainError::Validation { field: f, .. }) => assert_eq!(f, field, "{bad:?}"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
}

#[test]
fn an_agent_task_or_group_budget_needs_the_owner_s_scope() {
    for scope in [BudgetScopeKind::Agent, BudgetScopeKind::Task, BudgetScopeKind::Group] {
        let s = BudgetSpec { scope, scope_id: Some("x".into()), ..spec() };
        for owner in [None, Some("u2".to_string())] {
            let cmd = BudgetCommand::Set { spec: s.clone(), scope_owner: owner };
            assert!(matches!(
                refused(&Budget::default(), &cmd, &system_ctx(1)),
                DomainError::NotFound { .. }
            ));
        }
        let cmd = BudgetCommand::Set { spec: s, scope_owner: Some("u1".into()) };
        apply(Budget::default(), &cmd, &system_ctx(1));
    }
}

#[test]
fn another_owner_s_budget_id_is_taken() {
    let (b, _) = apply(Budget::default(), &set(spec()), &system_ctx(1));
    let mut ctx = system_ctx(2);
    ctx.user_id = "u2".into();
    let other = BudgetSpec { scope_id: Some("u2".into()), ..spec() };
    assert!(matches!(b.decide(&set(other), &ctx), Err(DomainError::AlreadyExists { .. })));
}

#[test]
fn the_limit_and_the_warning_are_reached_at_their_thresholds() {
    let s = BudgetSpec { warn_percent: 80, ..spec() };
    let spent = |cost_micros, tokens| Spend { cost_micros, tokens };
    assert!(!s.warned(spent(799, 399)));
    assert!(s.warned(spent(800, 0)));
    assert!(s.warned(spent(0, 400)));
    assert!(!s.reached(spent(999, 499)));
    assert!(s.reached(spent(1_000, 0)));
    assert!(s.reached(spent(0, 500)));
}

#[test]
fn a_run_starts_below_the_limit_and_is_refused_at_it() {
    let standing =
        |cost| BudgetStanding { spec: spec(), spent: Spend { cost_micros: cost, tokens: 0 } };
    assert_eq!(refuse_start(&[standing(999)]), Ok(()));
    let e = refuse_start(&[standing(999), standing(1_000)]).unwrap_err();
    assert_eq!(e.code(), crate::error::ErrorCode::Limit);
}

#[test]
fn only_an_interrupt_budget_ends_a_run_whose_step_reaches_it() {
    let usage = Usage { cost_micros: Some(100), ..Usage::default() };
    let refuse = BudgetStanding { spec: spec(), spent: Spend { cost_micros: 950, tokens: 0 } };
    assert_eq!(interrupting(std::slice::from_ref(&refuse), usage), None);
    let interrupt = BudgetStanding {
        spec: BudgetSpec { action: BudgetAction::Interrupt, ..spec() },
        spent: Spend { cost_micros: 850, tokens: 0 },
    };
    assert_eq!(interrupting(std::slice::from_ref(&interrupt), usage), None);
    let at_limit = BudgetStanding { spent: Spend { cost_micros: 900, tokens: 0 }, ..interrupt };
    assert_eq!(interrupting(std::slice::from_ref(&at_limit), usage), Some(&at_limit));
}

#[test]
fn a_warning_has_the_same_id_for_a_budget_and_period() {
    let spent = Spend { cost_micros: 800, tokens: 0 };
    let day = Some(crate::testing::at(0));
    let w = warning("u1", &spec(), day, spent);
    assert_eq!(
        w.brief_id,
        warning("u1", &spec(), day, Spend { cost_micros: 900, tokens: 0 }).brief_id
    );
    // Budget ids are per owner: another user's budget of that id warns apart.
    assert_ne!(warning("u2", &spec(), day, spent).brief_id, w.brief_id);
    assert!(w.brief_id.starts_with('~'));
    assert_ne!(
        warning("u1", &spec(), Some(crate::testing::at(86_400)), spent).brief_id,
        w.brief_id
    );
    assert!(w.summary.contains("800 of 1000"), "{w:?}");
}
