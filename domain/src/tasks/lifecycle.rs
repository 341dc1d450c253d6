//! When a run ends (upstream `TaskLifecycleService.onTopicComplete`): heartbeat, topic status,
//! hand-off and brief decision, the next status, and the heartbeat re-arm.
//!
//! Next status after a topic:
//!
//! | run ended | task | next |
//! |---|---|---|
//! | done | automated, quota reached | completed |
//! | done | automated, quota left | scheduled (error cleared) |
//! | done | not automated | paused for a human (unless `pauseAfterTopic` is false) |
//! | error | not automated | paused, with the error |
//! | error | automated, manual run | scheduled, with the error |
//! | error | automated tick, fewer than 3 failures in a row | scheduled, with the error |
//! | error | automated tick, the 3rd failure in a row | paused, with the error |
//! | other (interrupted, …) | running | topic canceled, task paused |
//!
//! Success never pauses an automated task. Every error also gets an urgent error brief: the
//! policy [`crate::signal::policy::on_topic_failed`] turns `task.topic_failed` into it, and
//! `task.topic_completed` with `handoff.briefDecision.emit` into a result brief.
//!
//! Whether a finished run gets a result brief ([`should_emit_topic_brief`]): review enabled ⇒
//! no; schedule tick ⇒ yes; trivial content (under 16 characters) on a manual or goal run ⇒ no;
//! otherwise the worker's judge decides (`briefJudgement`, upstream's LLM judge), and without
//! its verdict substantive content gets a brief (agentlog never calls a model itself).
//!
//! Differences from upstream, on purpose: a heartbeat task whose fuse blows (3 failed ticks)
//! pauses instead of staying `scheduled` without a next tick; a run that ends neither done nor
//! error cancels its topic and pauses the task instead of leaving the topic running forever.

use super::command::{TopicEnd, TopicOutcome};
use super::event::TaskEvent as E;
use super::event::*;
use super::model::{AutomationMode, FAILURE_FUSE, RunTrigger, TaskStatus as S, TopicStatus};
use super::run::automated;
use super::state::Task;
use crate::context::Context;
use crate::deadline::after;
use crate::error::DomainError;
use crate::values::{BriefDecision, BriefDecisionSource};

