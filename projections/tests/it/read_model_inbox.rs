//! The briefs, notifications and cron-jobs read models on both backends: what the log says is
//! what the queries return, owner scoping holds, and a rebuild changes nothing.

use crate::support;

use agentlog_domain::{
    briefs::{Brief, BriefCommand, BriefPriority, BriefType, CreateBrief},
    cron_jobs::{CreateCronJob, CronCommand, CronJob, CronJobPatch},
    notifications::{CreateNotification, NotificationCommand as N, Notifications},
};
use agentlog_eventlog::testing::TestLog;
use agentlog_projections::{briefs, cron_jobs, notifications, page::PageRequest};
use chrono::{FixedOffset, TimeZone};
use support::Harness;

const U: &str = "user-1";

async fn briefs_fold_and_query(log: TestLog) {
    let mut h = Harness::new(log);
    for (id, ty, task) in
        [("b1", BriefType::Decision, Some("t1")), ("b2", BriefType::Result, None), ("b3", BriefType::Error, None)]
    {
        let mut b = CreateBrief::new(id, ty, format!("title {id}"), "summary");
        b.task_id = task.map(str::to_string);
        if ty == BriefType::Error {
            b.priority = BriefPriority::Urgent;
        }
        h.exec::<Brief>(U, id, BriefCommand::Create(b)).await;
    }
    h.exec::<Brief>("user-2", "b9", BriefCommand::Create(CreateBrief::new("b9", BriefType::Insight, "x", "y"))).await;
    h.exec::<Brief>(U, "b1", BriefCommand::MarkRead).await;
    h.exec::<Brief>(U, "b2", BriefCommand::Resolve { action: "approve".into(), comment: Some("ok".into()) }).await;
    h.sync().await;

    let db = &h.db;
    let b1 = briefs::brief(db, U, "b1").await.unwrap().expect("b1");
    assert!(b1.read_at.is_some() && b1.resolved_at.is_none());
    assert_eq!(b1.task_id.as_deref(), Some("t1"));
    assert!(!b1.actions.is_empty(), "default actions are filled in");
    let b2 = briefs::brief(db, U, "b2").await.unwrap().expect("b2");
    assert_eq!(b2.resolved_action.as_deref(), Some("approve"));
    assert_eq!(b2.resolved_comment.as_deref(), Some("ok"));
    assert!(b2.read_at.is_some(), "resolving reads it");
    assert!(briefs::brief(db, "user-2", "b1").await.unwrap().is_none());

    let all = briefs::briefs(db, Some(U), &briefs::BriefFilter::default(), &PageRequest::default()).await.unwrap();
    assert_eq!(all.items.len(), 3);
    let open = briefs::BriefFilter { resolved: Some(false), ..Default::default() };
    let open = briefs::briefs(db, Some(U), &open, &PageRequest::default()).await.unwrap();
    assert_eq!(sorted(open.items.iter().map(|b| b.brief_id.as_str())), ["b1", "b3"]);
    let urgent = briefs::BriefFilter { priority: Some(BriefPriority::Urgent), ..Default::default() };
    let urgent = briefs::briefs(db, None, &urgent, &PageRequest::default()).await.unwrap();
    assert_eq!(urgent.items.iter().map(|b| b.brief_id.as_str()).collect::<Vec<_>>(), ["b3"]);
    let by_task = briefs::BriefFilter { task_id: Some("t1".into()), ..Default::default() };
    assert_eq!(briefs::briefs(db, None, &by_task, &PageRequest::default()).await.unwrap().items.len(), 1);
    // paging walks every brief exactly once
    let mut seen = Vec::new();
    let mut request = PageRequest::first(1);
    loop {
        let page = briefs::briefs(db, None, &briefs::BriefFilter::default(), &request).await.unwrap();
        seen.extend(page.items.iter().map(|b| b.brief_id.clone()));
        if !page.has_next_page {
            break;
        }
        request = PageRequest::first(1).after(page.end_cursor);
    }
    assert_eq!(sorted(seen.iter().map(String::as_str)), ["b1", "b2", "b3", "b9"]);

    let before = briefs::briefs(db, None, &briefs::BriefFilter::default(), &PageRequest::default()).await.unwrap();
    h.rebuild().await;
    let after = briefs::briefs(&h.db, None, &briefs::BriefFilter::default(), &PageRequest::default()).await.unwrap();
    assert_eq!(before, after);
}

