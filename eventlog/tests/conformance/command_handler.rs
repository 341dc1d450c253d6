//! The command handler on both backends: decide and append, bounded retries on conflict,
//! replayed commands, snapshots, and multi-stream decisions.

use std::sync::Arc;

use agentlog_domain::values::Usage;
use agentlog_domain::{
    aggregate::{Aggregate, StreamEvents},
    briefs::{Brief, BriefCommand, BriefType, CreateBrief},
    context::Context,
    envelope::Actor,
    error::DomainError,
    operations::{CreateOperation, Operation, OperationCommand, OperationKind, Phase, StepReport, lease_token},
    values::AgentRef,
};
use agentlog_eventlog::{
    AppendResult, CommandError, CommandHandler, EventStore, SNAPSHOT_EVERY, StoreOptions, fold_recorded, fold_stream,
    testing::TestLog,
};
use chrono::Utc;
use uuid::Uuid;

fn ctx() -> Context {
    Context::new(Utc::now(), Uuid::now_v7(), Actor::user("u1"), "u1")
}

fn agent() -> AgentRef {
    AgentRef { agent_id: "agent-1".into(), config_version: 1, model: Some("m".into()), provider: Some("p".into()) }
}

fn step(tokens: u64) -> OperationCommand {
    OperationCommand::RecordStep(StepReport {
        phase: Phase::Acting,
        tool_calls: Vec::new(),
        usage: Usage { input_tokens: Some(tokens), ..Usage::default() },
        budgets: Vec::new(),
    })
}

async fn decide_append_and_refuse(log: TestLog) {
    let h = CommandHandler::new(Arc::clone(&log.store));
    let create = BriefCommand::Create(CreateBrief::new("b1", BriefType::Insight, "Title", "Summary"));
    let out = h.execute_of::<Brief>("u1", "b1", &create, &ctx()).await.unwrap();
    assert_eq!(out.version, 1);
    assert!(out.last_position() > 0);
    // the domain's refusal comes back typed, and nothing is written
    let again = h.execute_of::<Brief>("u1", "b1", &create, &ctx()).await.unwrap_err();
    assert!(matches!(again, CommandError::Domain(DomainError::AlreadyExists { .. })), "{again}");
    let resolve = BriefCommand::Resolve { action: "acknowledge".into(), comment: None };
    h.execute_of::<Brief>("u1", "b1", &resolve, &ctx()).await.unwrap();
    let twice = h.execute_of::<Brief>("u1", "b1", &resolve, &ctx()).await.unwrap_err();
    assert!(matches!(twice, CommandError::Domain(DomainError::AlreadyResolved { .. })), "{twice}");
    let loaded = h.load_of::<Brief>("u1", "b1").await.unwrap();
    assert_eq!(loaded.version, 2);
    assert_eq!(log.store.stream_version("brief@u1/b1").await.unwrap(), 2);
}

async fn a_retried_command_is_applied_once(log: TestLog) {
    let h = CommandHandler::new(Arc::clone(&log.store));
    let c = ctx();
    let create = BriefCommand::Create(CreateBrief::new("b2", BriefType::Decision, "T", "S"));
    let first = h.execute_of::<Brief>("u1", "b2", &create, &c).await.unwrap();
    // the same command (same context, as a client retry after a lost answer) is not refused
    // and not applied twice
    let retry = h.execute_of::<Brief>("u1", "b2", &create, &c).await.unwrap();
    assert!(retry.replayed);
    assert_eq!(retry.version, first.version);
    // answered with where the first attempt's event landed
    assert_eq!(retry.last_position(), first.last_position());
    assert!(retry.appended.iter().all(|a| a.duplicate));
    assert_eq!(log.store.stream_version("brief@u1/b2").await.unwrap(), 1);
    // A command that decides nothing once applied (marking read a brief that is read), resent:
    // answered with where its event landed, not as a command that changed nothing.
    let read = ctx();
    let first = h.execute_of::<Brief>("u1", "b2", &BriefCommand::MarkRead, &read).await.unwrap();
    assert!(!first.replayed && first.last_position() > 0);
    let retry = h.execute_of::<Brief>("u1", "b2", &BriefCommand::MarkRead, &read).await.unwrap();
    assert!(retry.replayed);
    assert_eq!(retry.last_position(), first.last_position());
    // Another command marking it read decides nothing and appends nothing.
    let other = h.execute_of::<Brief>("u1", "b2", &BriefCommand::MarkRead, &ctx()).await.unwrap();
    assert!(!other.replayed && other.appended.is_empty());
    assert_eq!(log.store.stream_version("brief@u1/b2").await.unwrap(), 2);
}

