//! A chat session: a conversation opened with an agent, a few turns (a user message, the
//! agent's run, its answer — sometimes through a tool call), and between turns the things
//! people do: edit or delete a message, regenerate an answer and switch between the branches,
//! open a thread and write in it.

use agentlog_domain::{
    aggregate::Aggregate,
    conversations::{ChatMessage, Conversation, ConversationCommand, ThreadKind},
    envelope::Actor,
    error::DomainError,
    values::AgentRef,
};
use agentlog_eventlog::StreamAppend;
use serde_json::{Map, json};

use super::{
    run::{RunMachine, RunPlan, RunStart},
    story::{Gen, Poll, Story, stream_events},
    world::{Decision, Part, World},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Open,
    UserMessage,
    Run,
    ToolCall,
    ToolResult,
    Answer,
    Extra(Extra),
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extra {
    Edit,
    Delete,
    Regenerate,
    SwitchBranch,
    OpenThread,
    ThreadMessage,
}

/// One user's chat session with one agent.
pub(crate) struct ConversationStory {
    user: String,
    agent: AgentRef,
    topic_id: String,
    step: Step,
    turns_left: u32,
    /// The last message on the main line (the parent of the next one).
    tip: Option<String>,
    /// The user message of the current turn.
    question: Option<String>,
    /// The assistant message that made a tool call in the current turn.
    tool_caller: Option<String>,
    tool_message: Option<String>,
    thread: Option<String>,
    messages: Vec<String>,
    ops: Vec<String>,
    run: Option<RunMachine>,
}

impl ConversationStory {
    /// A session of `user` with `agent`.
    pub(crate) fn new(g: &mut Gen, user: &str, agent: AgentRef) -> Self {
        Self {
            user: user.to_string(),
            agent,
            topic_id: g.id("topic"),
            step: Step::Open,
            turns_left: g.rng.range(1, 4) as u32,
            tip: None,
            question: None,
            tool_caller: None,
            tool_message: None,
            thread: None,
            messages: Vec::new(),
            ops: Vec::new(),
            run: None,
        }
    }

    fn message(&self, g: &mut Gen, role: &str, parent: Option<String>) -> ChatMessage {
        let r = &mut g.rng;
        let content = if role == "user" { r.words(3, 30) } else { r.words(10, 120) };
        ChatMessage {
            message_id: String::new(),
            request_id: None,
            role: role.into(),
            content,
            parent_id: parent,
            thread_id: None,
            agent_id: (role != "user").then(|| self.agent.agent_id.clone()),
            group_id: None,
            operation_id: None,
            tools: None,
            tool_call_id: None,
            model: None,
            provider: None,
            metadata: None,
            extra: Map::new(),
        }
    }

    fn append(&self, world: &World, g: &mut Gen, mut message: ChatMessage, actor: Actor) -> Result<Poll, DomainError> {
        message.message_id = g.id("msg");
        if message.role == "user" {
            message.request_id = Some(g.id("req"));
        }
        let ctx = g.ctx(actor, &self.user, None);
        let events =
            world.conversations.get(&self.topic_id).decide(&ConversationCommand::AppendMessage(message), &ctx)?;
        Ok(Poll::Decide(Decision::one(ctx, Part::Conversation(self.topic_id.clone(), events))))
    }

    fn command(&self, world: &World, g: &mut Gen, cmd: ConversationCommand) -> Result<Poll, DomainError> {
        let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
        let events = world.conversations.get(&self.topic_id).decide(&cmd, &ctx)?;
        Ok(Poll::Decide(Decision::one(ctx, Part::Conversation(self.topic_id.clone(), events))))
    }

    fn live_messages<'a>(&'a self, world: &'a World) -> Vec<&'a String> {
        let conversation = world.conversations.get(&self.topic_id);
        self.messages.iter().filter(|id| conversation.messages.get(*id).is_some_and(|m| !m.deleted)).collect()
    }

    fn assistant_worker(&self) -> Actor {
        Actor::agent(self.agent.agent_id.clone())
    }

    /// After a turn: maybe one extra, then the next turn or the end.
    fn after_turn(&mut self, g: &mut Gen) {
        self.turns_left = self.turns_left.saturating_sub(1);
        let r = &mut g.rng;
        self.step = match r.weighted(&[55, 10, 4, 12, 9]) {
            1 => Step::Extra(Extra::Edit),
            2 => Step::Extra(Extra::Delete),
            3 => Step::Extra(Extra::Regenerate),
            4 => Step::Extra(Extra::OpenThread),
            _ if self.turns_left == 0 => Step::Done,
            _ => Step::UserMessage,
        };
    }

    fn next_turn(&mut self) {
        self.step = if self.turns_left == 0 { Step::Done } else { Step::UserMessage };
    }
}

impl Story for ConversationStory {
    fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        match self.step {
            Step::Open => {
                let title = Some(g.rng.words(2, 6));
                let cmd = ConversationCommand::Create {
                    topic_id: self.topic_id.clone(),
                    title,
                    agent_id: Some(self.agent.agent_id.clone()),
                    group_id: None,
                };
                self.command(world, g, cmd)
            }
            Step::UserMessage => {
                let message = self.message(g, "user", self.tip.clone());
                self.append(world, g, message, Actor::user(self.user.clone()))
            }
            Step::Run => {
                let Some(run) = self.run.as_mut() else {
                    self.step = Step::Answer;
                    return self.poll(world, g);
                };
                match run.poll(world, g)? {
                    Poll::Done => {
                        let completed = run.terminal().is_some_and(|t| t.event_type == "operation.completed");
                        self.run = None;
                        if completed {
                            self.step = if g.rng.chance(35) { Step::ToolCall } else { Step::Answer };
                            self.poll(world, g)
                        } else {
                            self.after_turn(g);
                            self.poll(world, g)
                        }
                    }
                    other => Ok(other),
                }
            }
            Step::ToolCall => {
                let mut message = self.message(g, "assistant", self.question.clone());
                message.operation_id = self.ops.last().cloned();
                message.tools = Some(vec![json!({
                    "id": g.id("call"), "identifier": "web-search", "apiName": "search",
                    "arguments": json!({"query": g.rng.words(2, 5)}).to_string(), "type": "default"
                })]);
                self.append(world, g, message, self.assistant_worker())
            }
            Step::ToolResult => {
                let mut message = self.message(g, "tool", self.tool_caller.clone());
                message.tool_call_id = Some(g.id("call"));
                message.operation_id = self.ops.last().cloned();
                self.append(world, g, message, self.assistant_worker())
            }
            Step::Answer => {
                let parent = self.tool_message.clone().or_else(|| self.question.clone());
                let mut message = self.message(g, "assistant", parent);
                message.operation_id = self.ops.last().cloned();
                message.model = self.agent.model.clone();
                message.provider = self.agent.provider.clone();
                if let Some(op) = self.ops.last().map(|id| world.ops.get(id)) {
                    message.metadata = Some(json!({
                        "usage": {
                            "totalInputTokens": op.usage.input_tokens,
                            "totalOutputTokens": op.usage.output_tokens,
                            "totalTokens": op.usage.total_tokens,
                        },
                        "performance": {"duration": g.rng.range(300, 20_000)}
                    }));
                }
                self.append(world, g, message, self.assistant_worker())
            }
            Step::Extra(extra) => {
                let live = self.live_messages(world);
                match extra {
                    Extra::Edit | Extra::Delete if live.is_empty() => {
                        self.next_turn();
                        self.poll(world, g)
                    }
                    Extra::Edit => {
                        let Some(id) = g.rng.pick(&live).map(|s| s.to_string()) else { return Ok(Poll::Wait) };
                        let cmd = ConversationCommand::EditMessage {
                            message_id: id,
                            content: Some(g.rng.words(3, 40)),
                            metadata: None,
                            extra: Map::new(),
                        };
                        self.command(world, g, cmd)
                    }
                    Extra::Delete => {
                        let Some(id) = live.last().map(|s| s.to_string()) else { return Ok(Poll::Wait) };
                        self.command(world, g, ConversationCommand::DeleteMessage { message_id: id })
                    }
                    Extra::Regenerate => {
                        let Some(question) = self.question.clone().filter(|q| live.contains(&q)) else {
                            self.next_turn();
                            return self.poll(world, g);
                        };
                        let mut message = self.message(g, "assistant", Some(question));
                        message.model = self.agent.model.clone();
                        self.append(world, g, message, self.assistant_worker())
                    }
                    Extra::SwitchBranch => {
                        let Some(question) = self.question.clone() else {
                            self.next_turn();
                            return self.poll(world, g);
                        };
                        let conversation = world.conversations.get(&self.topic_id);
                        let branches = conversation.messages.get(&question).map_or(0, |m| m.non_tool_children);
                        let index = g.rng.range(0, u64::from(branches.saturating_sub(1))) as u32;
                        let cmd =
                            ConversationCommand::SwitchBranch { message_id: question, active_branch_index: index };
                        self.command(world, g, cmd)
                    }
                    Extra::OpenThread => {
                        let Some(source) = live.last().map(|s| s.to_string()) else {
                            self.next_turn();
                            return self.poll(world, g);
                        };
                        let kinds = [ThreadKind::Continuation, ThreadKind::Standalone, ThreadKind::Isolation];
                        let cmd = ConversationCommand::CreateThread {
                            thread_id: g.id("thread"),
                            source_message_id: source,
                            kind: kinds[g.rng.below(3)],
                            title: Some(g.rng.words(2, 5)),
                        };
                        self.command(world, g, cmd)
                    }
                    Extra::ThreadMessage => {
                        let Some(thread) = self.thread.clone() else {
                            self.next_turn();
                            return self.poll(world, g);
                        };
                        let source = world.conversations.get(&self.topic_id).threads.get(&thread).cloned();
                        let mut message = self.message(g, "user", source);
                        message.thread_id = Some(thread);
                        self.append(world, g, message, Actor::user(self.user.clone()))
                    }
                }
            }
            Step::Done => Ok(Poll::Done),
        }
    }

    fn applied(&mut self, appends: &[StreamAppend], world: &World, g: &mut Gen, spawned: &mut Vec<Box<dyn Story>>) {
        let conversation_events = stream_events(appends, &Conversation::KIND.stream_id(&self.topic_id));
        let appended = conversation_events
            .iter()
            .find(|e| e.event_type == "conversation.message_appended")
            .and_then(|e| e.payload.get("messageId").and_then(|v| v.as_str()).map(str::to_string));
        if let Some(id) = &appended {
            self.messages.push(id.clone());
        }
        match self.step {
            Step::Open => self.step = Step::UserMessage,
            Step::UserMessage => {
                self.question = appended.clone();
                self.tip = appended;
                self.tool_caller = None;
                self.tool_message = None;
                let plan = RunPlan::draw(g, false);
                let run = RunMachine::new(
                    g,
                    &self.user,
                    self.agent.clone(),
                    RunStart::Conversation { topic_id: self.topic_id.clone() },
                    plan,
                );
                self.ops.push(run.op_id.clone());
                self.run = Some(run);
                self.step = Step::Run;
            }
            Step::Run => {
                if let Some(run) = self.run.as_mut() {
                    run.applied(appends, world, g, spawned);
                }
            }
            Step::ToolCall => {
                self.tool_caller = appended;
                self.step = Step::ToolResult;
            }
            Step::ToolResult => {
                self.tool_message = appended;
                self.step = Step::Answer;
            }
            Step::Answer => {
                self.tip = appended;
                self.after_turn(g);
            }
            Step::Extra(Extra::Regenerate) => {
                self.tip = appended;
                self.step = Step::Extra(Extra::SwitchBranch);
            }
            Step::Extra(Extra::OpenThread) => {
                self.thread = conversation_events
                    .iter()
                    .find(|e| e.event_type == "conversation.thread_created")
                    .and_then(|e| e.payload.get("threadId").and_then(|v| v.as_str()).map(str::to_string));
                self.step = Step::Extra(Extra::ThreadMessage);
            }
            Step::Extra(_) => self.next_turn(),
            Step::Done => {}
        }
    }

    fn forget(&self, world: &mut World) {
        world.conversations.forget(&self.topic_id);
        for op in &self.ops {
            world.forget_operation_tree(op);
        }
    }
}
