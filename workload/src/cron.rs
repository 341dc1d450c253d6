//! A cron job: created for an agent, fired every few minutes (each fire a source that may start
//! a run of the agent), edited and moved to its real schedule, paused and resumed, run out of
//! executions and reset, deleted.

use agentlog_domain::{
    aggregate::Aggregate,
    cron_jobs::{CreateCronJob, CronCommand, CronJobPatch, ExecutionConditions},
    envelope::Actor,
    error::DomainError,
    values::AgentRef,
};
use agentlog_eventlog::StreamAppend;
use chrono::Timelike;

use super::{
    run::{RunMachine, RunPlan, RunStart, RunStory},
    story::{Gen, Poll, Story, caused_by, find, stream_events},
    world::{Decision, Part, World},
};

/// The schedules a job moves to once tried: what people run agents on.
const SCHEDULES: &[&str] =
    &["0 9 * * *", "0 9 * * 1-5", "30 8 * * 1-5", "0 * * * *", "0 */6 * * *", "15 18 * * *", "0 7 * * 1"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Create,
    Fire,
    Update,
    Disable,
    Enable,
    Reset,
    Delete,
    Done,
}

/// One cron job's life.
pub(crate) struct CronStory {
    user: String,
    agent: AgentRef,
    job_id: String,
    step: Step,
    fires_left: u32,
    last_fire_round: u64,
    fired_days: (i64, u32),
    /// The minute of the last fire: a reset clears the job's `lastExecutedAt`, yet the same
    /// minute must not fire twice (the fire's id is derived from job and minute).
    last_fire_minute: Option<chrono::DateTime<chrono::Utc>>,
}

impl CronStory {
    /// A job of `user` running `agent`.
    pub(crate) fn new(g: &mut Gen, user: &str, agent: AgentRef) -> Self {
        let fires_left = g.rng.range(2, 8) as u32;
        Self {
            user: user.to_string(),
            agent,
            job_id: g.id("cron"),
            step: Step::Create,
            fires_left,
            last_fire_round: 0,
            fired_days: (0, 0),
            last_fire_minute: None,
        }
    }

    fn decision(&self, world: &World, g: &mut Gen, actor: Actor, cmd: CronCommand) -> Result<Poll, DomainError> {
        let ctx = g.ctx(actor, &self.user, None);
        let events = world.crons.get(&self.job_id).decide(&cmd, &ctx)?;
        Ok(Poll::Decide(Decision::one(ctx, Part::Cron(self.job_id.clone(), events))))
    }
}

impl Story for CronStory {
    fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        let user = Actor::user(self.user.clone());
        match self.step {
            Step::Create => {
                let r = &mut g.rng;
                let create = CreateCronJob {
                    job_id: self.job_id.clone(),
                    agent_id: self.agent.agent_id.clone(),
                    group_id: None,
                    name: Some(r.words(2, 4)),
                    pattern: "* * * * *".into(),
                    timezone: "UTC".into(),
                    content: r.words(5, 25),
                    enabled: true,
                    max_executions: r.chance(30).then(|| r.range(2, 4) as u32),
                    conditions: ExecutionConditions {
                        active_days: None,
                        active_hours: None,
                        max_executions_per_day: r.chance(20).then_some(50),
                    },
                };
                self.decision(world, g, user, CronCommand::Create(create))
            }
            Step::Fire => {
                let job = world.crons.get(&self.job_id);
                if self.fires_left == 0 {
                    self.step = Step::Update;
                    return self.poll(world, g);
                }
                if !job.enabled {
                    self.step = Step::Reset;
                    return self.poll(world, g);
                }
                let now = g.now();
                let minute = now.with_second(0).and_then(|t| t.with_nanosecond(0)).unwrap_or(now);
                // One fire per minute (the fire's id is derived from job and minute) and not every round.
                let same_minute = job.last_executed_at.is_some_and(|last| last >= minute)
                    || self.last_fire_minute.is_some_and(|last| last >= minute);
                if same_minute || g.round() < self.last_fire_round + 2 {
                    return Ok(Poll::Wait);
                }
                let day = minute.timestamp().div_euclid(86_400);
                let fires_today = if self.fired_days.0 == day { self.fired_days.1 } else { 0 };
                let at = minute.fixed_offset();
                self.decision(world, g, Actor::system("scheduler"), CronCommand::Fire { at, fires_today })
            }
            Step::Update => {
                let r = &mut g.rng;
                // Tried every minute, the job moves to its real schedule: the jobs a log leaves
                // enabled fire as a fleet's do (hourly, daily), not 1,000 of them every minute.
                let pattern = r.pick(SCHEDULES).map(|p| (*p).to_string());
                let patch = CronJobPatch {
                    name: Some(r.words(2, 4)),
                    pattern,
                    content: r.chance(50).then(|| r.words(5, 25)),
                    ..CronJobPatch::default()
                };
                self.decision(world, g, user, CronCommand::Update(patch))
            }
            Step::Disable => {
                if !world.crons.get(&self.job_id).enabled {
                    self.step = Step::Delete;
                    return self.poll(world, g);
                }
                self.decision(world, g, user, CronCommand::Disable)
            }
            Step::Enable => self.decision(world, g, user, CronCommand::Enable),
            Step::Reset => self.decision(world, g, user, CronCommand::ResetExecutions { max_executions: Some(None) }),
            Step::Delete => {
                if g.rng.chance(50) {
                    self.step = Step::Done;
                    return Ok(Poll::Done);
                }
                self.decision(world, g, user, CronCommand::Delete)
            }
            Step::Done => Ok(Poll::Done),
        }
    }

    fn applied(&mut self, appends: &[StreamAppend], _: &World, g: &mut Gen, spawned: &mut Vec<Box<dyn Story>>) {
        self.step = match self.step {
            Step::Create => Step::Fire,
            Step::Fire => {
                self.fires_left -= 1;
                self.last_fire_round = g.round();
                let events =
                    stream_events(appends, &agentlog_domain::streams::StreamKind::Cron.stream_id(&self.job_id));
                if let Some(fired) = find(events, "cron.fired") {
                    self.last_fire_minute =
                        fired.payload.get("at").and_then(|v| v.as_str()).and_then(|t| t.parse().ok());
                    let day = fired
                        .payload
                        .get("at")
                        .and_then(|v| v.as_str())
                        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
                        .map_or(0, |t| t.timestamp().div_euclid(86_400));
                    self.fired_days = if self.fired_days.0 == day { (day, self.fired_days.1 + 1) } else { (day, 1) };
                    if g.rng.chance(60) {
                        let plan = RunPlan::draw(g, true);
                        let run = RunMachine::new(
                            g,
                            &self.user,
                            self.agent.clone(),
                            RunStart::Plain { trigger: "cron" },
                            plan,
                        )
                        .caused_by(caused_by(fired));
                        spawned.push(Box::new(RunStory { run }));
                    }
                }
                Step::Fire
            }
            Step::Update => Step::Disable,
            Step::Disable => Step::Enable,
            Step::Enable => Step::Delete,
            Step::Reset => Step::Fire,
            Step::Delete | Step::Done => Step::Done,
        };
    }

    fn forget(&self, world: &mut World) {
        world.crons.forget(&self.job_id);
    }
}