/// Create briefs `a` and `b` in one decision under `c`.
async fn create_two(h: &CommandHandler, c: &Context, a: &str, b: &str) -> Result<Vec<AppendResult>, CommandError> {
    h.execute_multi(c, || async {
        let la = h.load_of::<Brief>("u1", a).await?;
        let lb = h.load_of::<Brief>("u1", b).await?;
        let mut stamper = c.stamper();
        let ea = la.state.decide(&BriefCommand::Create(CreateBrief::new(a, BriefType::Result, "A", "S")), c)?;
        let eb = lb.state.decide(&BriefCommand::Create(CreateBrief::new(b, BriefType::Result, "B", "S")), c)?;
        Ok(vec![
            (stamper.write(&la.state, &StreamEvents::new(la.stream_id.clone(), ea)), la.version),
            (stamper.write(&lb.state, &StreamEvents::new(lb.stream_id.clone(), eb)), lb.version),
        ])
    })
    .await
}

async fn a_retried_multi_stream_command_is_applied_once(log: TestLog) {
    let h = CommandHandler::new(Arc::clone(&log.store));
    let c = ctx();
    let first = create_two(&h, &c, "r1", "r2").await.unwrap();
    let head = log.store.head_position().await.unwrap();
    // Deciding again would be refused (the briefs exist): the retry is answered from the log.
    let retry = create_two(&h, &c, "r1", "r2").await.unwrap();
    assert_eq!(log.store.head_position().await.unwrap(), head, "nothing written twice");
    assert_eq!(retry.len(), 2);
    for (a, b) in first.iter().zip(&retry) {
        assert_eq!((&a.stream_id, &a.positions, a.stream_version), (&b.stream_id, &b.positions, b.stream_version));
        assert!(!a.duplicate && b.duplicate);
    }
    // another command (fresh context) deciding the same is refused by the domain
    let other = create_two(&h, &ctx(), "r1", "r2").await.unwrap_err();
    assert!(matches!(other, CommandError::Domain(DomainError::AlreadyExists { .. })), "{other}");
    // a command that wrote more than one lookup chunk (64 ids) is found whole
    let big = ctx();
    let ids: Vec<String> = (0..70).map(|i| format!("many-{i}")).collect();
    let decide = || async {
        let mut stamper = big.stamper();
        let mut writes = Vec::new();
        for id in &ids {
            let l = h.load_of::<Brief>("u1", id).await?;
            let e = l
                .state
                .decide(&BriefCommand::Create(CreateBrief::new(id.as_str(), BriefType::Insight, "T", "S")), &big)?;
            writes.push((stamper.write(&l.state, &StreamEvents::new(l.stream_id.clone(), e)), l.version));
        }
        Ok(writes)
    };
    let written = h.execute_multi(&big, decide).await.unwrap();
    let replayed = h.execute_multi(&big, decide).await.unwrap();
    assert_eq!(written.len(), 70);
    assert_eq!(
        written.iter().map(|r| r.positions.clone()).collect::<Vec<_>>(),
        replayed.iter().map(|r| r.positions.clone()).collect::<Vec<_>>()
    );
}

