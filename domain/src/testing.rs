//! Test support: a fixed clock, contexts, and given/when/then helpers that also check that
//! every decided event applies and the invariants hold.

use chrono::{DateTime, Duration, TimeZone, Utc};
use uuid::Uuid;

use crate::aggregate::{Aggregate, DomainEvent};
use crate::context::Context;
use crate::envelope::Actor;
use crate::error::DomainError;
use crate::ids::derived_id;

/// The tests' epoch: 2026-11-29T10:00:00Z.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).single().expect("valid fixed date")
}

/// `t0` plus `secs` seconds.
pub fn at(secs: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(secs)
}

/// A deterministic command id for step `n` of a test.
pub fn command_id(n: i64) -> Uuid {
    derived_id("test-command", &n.to_string(), at(n).timestamp_millis())
}

/// A source context for the system actor at `t0 + secs`.
pub fn system_ctx(secs: i64) -> Context {
    Context::new(at(secs), command_id(secs), Actor::system("test"), "u1")
}

/// A source context for worker `worker` at `t0 + secs`.
pub fn worker_ctx(worker: &str, secs: i64) -> Context {
    Context::new(at(secs), command_id(secs), Actor::worker(worker), "u1")
}

/// Decide and apply; panics with the refusal if refused. Checks invariants after each event.
pub fn apply<A: Aggregate>(state: A, command: &A::Command, ctx: &Context) -> (A, Vec<A::Event>) {
    match state.decide(command, ctx) {
        Ok(events) => {
            let mut next = state;
            for event in &events {
                next = next.evolve(event);
                if let Err(broken) = next.check_invariants() {
                    panic!(
                        "invariant broken after {}: {broken}\nstate: {next:?}",
                        event.event_type()
                    );
                }
            }
            (next, events)
        }
        Err(e) => panic!("{command:?} refused: {e}"),
    }
}

/// Run commands in order (context `ctx(i + 1)`), returning the final state.
pub fn run_all<A: Aggregate>(commands: &[A::Command]) -> A {
    let mut state = A::default();
    for (i, command) in commands.iter().enumerate() {
        state = apply(state, command, &system_ctx(i as i64 + 1)).0;
    }
    state
}

/// The refusal of a command that must be refused.
pub fn refused<A: Aggregate>(state: &A, command: &A::Command, ctx: &Context) -> DomainError {
    match state.decide(command, ctx) {
        Ok(events) => panic!("{command:?} should be refused, decided {events:?}"),
        Err(e) => e,
    }
}

/// The event types of a decision.
pub fn types<E: DomainEvent>(events: &[E]) -> Vec<&'static str> {
    events.iter().map(DomainEvent::event_type).collect()
}

/// The variant name of an error (`AlreadyFinished`, …).
pub fn variant(e: &DomainError) -> String {
    let debug = format!("{e:?}");
    debug.split([' ', '{', '(']).next().unwrap_or_default().to_string()
}

/// An expected outcome in a transition table: the event types, or the error variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// These events.
    Events(Vec<&'static str>),
    /// This refusal (the error variant's name).
    Refused(String),
}

/// Decide and compare with an expectation; returns a mismatch description.
pub fn check<A: Aggregate>(
    state: &A,
    command: &A::Command,
    ctx: &Context,
    expect: &Expect,
) -> Option<String> {
    let got = match state.decide(command, ctx) {
        Ok(events) => {
            let mut next = state.clone();
            for event in &events {
                next = next.evolve(event);
            }
            if let Err(broken) = next.check_invariants() {
                return Some(format!("invariant broken: {broken}"));
            }
            Expect::Events(types(&events))
        }
        Err(e) => {
            // Every refusal must read well.
            assert!(!e.to_string().is_empty());
            Expect::Refused(variant(&e))
        }
    };
    (got != *expect).then(|| format!("expected {expect:?}, got {got:?}"))
}

/// Shorthand: an expectation of these event types.
pub fn ok(types: &[&'static str]) -> Expect {
    Expect::Events(types.to_vec())
}

/// Shorthand: an expectation of this refusal.
pub fn no(name: &str) -> Expect {
    Expect::Refused(name.to_string())
}

/// The property every aggregate must have, for one random command sequence: deciding never
/// panics and is deterministic; every decided event applies, round-trips through its JSON
/// payload, and is stamped with a chain; the invariants hold after every step. Returns the
/// final state and how many commands were accepted.
pub fn exercise<A: Aggregate + PartialEq>(steps: &[(A::Command, Context)]) -> (A, usize) {
    let mut state = A::default();
    let mut accepted = 0;
    for (command, ctx) in steps {
        let decided = state.decide(command, ctx);
        assert_eq!(
            format!("{decided:?}"),
            format!("{:?}", state.decide(command, ctx)),
            "decide is deterministic"
        );
        let Ok(events) = decided else { continue };
        accepted += 1;
        let stamped = crate::stamp::stamp(&state, &events, ctx);
        assert_eq!(stamped.len(), events.len());
        for (i, (event, new)) in events.iter().zip(&stamped).enumerate() {
            let payload = event.to_payload();
            assert!(payload.is_object(), "{} payload is not an object", event.event_type());
            let back = A::Event::decode(event.event_type(), event.schema_version(), &payload)
                .unwrap_or_else(|e| {
                    panic!("{} does not decode: {e}\n{payload}", event.event_type())
                });
            assert_eq!(&back, event, "round trip of {}", event.event_type());
            assert_eq!(new.payload, payload);
            if i > 0 && event.idempotency_key().is_none() {
                assert!(
                    new.metadata.chain.parent_node_id.is_some(),
                    "later events point at the source node"
                );
            }
            state = state.evolve(event);
            if let Err(broken) = state.check_invariants() {
                panic!("invariant broken after {}: {broken}\nstate: {state:?}", event.event_type());
            }
        }
        let json = serde_json::to_value(&state)
            .unwrap_or_else(|e| panic!("state does not serialise: {e}"));
        let snapshot: A =
            serde_json::from_value(json).unwrap_or_else(|e| panic!("snapshot does not load: {e}"));
        assert!(snapshot == state, "snapshot round trip");
    }
    (state, accepted)
}

/// Contexts for a random command sequence: time moves forward by the given steps (seconds).
pub fn timeline(steps: &[(i64, Actor)]) -> Vec<Context> {
    let mut now = 0;
    steps
        .iter()
        .enumerate()
        .map(|(i, (dt, actor))| {
            now += dt;
            Context::new(at(now), command_id(i as i64 * 100_000 + now), actor.clone(), "u1")
        })
        .collect()
}