fn notification(user: &str, category: &str, dedupe: Option<&str>) -> N {
    N::Create(CreateNotification {
        user_id: user.into(),
        category: category.into(),
        notification_type: "brief_error".into(),
        title: "t".into(),
        body: "b".into(),
        dedupe_key: dedupe.map(str::to_string),
        action_url: None,
        metadata: None,
    })
}

async fn notifications_fold_and_query(log: TestLog) {
    let mut h = Harness::new(log);
    h.exec::<Notifications>(U, U, notification(U, "brief", Some("k1"))).await;
    h.exec::<Notifications>(U, U, notification(U, "hitl", None)).await;
    h.exec::<Notifications>(U, U, notification(U, "budget", Some("k2"))).await;
    h.exec::<Notifications>("user-2", "user-2", notification("user-2", "brief", None)).await;
    h.sync().await;
    let db = &h.db;
    let inbox =
        notifications::inbox(db, Some(U), &notifications::InboxFilter::default(), &PageRequest::default()).await;
    let inbox = inbox.unwrap();
    assert_eq!(inbox.items.len(), 3);
    assert_eq!(notifications::unread_count(db, Some(U)).await.unwrap(), 3);
    assert_eq!(notifications::unread_count(db, None).await.unwrap(), 4);
    // newest first
    assert_eq!(inbox.items[0].category, "budget");
    let hitl = inbox.items[1].notification_id.clone();
    let budget = inbox.items[0].notification_id.clone();

    h.exec::<Notifications>(U, U, N::MarkRead { ids: vec![hitl.clone(), budget.clone()] }).await;
    h.exec::<Notifications>(U, U, N::MarkUnread { ids: vec![budget.clone()] }).await;
    h.exec::<Notifications>(U, U, N::Archive { ids: vec![hitl.clone()] }).await;
    h.sync().await;
    let db = &h.db;
    assert_eq!(notifications::unread_count(db, Some(U)).await.unwrap(), 2);
    let n = notifications::notification(db, Some(U), &hitl).await.unwrap().expect("hitl");
    assert!(n.is_read && n.is_archived);
    let unread = notifications::InboxFilter { read: Some(false), ..Default::default() };
    assert_eq!(notifications::inbox(db, Some(U), &unread, &PageRequest::default()).await.unwrap().items.len(), 2);
    let by_category = notifications::InboxFilter { category: Some("brief".into()), ..Default::default() };
    assert_eq!(notifications::inbox(db, Some(U), &by_category, &PageRequest::default()).await.unwrap().items.len(), 1);

    // everything so far read, then archived; a later one stays unread
    h.exec::<Notifications>(U, U, N::MarkAllRead).await;
    h.exec::<Notifications>(U, U, N::ArchiveAll).await;
    h.exec::<Notifications>(U, U, notification(U, "brief", Some("k3"))).await;
    h.sync().await;
    let db = &h.db;
    assert_eq!(notifications::unread_count(db, Some(U)).await.unwrap(), 1);
    assert_eq!(notifications::unread_count(db, Some("user-2")).await.unwrap(), 1, "another user's inbox is untouched");
    // updated_at is when the log recorded the event (wall clock), not the command's clock
    let cutoff = chrono::Utc::now() + chrono::Duration::days(1);
    let archived = notifications::archived_before(db, Some(U), cutoff, 100).await.unwrap();
    assert_eq!(archived.len(), 3);
    assert!(archived.iter().all(|n| n.is_read && n.is_archived));

    let all = |db| async move {
        let mut rows = notifications::archived_before(&db, None, h_far(), 100).await.unwrap();
        rows.extend(
            notifications::inbox(&db, None, &notifications::InboxFilter::default(), &PageRequest::default())
                .await
                .unwrap()
                .items,
        );
        rows
    };
    let before = all(h.db.clone()).await;
    h.rebuild().await;
    assert_eq!(before, all(h.db.clone()).await);
}