async fn concurrent_commands_retry_until_they_land(log: TestLog) {
    let h = CommandHandler::new(Arc::clone(&log.store)).with_attempts(64);
    let mut create = CreateOperation::new("op1", OperationKind::Task, agent());
    create.max_steps = None;
    h.execute_of::<Operation>("u1", "op1", &OperationCommand::Create(create), &ctx()).await.unwrap();
    let claim = ctx();
    let token = lease_token(&claim);
    h.execute_of::<Operation>("u1", "op1", &OperationCommand::Claim { worker_id: "w".into(), lease_secs: 600 }, &claim)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (h, token) = (h.clone(), token.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                let report = ctx().with_lease_token(Some(token.clone()));
                h.execute_of::<Operation>("u1", "op1", &step(10), &report).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let loaded = h.load_of::<Operation>("u1", "op1").await.unwrap();
    let events = log.store.read_stream("operation@u1/op1", 1, 10_000).await.unwrap();
    let (folded, version) = fold_recorded::<Operation>(&events, None).unwrap();
    assert_eq!(version, loaded.version);
    assert_eq!(serde_json::to_value(&folded).unwrap(), serde_json::to_value(&loaded.state).unwrap());
    assert_eq!(events.len() as i64, loaded.version);
    assert!(events.windows(2).all(|w| w[1].stream_version == w[0].stream_version + 1));
}

async fn snapshots_shortcut_long_streams_and_match_a_full_fold(log: TestLog) {
    let h = CommandHandler::new(Arc::clone(&log.store));
    let (token, _) = claimed(&h, "long", &ctx()).await;
    for i in 0..(SNAPSHOT_EVERY * 2 + 5) {
        let report = ctx().with_lease_token(Some(token.clone()));
        h.execute_of::<Operation>("u1", "long", &step(i as u64), &report).await.unwrap();
    }
    let snap = log.raw.scalar_i64("SELECT version FROM snapshots WHERE stream_id = 'operation@u1/long'").await.unwrap();
    assert!(snap >= SNAPSHOT_EVERY * 2, "snapshot at {snap}");
    let loaded = h.load_of::<Operation>("u1", "long").await.unwrap();
    let events = log.store.read_stream("operation@u1/long", 1, 10_000).await.unwrap();
    let (folded, version) = fold_recorded::<Operation>(&events, None).unwrap();
    assert_eq!(version, loaded.version);
    assert_eq!(serde_json::to_value(&folded).unwrap(), serde_json::to_value(&loaded.state).unwrap());
    // a corrupt snapshot is ignored, not trusted (by a handler that has no state in memory)
    log.raw
        .execute("UPDATE snapshots SET state = '{\"garbage\": true' WHERE stream_id = 'operation@u1/long'")
        .await
        .unwrap();
    let reloaded = CommandHandler::new(Arc::clone(&log.store)).load_of::<Operation>("u1", "long").await.unwrap();
    assert_eq!(serde_json::to_value(&reloaded.state).unwrap(), serde_json::to_value(&folded).unwrap());
}

async fn a_multi_stream_decision_is_atomic(log: TestLog) {
    let h = CommandHandler::new(Arc::clone(&log.store));
    let c = ctx();
    let results = h
        .execute_multi(&c, || async {
            let a = h.load_of::<Brief>("u1", "m1").await?;
            let b = h.load_of::<Brief>("u1", "m2").await?;
            let mut stamper = c.stamper();
            let ea = a.state.decide(&BriefCommand::Create(CreateBrief::new("m1", BriefType::Result, "A", "S")), &c)?;
            let eb = b.state.decide(&BriefCommand::Create(CreateBrief::new("m2", BriefType::Result, "B", "S")), &c)?;
            Ok(vec![
                (
                    stamper.write(&a.state, &agentlog_domain::aggregate::StreamEvents::new(a.stream_id.clone(), ea)),
                    a.version,
                ),
                (
                    stamper.write(&b.state, &agentlog_domain::aggregate::StreamEvents::new(b.stream_id.clone(), eb)),
                    b.version,
                ),
            ])
        })
        .await
        .unwrap();
    assert_eq!(results.len(), 2);
    let store: &dyn EventStore = &*log.store;
    let a = store.read_stream("brief@u1/m1", 1, 10).await.unwrap();
    let b = store.read_stream("brief@u1/m2", 1, 10).await.unwrap();
    // one decision, one chain: the second stream's event points at the first
    assert_eq!(b[0].metadata.chain.root_source_id, a[0].event_id);
    assert_eq!(b[0].metadata.chain.parent_node_id, Some(a[0].event_id));
}

/// Create and claim operation `id` through `h`; the lease token and where the claim landed.
async fn claimed(h: &CommandHandler, id: &str, claim: &Context) -> (String, i64) {
    h.execute_of::<Operation>(
        "u1",
        id,
        &OperationCommand::Create(CreateOperation::new(id, OperationKind::Task, agent())),
        &ctx(),
    )
    .await
    .unwrap();
    let out = h
        .execute_of::<Operation>("u1", id, &OperationCommand::Claim { worker_id: "w".into(), lease_secs: 600 }, claim)
        .await
        .unwrap();
    (lease_token(claim), out.last_position())
}

async fn a_state_in_memory_follows_another_writer(log: TestLog) {
    // Two handlers on one log: two server instances, each with its own states in memory.
    let a = CommandHandler::new(Arc::clone(&log.store));
    let b = CommandHandler::new(Arc::clone(&log.store));
    let (token, _) = claimed(&a, "shared", &ctx()).await;
    let report = |i: u64| (step(i), ctx().with_lease_token(Some(token.clone())));
    for i in 0..3 {
        let (cmd, c) = report(i);
        a.execute_of::<Operation>("u1", "shared", &cmd, &c).await.unwrap();
    }
    for i in 3..8 {
        let (cmd, c) = report(i);
        b.execute_of::<Operation>("u1", "shared", &cmd, &c).await.unwrap();
    }
    // a's state in memory is three steps behind; its next command folds b's five steps first.
    let before = log.store.stream_version("operation@u1/shared").await.unwrap();
    let (cmd, c) = report(8);
    let out = a.execute_of::<Operation>("u1", "shared", &cmd, &c).await.unwrap();
    assert_eq!(out.version, before + 1);
    assert_eq!(out.state.step_count, 9);
    let events = log.store.read_stream("operation@u1/shared", 1, 100).await.unwrap();
    let (folded, _) = fold_recorded::<Operation>(&events, None).unwrap();
    assert_eq!(serde_json::to_value(&folded).unwrap(), serde_json::to_value(&out.state).unwrap());
    assert_eq!(
        serde_json::to_value(&folded).unwrap(),
        serde_json::to_value(&b.load_of::<Operation>("u1", "shared").await.unwrap().state).unwrap()
    );
}

async fn a_retry_long_after_is_answered_from_the_log(log: TestLog) {
    let h = CommandHandler::new(Arc::clone(&log.store));
    let claim = ctx();
    let (token, claimed_at) = claimed(&h, "late", &claim).await;
    for i in 0..(SNAPSHOT_EVERY as u64 + 10) {
        h.execute_of::<Operation>("u1", "late", &step(i), &ctx().with_lease_token(Some(token.clone()))).await.unwrap();
    }
    let head = log.store.stream_version("operation@u1/late").await.unwrap();
    // The claim resent long after (past the snapshot and the state in memory): deciding it
    // again would be refused (the run is claimed), but it was applied, so it is answered as
    // applied and nothing is written.
    let retry = h
        .execute_of::<Operation>(
            "u1",
            "late",
            &OperationCommand::Claim { worker_id: "w".into(), lease_secs: 600 },
            &claim,
        )
        .await
        .unwrap();
    assert!(retry.replayed);
    assert_eq!(retry.last_position(), claimed_at);
    assert_eq!(log.store.stream_version("operation@u1/late").await.unwrap(), head);
}

/// A command decided on a state the caller loaded: it lands without reading the stream again;
/// when another writer moved the stream after the load, the expected version refuses the
/// append and the retry decides on the stream as it is; a resent command is answered from the
/// log though the loaded state already holds its events.
async fn a_loaded_state_is_decided_on_and_a_stale_one_retried(log: TestLog) {
    let a = CommandHandler::new(Arc::clone(&log.store));
    let b = CommandHandler::new(Arc::clone(&log.store));
    let (token, _) = claimed(&a, "loaded", &ctx()).await;
    let report = || ctx().with_lease_token(Some(token.clone()));
    let stream = "operation@u1/loaded";

    let loaded = a.load_of::<Operation>("u1", "loaded").await.unwrap();
    let v = loaded.version;
    let out = a.execute_loaded(loaded, &step(1), &report()).await.unwrap();
    assert_eq!((out.version, out.state.step_count), (v + 1, 1));

    // Loaded, then another instance reports two steps: the decision on the stale state is
    // refused by the log and decided again on the stream as it is.
    let stale = a.load_of::<Operation>("u1", "loaded").await.unwrap();
    assert_eq!(stale.version, v + 1);
    for i in 2..4 {
        b.execute_of::<Operation>("u1", "loaded", &step(i), &report()).await.unwrap();
    }
    let out = a.execute_loaded(stale, &step(4), &report()).await.unwrap();
    assert_eq!((out.version, out.state.step_count), (v + 4, 4));
    let events = log.store.read_stream(stream, 1, 100).await.unwrap();
    assert_eq!(events.len() as i64, v + 4);
    let (folded, _) = fold_recorded::<Operation>(&events, None).unwrap();
    assert_eq!(serde_json::to_value(&folded).unwrap(), serde_json::to_value(&out.state).unwrap());

    // The same command again (a resend after a lost answer), on a state that holds its event.
    let once = report();
    let first = a.execute_of::<Operation>("u1", "loaded", &step(5), &once).await.unwrap();
    let loaded = a.load_of::<Operation>("u1", "loaded").await.unwrap();
    let again = a.execute_loaded(loaded, &step(5), &once).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.last_position(), first.last_position());
    assert_eq!(log.store.stream_version(stream).await.unwrap(), v + 5, "nothing written twice");
}

