//! A user at their inbox: reading, un-reading and archiving notifications (one by one and all at
//! once), reading and resolving briefs (approving a result brief may complete its task), and
//! the odd brief or notification written by the API rather than a policy.

use agentlog_domain::{
    aggregate::Aggregate,
    briefs::{BriefActionType, BriefCommand, BriefType, CreateBrief, READ},
    envelope::Actor,
    error::DomainError,
    notifications::{CreateNotification, NotificationCommand},
    rules::brief_resolution::resolve_brief,
    streams::StreamKind,
    tasks::TaskStatus,
};
use agentlog_eventlog::StreamAppend;
use serde_json::json;

use super::{
    run::{brief_poll, notification_poll},
    story::{Gen, Poll, Story},
    world::{Decision, Part, World},
};

/// One user's inbox habits, for the whole workload.
pub(crate) struct InboxStory {
    user: String,
}

impl InboxStory {
    /// The inbox of `user`.
    pub(crate) fn new(user: &str) -> Self {
        Self { user: user.to_string() }
    }

    fn notifications(&self, world: &World, g: &mut Gen, cmd: NotificationCommand) -> Result<Poll, DomainError> {
        let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
        let events = world.notifications.get(&self.user).decide(&cmd, &ctx)?;
        Ok(Poll::Decide(Decision::one(ctx, Part::Notification(self.user.clone(), events))))
    }

    fn some_notifications(&self, world: &World, g: &mut Gen) -> Vec<String> {
        let recent: Vec<&String> = world.recent_notifications.get(&self.user).into_iter().flatten().collect();
        let n = g.rng.range(1, 3) as usize;
        (0..n).filter_map(|_| g.rng.pick(&recent).map(|s| s.to_string())).collect()
    }

    fn resolve(&self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        let open: Vec<&String> = world.open_briefs.get(&self.user).into_iter().flatten().take(8).collect();
        let Some(brief_id) = g.rng.pick(&open).map(|s| s.to_string()) else { return Ok(Poll::Wait) };
        let brief = world.briefs.get(&brief_id);
        let Some(created) = &brief.brief else { return Ok(Poll::Wait) };
        let task = created.task_id.as_deref().map(|t| world.tasks.get(t)).filter(|t| t.exists());
        // A human does not approve the result of a run still in progress.
        if task.is_some_and(|t| t.status == TaskStatus::Running) {
            return Ok(Poll::Wait);
        }
        let choices: Vec<String> = created
            .actions
            .iter()
            .flatten()
            .filter(|a| a.action_type != BriefActionType::Link)
            .map(|a| a.key.clone())
            .chain(std::iter::once(if created.brief_type == BriefType::Result { "approve" } else { READ }.to_string()))
            .collect();
        let Some(action) = g.rng.pick(&choices).cloned() else { return Ok(Poll::Wait) };
        let needs_comment =
            created.actions.iter().flatten().any(|a| a.key == action && a.action_type == BriefActionType::Comment);
        let comment = (needs_comment || g.rng.chance(20)).then(|| g.rng.words(3, 15));
        let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
        // The workload writes global streams (a log from before ids were per owner).
        let (brief_stream, task_stream) =
            (StreamKind::Brief.stream_id(&brief_id), created.task_id.as_deref().map(|t| StreamKind::Task.stream_id(t)));
        let task = task.zip(task_stream.as_deref());
        let resolution = resolve_brief(brief, &brief_stream, task, &action, comment, &ctx)?;
        let mut parts = vec![Part::brief(resolution.brief)];
        parts.extend(resolution.task.map(Part::task));
        Ok(Poll::Decide(Decision { ctx, parts }))
    }
}

impl Story for InboxStory {
    fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        match g.rng.weighted(&[60, 12, 3, 8, 1, 1, 6, 6, 2, 1]) {
            1 => {
                let ids = self.some_notifications(world, g);
                if ids.is_empty() {
                    return Ok(Poll::Wait);
                }
                self.notifications(world, g, NotificationCommand::MarkRead { ids })
            }
            2 => {
                let ids = self.some_notifications(world, g);
                if ids.is_empty() {
                    return Ok(Poll::Wait);
                }
                self.notifications(world, g, NotificationCommand::MarkUnread { ids })
            }
            3 => {
                let ids = self.some_notifications(world, g);
                if ids.is_empty() {
                    return Ok(Poll::Wait);
                }
                self.notifications(world, g, NotificationCommand::Archive { ids })
            }
            4 => self.notifications(world, g, NotificationCommand::MarkAllRead),
            5 => self.notifications(world, g, NotificationCommand::ArchiveAll),
            6 => {
                let open: Vec<&String> = world.open_briefs.get(&self.user).into_iter().flatten().collect();
                let Some(id) = g.rng.pick(&open).map(|s| s.to_string()) else { return Ok(Poll::Wait) };
                let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
                let events = world.briefs.get(&id).decide(&BriefCommand::MarkRead, &ctx)?;
                Ok(Poll::Decide(Decision::one(ctx, Part::Brief(id, events))))
            }
            7 => self.resolve(world, g),
            8 => {
                let brief_type = [BriefType::Decision, BriefType::Insight][g.rng.below(2)];
                let mut brief = CreateBrief::new(g.id("brief"), brief_type, g.rng.words(2, 6), g.rng.words(8, 30));
                brief.trigger = Some("agent".into());
                let ctx = g.ctx(Actor::agent("self-reflection"), &self.user, None);
                brief_poll(world, ctx, brief)
            }
            9 => {
                let n = CreateNotification {
                    user_id: self.user.clone(),
                    category: "budget".into(),
                    notification_type: "budget_threshold".into(),
                    title: "Spending alert".into(),
                    body: g.rng.words(5, 15),
                    dedupe_key: None,
                    action_url: Some("/settings/billing".into()),
                    metadata: Some(json!({"threshold": g.rng.range(50, 100)})),
                };
                let ctx = g.ctx(Actor::system("budget-watch"), &self.user, None);
                notification_poll(world, ctx, n)
            }
            _ => Ok(Poll::Wait),
        }
    }

    fn applied(&mut self, _: &[StreamAppend], _: &World, _: &mut Gen, _: &mut Vec<Box<dyn Story>>) {}
}