/// A purge removes the user's rows archived up to its time, whether the batch staged them
/// (archived by id in the same batch) or not (archived by "everything so far"), and nothing
/// archived later, created later or another user's; a rebuild removes the same ones.
async fn purges_remove_archived_rows(log: TestLog) {
    let mut h = Harness::new(log);
    for k in ["a", "b", "c"] {
        h.exec::<Notifications>(U, U, notification(U, "brief", Some(k))).await;
    }
    h.exec::<Notifications>("user-2", "user-2", notification("user-2", "brief", Some("x"))).await;
    let key = |user: &str, k: &str| agentlog_domain::notifications::deduped_notification_id(user, k);
    h.exec::<Notifications>(U, U, N::Archive { ids: vec![key(U, "a")] }).await;
    h.exec::<Notifications>("user-2", "user-2", N::ArchiveAll).await;
    let now = h.now();
    h.exec::<Notifications>(U, U, N::PurgeArchived { archived_before: now }).await;
    h.exec::<Notifications>(U, U, notification(U, "brief", Some("d"))).await;
    h.sync().await;
    let present = |h: &Harness, user: &'static str, k: &'static str| {
        let db = h.db.clone();
        async move { notifications::notification(&db, Some(user), &key(user, k)).await.unwrap().is_some() }
    };
    assert!(!present(&h, U, "a").await, "archived before the purge");
    for k in ["b", "c", "d"] {
        assert!(present(&h, U, k).await, "{k} was never archived");
    }
    assert!(present(&h, "user-2", "x").await, "another user's archived notification stays");

    // Everything archived, then a later notification, then a purge up to the archive.
    h.exec::<Notifications>(U, U, N::ArchiveAll).await;
    let archived = h.now();
    h.exec::<Notifications>(U, U, notification(U, "brief", Some("e"))).await;
    h.exec::<Notifications>(U, U, N::Archive { ids: vec![key(U, "e")] }).await;
    h.exec::<Notifications>(U, U, N::PurgeArchived { archived_before: archived }).await;
    h.sync().await;
    for k in ["b", "c", "d"] {
        assert!(!present(&h, U, k).await, "{k} was archived before the purge's cut-off");
    }
    assert!(present(&h, U, "e").await, "archived after the cut-off");
    assert_eq!(notifications::archived_count(&h.db, U, h_far()).await.unwrap(), 1);
    h.rebuild().await;
    assert!(present(&h, U, "e").await && !present(&h, U, "b").await && !present(&h, U, "a").await);
    assert!(present(&h, "user-2", "x").await);
    assert_eq!(notifications::users_with_archived_before(&h.db, h_far(), 10).await.unwrap(), [U, "user-2"]);
}

fn h_far() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc.with_ymd_and_hms(2100, 1, 1, 0, 0, 0).single().unwrap_or_default()
}

fn cron_spec(id: &str, max: Option<u32>) -> CronCommand {
    let spec: CreateCronJob = serde_json::from_value(serde_json::json!({
        "jobId": id, "agentId": "agent-a", "pattern": "* * * * *", "timezone": "UTC",
        "content": "check the news", "enabled": true, "maxExecutions": max,
    }))
    .unwrap();
    CronCommand::Create(spec)
}