/// A command on a cached state is decided on and appended with no read of the log when the
/// state is current; otherwise it is handed back (`None`) having written nothing — another
/// handler moved the stream, the command was already applied (a resend deciding the same
/// events, or different ones under the same ids), the domain refused it — and the stream as
/// stored answers it. The counters say which.
async fn a_cached_state_is_decided_on_or_handed_back(log: TestLog) {
    let a = CommandHandler::new(Arc::clone(&log.store));
    let b = CommandHandler::new(Arc::clone(&log.store));
    let (token, _) = claimed(&a, "cached", &ctx()).await;
    let report = || ctx().with_lease_token(Some(token.clone()));
    let stream = "operation@u1/cached";
    let version = || async { log.store.stream_version(stream).await.unwrap() };
    assert!(b.cached_of::<Operation>("u1", "cached").is_none(), "b never saw the stream");

    let cached = a.cached_of::<Operation>("u1", "cached").expect("the claim's state, cached");
    let v = cached.version;
    let out = a.execute_cached(cached, &step(1), &report()).await.unwrap().expect("current: appended");
    assert_eq!((out.version, out.state.step_count, out.replayed), (v + 1, 1, false));
    assert_eq!(a.cached_of::<Operation>("u1", "cached").map(|l| l.version), Some(v + 1), "the new state cached");
    assert_eq!((a.counts().on_cache, a.counts().reloaded), (1, 0));

    // Another handler reports a step: a's state trails, and the append says so.
    b.execute_of::<Operation>("u1", "cached", &step(2), &report()).await.unwrap();
    let stale = a.cached_of::<Operation>("u1", "cached").unwrap();
    assert_eq!(stale.version, v + 1);
    let conflicts = a.counts().conflicts;
    assert!(a.execute_cached(stale, &step(3), &report()).await.unwrap().is_none(), "stale: handed back");
    assert_eq!(version().await, v + 2, "nothing written");
    assert_eq!((a.counts().reloaded, a.counts().conflicts), (1, conflicts + 1));

    // A resend after a lost answer, on the state before its first attempt (the same events)
    // and on the state after it (another step under the same ids): handed back both times.
    let once = report();
    let before = a.load_of::<Operation>("u1", "cached").await.unwrap();
    let first = a.execute_cached(before.clone(), &step(4), &once).await.unwrap().expect("appended");
    assert!(a.execute_cached(before, &step(4), &once).await.unwrap().is_none(), "the same events: handed back");
    let after = a.cached_of::<Operation>("u1", "cached").unwrap();
    assert!(a.execute_cached(after, &step(4), &once).await.unwrap().is_none(), "other events, same ids: handed back");
    assert_eq!(version().await, v + 3, "nothing written twice");
    let loaded = a.load_of::<Operation>("u1", "cached").await.unwrap();
    let again = a.execute_loaded(loaded, &step(4), &once).await.unwrap();
    assert!(again.replayed, "the stream as stored answers the resend");
    assert_eq!(again.last_position(), first.last_position());

    // Refused on a cached state: not final (the state may trail), handed back.
    let wrong = ctx().with_lease_token(Some("not-the-lease-token".into()));
    let cached = a.cached_of::<Operation>("u1", "cached").unwrap();
    assert!(a.execute_cached(cached, &step(5), &wrong).await.unwrap().is_none());
    let loaded = a.load_of::<Operation>("u1", "cached").await.unwrap();
    let refused = a.execute_loaded(loaded, &step(5), &wrong).await.unwrap_err();
    assert!(matches!(refused, CommandError::Domain(DomainError::LeaseToken { .. })), "{refused}");
    assert_eq!(version().await, v + 3, "nothing written");
    let counts = a.counts();
    assert_eq!((counts.on_cache, counts.reloaded), (2, 4), "{counts:?}");
    let events = log.store.read_stream(stream, 1, 100).await.unwrap();
    let (folded, _) = fold_recorded::<Operation>(&events, None).unwrap();
    assert_eq!(folded.step_count, 3);
}