/// The rule's verdict on whether a finished run gets a brief (upstream `shouldEmitTopicBrief`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BriefVerdict {
    /// Emit one.
    Yes(&'static str),
    /// Do not.
    No(&'static str),
    /// A model should judge.
    Unknown(&'static str),
}

/// Content shorter than this (trimmed, in characters) is too trivial for a brief.
pub const TRIVIAL_CONTENT_CHARS: usize = 16;

/// Is a run's last message more than trivial (at least [`TRIVIAL_CONTENT_CHARS`])?
fn substantive(content: Option<&str>) -> bool {
    content.is_some_and(|c| c.trim().chars().count() >= TRIVIAL_CONTENT_CHARS)
}

/// Does a finished run deserve a brief? error ⇒ yes; review configured ⇒ no (the reviewer owns
/// it); heartbeat tick ⇒ unknown; schedule tick ⇒ yes; trivial content ⇒ no; else unknown.
pub fn should_emit_topic_brief(
    end: &TopicEnd,
    trigger: RunTrigger,
    review_enabled: bool,
    content: Option<&str>,
) -> BriefVerdict {
    if matches!(end, TopicEnd::Error { .. }) {
        return BriefVerdict::Yes("the run failed; the user must be told");
    }
    if review_enabled {
        return BriefVerdict::No("a reviewer is configured and owns the brief");
    }
    match trigger {
        RunTrigger::Heartbeat => {
            BriefVerdict::Unknown("heartbeat runs are mostly noise; a judge decides")
        }
        RunTrigger::Schedule => BriefVerdict::Yes("every schedule run gets its brief"),
        RunTrigger::Manual | RunTrigger::Goal => {
            if !substantive(content) {
                BriefVerdict::No("the run's last message is trivial")
            } else {
                BriefVerdict::Unknown("substantive content; a judge decides")
            }
        }
    }
}

fn status_event(
    from: S,
    to: S,
    error: Option<String>,
    reason: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> E {
    E::StatusChanged(StatusChanged {
        from,
        to,
        error,
        reason: Some(reason.into()),
        schedule_started_at: None,
        at,
    })
}

pub(super) fn complete_topic(
    task: &Task,
    outcome: &TopicOutcome,
    ctx: &Context,
) -> Result<Vec<E>, DomainError> {
    let topic = task
        .topics
        .get(&outcome.topic_id)
        .ok_or_else(|| DomainError::not_found("topic", outcome.topic_id.clone()))?;
    if topic.status != TopicStatus::Running {
        return Err(DomainError::transition("topic", topic.status, "complete"));
    }
    if topic.operation_id != outcome.operation_id {
        return Err(DomainError::validation(
            "operationId",
            format!(
                "topic {} is run by operation {}, not {}",
                topic.topic_id, topic.operation_id, outcome.operation_id
            ),
        ));
    }
    let mut events = vec![E::HeartbeatRecorded(HeartbeatRecorded { at: ctx.now })];
    let base = TopicEventBase { task, outcome, ctx };
    match &outcome.end {
        TopicEnd::Done => base.done(&mut events),
        TopicEnd::Error { message, code } => base.error(message, code.as_deref(), &mut events),
        TopicEnd::Other { detail } => {
            events.push(E::TopicCanceled(TopicCanceled {
                topic_id: outcome.topic_id.clone(),
                operation_id: outcome.operation_id.clone(),
                reason: format!("run ended: {detail}"),
                at: ctx.now,
            }));
            if task.status == S::Running {
                events.push(status_event(S::Running, S::Paused, None, "run_ended", ctx.now));
            }
        }
    }
    Ok(events)
}

struct TopicEventBase<'a> {
    task: &'a Task,
    outcome: &'a TopicOutcome,
    ctx: &'a Context,
}

impl TopicEventBase<'_> {
    fn done(&self, events: &mut Vec<E>) {
        let (task, outcome, ctx) = (self.task, self.outcome, self.ctx);
        let content = outcome.last_assistant_content.as_deref();
        let verdict = should_emit_topic_brief(
            &outcome.end,
            outcome.run_trigger,
            task.config.review_enabled,
            content,
        );
        let decision = match verdict {
            BriefVerdict::Yes(reason) => BriefDecision {
                emit: true,
                reason: reason.into(),
                source: BriefDecisionSource::Rule,
                decided_at: ctx.now,
            },
            BriefVerdict::No(reason) => BriefDecision {
                emit: false,
                reason: reason.into(),
                source: BriefDecisionSource::Rule,
                decided_at: ctx.now,
            },
            BriefVerdict::Unknown(reason) => match outcome.brief_judgement {
                Some(emit) => BriefDecision {
                    emit,
                    reason: "judged by a model".into(),
                    source: BriefDecisionSource::LlmJudge,
                    decided_at: ctx.now,
                },
                // agentlog calls no model: without the worker's verdict, substantive content
                // gets its brief (a user is told of finished work rather than left to look).
                None => BriefDecision {
                    emit: substantive(content),
                    reason: format!(
                        "{reason}; no judgement given: {}",
                        if substantive(content) {
                            "substantive content gets a brief"
                        } else {
                            "trivial content gets none"
                        }
                    ),
                    source: BriefDecisionSource::Rule,
                    decided_at: ctx.now,
                },
            },
        };
        let mut handoff = outcome.handoff.clone().unwrap_or_default();
        handoff.content = outcome.last_assistant_content.clone();
        handoff.brief_decision = Some(decision);
        events.push(E::TopicCompleted(TopicCompleted {
            topic_id: outcome.topic_id.clone(),
            operation_id: outcome.operation_id.clone(),
            trigger: outcome.run_trigger,
            handoff,
            at: ctx.now,
        }));
        let next = if automated(task) {
            Some(if task.quota_reached() { S::Completed } else { S::Scheduled })
        } else if task.config.pause_after_topic.unwrap_or(true) {
            Some(S::Paused)
        } else {
            None
        };
        if let Some(next) = next.filter(|n| *n != task.status) {
            events.push(status_event(task.status, next, None, "topic_completed", ctx.now));
        }
        let next_status = next.unwrap_or(task.status);
        self.rearm(events, next_status, 0);
    }

    fn error(&self, message: &str, code: Option<&str>, events: &mut Vec<E>) {
        let (task, outcome, ctx) = (self.task, self.outcome, self.ctx);
        let tick = matches!(outcome.run_trigger, RunTrigger::Schedule | RunTrigger::Heartbeat);
        let failures = if automated(task) && tick {
            task.consecutive_failures + 1
        } else {
            task.consecutive_failures
        };
        events.push(E::TopicFailed(TopicFailed {
            topic_id: outcome.topic_id.clone(),
            operation_id: outcome.operation_id.clone(),
            trigger: outcome.run_trigger,
            error: message.to_string(),
            error_code: code.map(str::to_string),
            consecutive_failures: failures,
            at: ctx.now,
        }));
        let next = if !automated(task) || (tick && failures >= FAILURE_FUSE) {
            S::Paused
        } else {
            S::Scheduled
        };
        if next != task.status || task.error.as_deref() != Some(message) {
            events.push(status_event(
                task.status,
                next,
                Some(message.to_string()),
                "topic_failed",
                ctx.now,
            ));
        }
        self.rearm(events, next, failures);
    }

    /// Schedule the next heartbeat tick: heartbeat mode, an interval, not terminal nor paused,
    /// the fuse not blown, and no human waiting on an urgent brief.
    fn rearm(&self, events: &mut Vec<E>, next_status: S, failures: u32) {
        let (task, outcome, ctx) = (self.task, self.outcome, self.ctx);
        let Some(interval) = task.heartbeat.interval_secs.filter(|i| *i > 0) else { return };
        let armed = task.automation_mode == Some(AutomationMode::Heartbeat)
            && !next_status.is_terminal()
            && next_status != S::Paused
            && failures < FAILURE_FUSE
            && !outcome.human_waiting;
        if armed {
            events.push(E::HeartbeatScheduled(HeartbeatScheduled {
                due_at: after(ctx.now, interval),
                tick_token: ctx.derived_id("tick", 0),
            }));
        }
    }
}