async fn cron_jobs_fold_and_query(log: TestLog) {
    let mut h = Harness::new(log);
    h.exec::<CronJob>(U, "j1", cron_spec("j1", Some(2))).await;
    h.exec::<CronJob>(U, "j2", cron_spec("j2", None)).await;
    h.exec::<CronJob>(U, "j3", cron_spec("j3", None)).await;
    let utc = FixedOffset::east_opt(0).unwrap();
    let at = |m| utc.with_ymd_and_hms(2026, 11, 30, 10, m, 0).single().unwrap();
    h.exec::<CronJob>(U, "j1", CronCommand::Fire { at: at(1), fires_today: 0 }).await;
    h.exec::<CronJob>(U, "j1", CronCommand::Fire { at: at(2), fires_today: 1 }).await; // last one: auto-disabled
    h.exec::<CronJob>(U, "j2", CronCommand::Update(CronJobPatch { name: Some("news".into()), ..Default::default() }))
        .await;
    h.exec::<CronJob>(U, "j2", CronCommand::Disable).await;
    h.exec::<CronJob>(U, "j3", CronCommand::Delete).await;
    h.sync().await;

    let db = &h.db;
    let j1 = cron_jobs::cron_job(db, U, "j1").await.unwrap().expect("j1");
    assert_eq!((j1.total_executions, j1.remaining_executions, j1.enabled), (2, Some(0), false));
    assert_eq!(j1.last_executed_at, Some(at(2).to_utc()));
    assert_eq!(j1.fires_on("2026-11-30"), 2);
    let j2 = cron_jobs::cron_job(db, U, "j2").await.unwrap().expect("j2");
    assert_eq!((j2.name.as_deref(), j2.enabled), (Some("news"), false));
    assert_eq!((j1.next_due_at, j2.next_due_at), (None, None), "disabled or used up: never due");
    assert!(cron_jobs::cron_job(db, U, "j3").await.unwrap().is_none(), "a deleted job's row goes");
    assert!(cron_jobs::dispatchable_jobs(db, Some(U)).await.unwrap().is_empty());

    h.exec::<CronJob>(U, "j1", CronCommand::ResetExecutions { max_executions: Some(Some(5)) }).await;
    h.exec::<CronJob>(U, "j2", CronCommand::Enable).await;
    h.sync().await;
    let db = &h.db;
    let ready = cron_jobs::dispatchable_jobs(db, Some(U)).await.unwrap();
    assert_eq!(sorted(ready.iter().map(|j| j.job_id.as_str())), ["j1", "j2"]);
    // Both are due: j1 reset (due from its creation on), j2 never fired; a minute before their
    // first slot, neither.
    let due = cron_jobs::jobs_due(db, Some(U), at(3).to_utc()).await.unwrap();
    assert_eq!(sorted(due.iter().map(|j| j.job_id.as_str())), ["j1", "j2"]);
    let before = chrono::Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, 59).single().unwrap();
    assert!(cron_jobs::jobs_due(db, Some(U), before).await.unwrap().is_empty());
    let j2 = cron_jobs::cron_job(db, U, "j2").await.unwrap().expect("j2");
    assert_eq!(j2.next_due_at, chrono::Utc.with_ymd_and_hms(2026, 11, 29, 9, 1, 0).single());
    let enabled = cron_jobs::CronJobFilter { enabled: Some(true), ..Default::default() };
    assert_eq!(cron_jobs::cron_jobs(db, None, &enabled, &PageRequest::default()).await.unwrap().items.len(), 2);
    assert!(cron_jobs::cron_job(db, "user-2", "j1").await.unwrap().is_none());

    let before = cron_jobs::cron_jobs(db, None, &Default::default(), &PageRequest::default()).await.unwrap();
    h.rebuild().await;
    assert_eq!(before, cron_jobs::cron_jobs(&h.db, None, &Default::default(), &PageRequest::default()).await.unwrap());
}

fn sorted<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = ids.collect();
    v.sort_unstable();
    v
}

both!(
    briefs_fold_and_query as briefs_read_model,
    notifications_fold_and_query as notifications_read_model,
    purges_remove_archived_rows as notification_purges,
    cron_jobs_fold_and_query as cron_jobs_read_model,
);