/// `state_at` is the stream folded up to a version, whatever the handler holds: at the version
/// it holds, below it (another handler, a snapshot ahead), above it (events another handler
/// wrote), and past the stream's end.
async fn a_state_at_a_version_is_the_fold_up_to_it(log: TestLog) {
    let h = CommandHandler::new(Arc::clone(&log.store));
    let (token, _) = claimed(&h, "at", &ctx()).await;
    for i in 0..(SNAPSHOT_EVERY + 7) {
        let report = ctx().with_lease_token(Some(token.clone()));
        h.execute_of::<Operation>("u1", "at", &step(i as u64), &report).await.unwrap();
    }
    let stream = "operation@u1/at";
    let events = log.store.read_stream(stream, 1, 10_000).await.unwrap();
    let head = events.len() as i64;
    let fold_to = |v: i64| {
        let prefix: Vec<_> = events.iter().filter(|e| e.stream_version <= v).cloned().collect();
        serde_json::to_value(fold_recorded::<Operation>(&prefix, None).unwrap().0).unwrap()
    };
    let json = |o: Operation| serde_json::to_value(o).unwrap();
    for v in [head, 1, 2, SNAPSHOT_EVERY - 1, SNAPSHOT_EVERY, SNAPSHOT_EVERY + 1, head - 1] {
        assert_eq!(json(h.state_at::<Operation>(stream, v).await.unwrap()), fold_to(v), "the writer's handler at {v}");
        let fresh = CommandHandler::new(Arc::clone(&log.store));
        assert_eq!(json(fresh.state_at::<Operation>(stream, v).await.unwrap()), fold_to(v), "a new handler at {v}");
    }
    // Another handler writes on: this one's state in memory is behind, and still a valid start.
    let other = CommandHandler::new(Arc::clone(&log.store));
    let report = ctx().with_lease_token(Some(token.clone()));
    other.execute_of::<Operation>("u1", "at", &step(999), &report).await.unwrap();
    let events = log.store.read_stream(stream, 1, 10_000).await.unwrap();
    let newest = events.len() as i64;
    assert_eq!(newest, head + 1);
    let all = serde_json::to_value(fold_recorded::<Operation>(&events, None).unwrap().0).unwrap();
    assert_eq!(json(h.state_at::<Operation>(stream, newest).await.unwrap()), all);
    assert_eq!(json(h.state_at::<Operation>(stream, newest + 5).await.unwrap()), all, "past the end: the whole stream");
    assert_eq!(json(h.state_at::<Operation>(stream, head).await.unwrap()), fold_to(head), "back below what it holds");
}

