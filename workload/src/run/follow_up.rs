//! What follows a run's end, as the server's reactors would append it: the child's result to
//! its parent, the task lifecycle, the policies' briefs and notifications.

use agentlog_domain::{
    aggregate::{Aggregate, DomainEvent},
    briefs::{BriefCommand, BriefEvent, CreateBrief},
    envelope::Actor,
    error::DomainError,
    notifications::{CreateNotification, NotificationCommand},
    operations::OperationEvent,
    rules::operation_start,
    signal::policy::{self, Reaction},
    tasks::{TaskCommand, TaskEvent, TopicEnd, TopicOutcome},
    values::Handoff,
};

use super::machine::*;
use crate::{
    story::{Gen, Poll, caused_by, find},
    world::{Decision, Part, World},
};

impl RunMachine {
    pub(super) fn reaction_decision(
        &self,
        world: &World,
        g: &mut Gen,
        reactions: Vec<Reaction>,
        cause: agentlog_domain::context::Cause,
    ) -> Result<Poll, DomainError> {
        let Some(reaction) = reactions.into_iter().next() else { return Ok(Poll::Wait) };
        reaction_poll(world, g, &self.user, reaction, cause)
    }

    pub(super) fn poll_follow_up(&mut self, world: &World, g: &mut Gen, f: FollowUp) -> Result<Poll, DomainError> {
        let Some(terminal) = self.terminal.clone() else {
            self.phase = Phase_::Done;
            return Ok(Poll::Done);
        };
        match f {
            FollowUp::ChildResult => {
                let child = world.ops.get(&self.op_id);
                let Some(event) = decode_op(&terminal) else { return self.skip_follow_up(world, g) };
                let Some((parent_id, cmd)) = operation_start::child_result_for_parent(child, &event) else {
                    return self.skip_follow_up(world, g);
                };
                let parent = world.ops.get(&parent_id);
                if parent.is_finished() || !parent.exists() {
                    return self.skip_follow_up(world, g);
                }
                let ctx = g.ctx(Actor::system("child-result"), &self.user, Some(caused_by(&terminal)));
                let events = parent.decide(&cmd, &ctx)?;
                Ok(Poll::Decide(Decision::one(ctx, Part::Operation(parent_id, events))))
            }
            FollowUp::CompleteTopic => {
                let RunStart::Task { task_id, topic_id, trigger } = &self.start else {
                    return self.skip_follow_up(world, g);
                };
                let end = match decode_op(&terminal) {
                    Some(OperationEvent::Completed(_)) => TopicEnd::Done,
                    Some(OperationEvent::Failed(f)) => TopicEnd::Error { message: f.error.message, code: f.error.code },
                    Some(OperationEvent::Cancelled(_)) => TopicEnd::Other { detail: "cancelled".into() },
                    _ => TopicEnd::Other { detail: "interrupted".into() },
                };
                let r = &mut g.rng;
                let handoff = (end == TopicEnd::Done).then(|| Handoff {
                    title: Some(r.words(2, 6)),
                    summary: Some(r.words(8, 30)),
                    key_findings: (0..r.range(0, 4)).map(|_| r.words(3, 9)).collect(),
                    next_action: r.chance(60).then(|| r.words(3, 8)),
                    content: None,
                    brief_decision: None,
                });
                let outcome = TopicOutcome {
                    topic_id: topic_id.clone(),
                    operation_id: self.op_id.clone(),
                    end,
                    run_trigger: *trigger,
                    handoff,
                    last_assistant_content: Some(r.words(4, 40)),
                    human_waiting: false,
                    brief_judgement: Some(r.chance(50)),
                };
                let ctx = g.ctx(Actor::system("task-lifecycle"), &self.user, Some(caused_by(&terminal)));
                let events = world.tasks.get(task_id).decide(&TaskCommand::CompleteTopic(outcome), &ctx)?;
                Ok(Poll::Decide(Decision::one(ctx, Part::Task(task_id.clone(), events))))
            }
            FollowUp::Brief => {
                let (reactions, cause) = match &self.start {
                    RunStart::Task { task_id, .. } => {
                        let task = world.tasks.get(task_id);
                        if let Some(e) = find(&self.last, "task.topic_completed") {
                            match TaskEvent::decode(&e.event_type, e.schema_version, &e.payload) {
                                Ok(TaskEvent::TopicCompleted(c)) => {
                                    (policy::on_topic_completed(task, &c), caused_by(e))
                                }
                                _ => (Vec::new(), caused_by(e)),
                            }
                        } else if let Some(e) = find(&self.last, "task.topic_failed") {
                            match TaskEvent::decode(&e.event_type, e.schema_version, &e.payload) {
                                Ok(TaskEvent::TopicFailed(f)) => (policy::on_topic_failed(task, &f), caused_by(e)),
                                _ => (Vec::new(), caused_by(e)),
                            }
                        } else {
                            return self.skip_follow_up(world, g);
                        }
                    }
                    _ => match decode_op(&terminal) {
                        Some(OperationEvent::Failed(failed)) => {
                            (policy::on_operation_failed(world.ops.get(&self.op_id), &failed), caused_by(&terminal))
                        }
                        _ => return self.skip_follow_up(world, g),
                    },
                };
                if reactions.is_empty() {
                    return self.skip_follow_up(world, g);
                }
                self.reaction_decision(world, g, reactions, cause)
            }
            FollowUp::BriefNotification => {
                let Some(created) = find(&self.last, "brief.created") else { return self.skip_follow_up(world, g) };
                let Ok(BriefEvent::Created(c)) =
                    BriefEvent::decode(&created.event_type, created.schema_version, &created.payload)
                else {
                    return self.skip_follow_up(world, g);
                };
                let cause = caused_by(created);
                self.reaction_decision(world, g, policy::on_brief_created(&c), cause)
            }
        }
    }

