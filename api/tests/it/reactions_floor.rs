//! A log whose reactions are in it already — `agentlog-replay generate`'s: its workload decided
//! every reaction itself, and it sets the reactions floor at the head — is served without its
//! reactions being made a second time: the log followers start at the floor. (Without it a
//! server on a generated 1M log appended ~100k events: 23k notifications again, the signal
//! chains again, 17k refusals of briefs and results that existed.)

use std::collections::HashMap;

use agentlog_eventlog::{StoreOptions, open_store, set_reactions_floor};
use agentlog_workload::{Workload, WorkloadConfig};

use crate::support::{self, Db, Server};

/// The log followers (`api/src/reactors`, each a `Reactor`), by the actor id their events carry.
/// The clock passes (scheduler, lease reaper, card timeouts, retention) act on state and time,
/// and are not held back by the floor.
const FOLLOWERS: [&str; 7] =
    ["signal-bus", "signal-sources", "child-results", "orchestration", "task-cascade", "task-lifecycle", "topic-stop"];

async fn a_generated_log_is_served_without_reacting_again(db: Db) {
    // What `generate` does: the workload into an empty log, then the floor at its head.
    let floor = {
        let store = open_store(&db.url(), StoreOptions::default()).await.expect("open the log");
        let config = WorkloadConfig { seed: 7, users: 6, min_events: 4_000, ..WorkloadConfig::default() };
        let workload = Workload::generate(&config).expect("workload");
        let head = workload.append_to(&*store).await.expect("append the workload");
        set_reactions_floor(&store.database(), head).await.expect("set the floor");
        store.close().await;
        head
    };
    let s = Server::start(db).await;
    // A fact after the floor that the signal bus reacts to. Its reaction (the brief) follows
    // every reaction to the facts before it, since a follower reacts in log order: once it is
    // there, a follower that had started below the floor has made its old reactions too.
    let alice = s.user_token("alice").await;
    crate::reactors::fail_a_run(&s, &alice, "after-the-floor").await;
    let briefs = "{ briefs(filter: {type: \"error\"}) { edges { node { operationId } } } }";
    s.eventually(&alice, briefs, |d| d["briefs"]["edges"].as_array().is_some_and(|e| !e.is_empty())).await;
    let db = s.stop();

    let events = support::read_log(&db).await;
    let position: HashMap<uuid::Uuid, i64> = events.iter().map(|e| (e.event_id, e.position)).collect();
    let mut reacted_again: HashMap<&str, usize> = HashMap::new();
    let mut after_floor: HashMap<&str, usize> = HashMap::new();
    for e in events.iter().filter(|e| e.position > floor) {
        let Some(follower) = FOLLOWERS.iter().find(|f| **f == e.metadata.actor.id) else { continue };
        *after_floor.entry(follower).or_default() += 1;
        let cause = e.metadata.causation_id.and_then(|c| position.get(&c));
        if cause.is_some_and(|p| *p <= floor) {
            *reacted_again.entry(follower).or_default() += 1;
        }
    }
    assert!(after_floor.get("signal-bus").is_some_and(|n| *n > 0), "the signal bus reacted to the new fact");
    assert!(reacted_again.is_empty(), "followers reacted again to facts below the floor {floor}: {reacted_again:?}");
    let refusals = events.iter().filter(|e| e.position > floor && e.event_type == "reactor.command_refused").count();
    assert_eq!(refusals, 0, "a reaction made again is refused (a brief, a result that exists)");
}

both!(a_generated_log_is_served_without_reacting_again as a_generated_log_is_served_without_reacting_again);