/// `fold_stream` reads a stream a page at a time and folds it to a position: the same state as
/// folding all its events at once, across page boundaries, and nothing before its first event.
async fn a_stream_folded_in_pages_is_the_fold_of_all_its_events(log: TestLog) {
    let h = CommandHandler::new(Arc::clone(&log.store));
    let (token, _) = claimed(&h, "paged", &ctx()).await;
    for i in 0..1_050 {
        let report = ctx().with_lease_token(Some(token.clone()));
        h.execute_of::<Operation>("u1", "paged", &step(i), &report).await.unwrap();
    }
    let stream = "operation@u1/paged";
    let events = log.store.read_stream(stream, 1, 10_000).await.unwrap();
    assert!(events.len() > 1_000, "{} events: more than one page", events.len());
    let json = |s: &Operation| serde_json::to_value(s).unwrap();
    for at in [None, Some(events[999].position), Some(events[1_000].position), Some(events[3].position)] {
        let (paged, version) = fold_stream::<Operation>(log.store.as_ref(), stream, at).await.unwrap();
        let (whole, whole_version) = fold_recorded::<Operation>(&events, at).unwrap();
        assert_eq!(version, whole_version, "at {at:?}");
        assert_eq!(json(&paged), json(&whole), "at {at:?}");
    }
    let (_, version) =
        fold_stream::<Operation>(log.store.as_ref(), stream, Some(events[0].position - 1)).await.unwrap();
    assert_eq!(version, 0, "before its first event");
    let (_, version) = fold_stream::<Operation>(log.store.as_ref(), "operation@u1/none", None).await.unwrap();
    assert_eq!(version, 0, "a stream that does not exist");
}

crate::on_both_backends!(StoreOptions::default() =>
    a_state_in_memory_follows_another_writer as command_state_in_memory_follows_another_writer,
    a_retry_long_after_is_answered_from_the_log as command_retry_long_after_is_answered_from_the_log,
    decide_append_and_refuse as command_decides_appends_and_refuses,
    a_retried_command_is_applied_once as command_retry_is_applied_once,
    concurrent_commands_retry_until_they_land as command_conflicts_are_retried,
    snapshots_shortcut_long_streams_and_match_a_full_fold as command_snapshots_match_full_fold,
    a_multi_stream_decision_is_atomic as command_multi_stream_is_atomic,
    a_retried_multi_stream_command_is_applied_once as command_multi_stream_retry_is_applied_once,
    a_state_at_a_version_is_the_fold_up_to_it as command_state_at_a_version_is_the_fold_up_to_it,
    a_loaded_state_is_decided_on_and_a_stale_one_retried as command_loaded_state_decided_on_and_stale_retried,
    a_cached_state_is_decided_on_or_handed_back as command_cached_state_decided_on_or_handed_back,
    a_stream_folded_in_pages_is_the_fold_of_all_its_events as command_stream_folded_in_pages
);