    /// Move past a follow-up that has nothing to do, and poll the next one.
    pub(super) fn skip_follow_up(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        self.phase = self.after_follow_up();
        self.poll(world, g)
    }

    pub(super) fn first_follow_up(&self) -> Phase_ {
        match self.start {
            RunStart::Child => Phase_::FollowUp(FollowUp::ChildResult),
            RunStart::Task { .. } => Phase_::FollowUp(FollowUp::CompleteTopic),
            _ => Phase_::FollowUp(FollowUp::Brief),
        }
    }

    pub(super) fn after_follow_up(&self) -> Phase_ {
        match self.phase {
            Phase_::FollowUp(FollowUp::CompleteTopic) => Phase_::FollowUp(FollowUp::Brief),
            Phase_::FollowUp(FollowUp::Brief) => Phase_::FollowUp(FollowUp::BriefNotification),
            _ => Phase_::Done,
        }
    }
}

/// The decision a policy's reaction calls for, caused by `cause`.
pub(super) fn reaction_poll(
    world: &World,
    g: &mut Gen,
    user: &str,
    reaction: Reaction,
    cause: agentlog_domain::context::Cause,
) -> Result<Poll, DomainError> {
    match reaction {
        Reaction::CreateBrief(brief) => {
            let ctx = g.ctx(Actor::system("signal-bus"), user, Some(cause));
            let id = brief.brief_id.clone();
            let events = world.briefs.get(&id).decide(&BriefCommand::Create(brief), &ctx)?;
            Ok(Poll::Decide(Decision::one(ctx, Part::Brief(id, events))))
        }
        Reaction::CreateNotification(n) => {
            let ctx = g.ctx(Actor::system("signal-bus"), &n.user_id.clone(), Some(cause));
            notification_poll(world, ctx, n)
        }
        Reaction::ReceiveSource(source) => {
            let ctx = g.ctx(Actor::system("signal-bus"), user, Some(cause));
            let command = agentlog_domain::signal::SourceCommand::Receive {
                source_id: source.source_id.clone(),
                source_type: source.source_type.to_string(),
                payload: source.payload,
                scope_key: None,
                timestamp_ms: source.timestamp_ms,
            };
            let events = world.sources.get(&source.source_id).decide(&command, &ctx)?;
            Ok(Poll::Decide(Decision::one(ctx, Part::Source(source.source_id, events))))
        }
    }
}

/// Create a notification for its user.
pub(crate) fn notification_poll(
    world: &World,
    ctx: agentlog_domain::context::Context,
    n: CreateNotification,
) -> Result<Poll, DomainError> {
    let user = n.user_id.clone();
    let events = world.notifications.get(&user).decide(&NotificationCommand::Create(n), &ctx)?;
    Ok(Poll::Decide(Decision::one(ctx, Part::Notification(user, events))))
}

/// A brief created by a person or an agent (not a policy).
pub(crate) fn brief_poll(
    world: &World,
    ctx: agentlog_domain::context::Context,
    brief: CreateBrief,
) -> Result<Poll, DomainError> {
    let id = brief.brief_id.clone();
    let events = world.briefs.get(&id).decide(&BriefCommand::Create(brief), &ctx)?;
    Ok(Poll::Decide(Decision::one(ctx, Part::Brief(id, events))))
}
