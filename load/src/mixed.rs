//! The realistic mix. Each client is a user (with a token of its own when the load has an
//! admin's) who chats, creates tasks with dependencies and runs them, creates and resolves
//! briefs and notifications — and also a worker that takes queued operations (anyone's: workers
//! run with the operator's token), claims them with a lease, renews it, reports a step with tool
//! calls and usage, answers in the conversation (an assistant message, a tool message, a final
//! answer), and completes or fails. Sometimes a second worker races for the same claim and
//! loses with CONFLICT; sometimes a user message goes beside an earlier one (a new branch).

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
};

use serde_json::{Value, json};

use crate::{
    client::{Call, Effect, Failure, Retry, Session},
    stats::Stats,
};

/// The agent every operation runs as: the built-in inbox agent, which every user may run.
pub const AGENT: &str = "inbox";

const CREATE_CONVERSATION: &str =
    "mutation($t: String!, $a: String) { createConversation(topicId: $t, agentId: $a) { position } }";
pub(crate) const APPEND_MESSAGE: &str =
    "mutation($t: String!, $m: JSON!) { appendMessage(topicId: $t, message: $m) { position } }";
pub(crate) const START_OPERATION: &str =
    "mutation($i: StartOperationInput!, $r: String) { startOperation(input: $i, requestId: $r) { position } }";
pub(crate) const APPEND_RUN_MESSAGE: &str = "mutation($t: String!, $m: JSON!, $lt: String, $o: String) { appendMessage(topicId: $t, message: $m, leaseToken: $lt, ownerId: $o) { position } }";
/// `$o`: whose operation it is (null: the caller's own).
pub(crate) const CLAIM: &str = "mutation($id: String!, $o: String, $w: String!, $r: String) { claimOperation(id: $id, ownerId: $o, workerId: $w, leaseSecs: 60, requestId: $r) { position lease { token } } }";
const RENEW: &str = "mutation($id: String!, $o: String, $w: String!, $lt: String!) { renewLease(id: $id, ownerId: $o, workerId: $w, leaseToken: $lt, leaseSecs: 60) { position } }";
pub(crate) const REPORT_STEP: &str = "mutation($id: String!, $o: String, $lt: String!, $c: [ToolCallInput!], $u: UsageInput, $r: String) { reportStep(id: $id, ownerId: $o, leaseToken: $lt, phase: ACTING, toolCalls: $c, usage: $u, requestId: $r) { position } }";
const COMPLETE: &str = "mutation($id: String!, $o: String, $lt: String!, $res: String, $h: HandoffInput, $r: String) { completeOperation(id: $id, ownerId: $o, leaseToken: $lt, result: $res, handoff: $h, requestId: $r) { position } }";
const FAIL: &str = "mutation($id: String!, $o: String, $lt: String!, $m: String!, $r: String) { failOperation(id: $id, ownerId: $o, leaseToken: $lt, message: $m, code: \"load_failure\", requestId: $r) { position } }";

/// The lease token in a `claimOperation` answer (empty when absent: every report is refused).
pub(crate) fn lease_token(data: &Value) -> String {
    data["claimOperation"]["lease"]["token"].as_str().unwrap_or_default().to_string()
}
pub(crate) const CREATE_TASK: &str =
    "mutation($i: JSON!, $r: String) { createTask(input: $i, requestId: $r) { position } }";
const ADD_DEPENDENCY: &str = "mutation($id: String!, $d: String!, $k: String) { addTaskDependency(id: $id, dependsOnId: $d, kind: $k) { position } }";
const RUN_TASK: &str = "mutation($id: String!, $t: String!, $o: String!, $r: String) { runTask(id: $id, topicId: $t, operationId: $o, requestId: $r) { position } }";
const CREATE_BRIEF: &str = "mutation($i: JSON!, $r: String) { createBrief(input: $i, requestId: $r) { position } }";
const READ_BRIEF: &str = "mutation($id: String!) { markBriefRead(id: $id) { position } }";
const RESOLVE_BRIEF: &str = "mutation($id: String!, $a: String!, $c: String, $r: String) { resolveBrief(id: $id, action: $a, comment: $c, requestId: $r) { position } }";
const CREATE_NOTIFICATION: &str = "mutation($i: CreateNotificationInput!) { createNotification(input: $i) { position deduped notification { notificationId } } }";
const READ_NOTIFICATIONS: &str = "mutation($ids: [String!]!) { markNotificationsRead(ids: $ids) { position } }";

/// The stream of an aggregate instance (the log's documented naming).
pub fn stream(kind: &str, id: &str) -> String {
    format!("{kind}-{id}")
}

/// The stream of `owner`'s instance `id` of a kind whose ids are per owner (`%` and `/` in
/// the owner percent-encoded); an unknown owner (`None`): `*`, any owner.
pub fn owned_stream(kind: &str, owner: Option<&str>, id: &str) -> String {
    match owner {
        Some(o) => format!("{kind}@{}/{id}", o.replace('%', "%25").replace('/', "%2F")),
        None => format!("{kind}@*/{id}"),
    }
}

/// The stream of topic `topic`: topic ids are per owner (`conversation@<owner>/<topicId>`), the
/// owner a `*` (a worker answers any user's topic; the load's topic ids are unique in a run).
pub fn topic_stream(topic: &str) -> String {
    format!("conversation@*/{topic}")
}

/// The stream of task `task`: task ids are per owner (`task@<owner>/<taskId>`), the owner a `*`
/// (the load's task ids are unique in a run).
pub fn task_stream(task: &str) -> String {
    format!("task@*/{task}")
}

/// The stream of operation `op`: operation ids are per owner (`operation@<owner>/<id>`), the
/// owner a `*` (the load's operation ids are unique in a run).
pub fn operation_stream(op: &str) -> String {
    format!("operation@*/{op}")
}

/// An operation waiting for a worker.
#[derive(Debug, Clone)]
struct WorkItem {
    operation: String,
    /// Whose operation and topic (the client's user; `None`: the workers' own token's).
    owner: Option<String>,
    /// The conversation and the user message the answer replies to (conversation runs).
    chat: Option<(String, String)>,
    /// The task (task runs).
    task: Option<String>,
    /// Already handed to a second worker to race for the claim.
    raced: bool,
}

/// What the mixed clients share: the queue of work and each conversation's latest answer.
#[derive(Default)]
pub struct Mixed {
    queue: Mutex<VecDeque<WorkItem>>,
    answers: Mutex<HashMap<String, String>>,
}

impl Mixed {
    fn push(&self, item: WorkItem, front: bool) {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if front { q.push_front(item) } else { q.push_back(item) }
    }

    fn pop(&self) -> Option<WorkItem> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front()
    }

    fn answer(&self, topic: &str) -> Option<String> {
        self.answers.lock().unwrap_or_else(|p| p.into_inner()).get(topic).cloned()
    }

    fn set_answer(&self, topic: &str, message: &str) {
        self.answers.lock().unwrap_or_else(|p| p.into_inner()).insert(topic.to_string(), message.to_string());
    }
}

/// A client's tokens.
#[derive(Debug, Clone)]
pub struct Tokens {
    /// As the user (chats, tasks, briefs, notifications).
    pub user: String,
    /// The user's id, when known (its notification stream); `None` → `notification-*`.
    pub user_id: Option<String>,
    /// As a worker (the token the load was given).
    pub worker: String,
}

/// One user's conversation as the client sees it.
#[derive(Default)]
struct Chat {
    topic: Option<String>,
    turns: u32,
    /// The last user message and its parent.
    last_user: Option<(String, Option<String>)>,
    busy: u32,
}

struct Client {
    s: Session,
    tokens: Tokens,
    chat: Chat,
    last_task: Option<String>,
    n: u64,
}

/// Run one mixed client until the budget is spent; its figures, or why it stopped early.
pub async fn client(s: Session, tokens: Tokens, mixed: &Mixed) -> Result<Stats, String> {
    let mut c = Client { s, tokens, chat: Chat::default(), last_task: None, n: 0 };
    loop {
        let result = match c.s.rng.below(100) {
            0..30 => c.chat_turn(mixed).await,
            30..65 => c.work(mixed).await,
            65..77 => c.task(mixed).await,
            77..89 => c.brief().await,
            _ => c.notification().await,
        };
        match result {
            Err(Failure::Spent) => break,
            Err(Failure::Record(e)) => return Err(e),
            _ if c.s.shared.budget.spent() => break,
            _ => {}
        }
    }
    Ok(c.s.stats)
}

impl Client {
    fn next(&mut self, kind: &str) -> String {
        self.n += 1;
        self.s.id(kind, self.n)
    }

    fn notification_stream(&self) -> String {
        stream("notification", self.tokens.user_id.as_deref().unwrap_or("*"))
    }

    async fn send(&mut self, worker: bool, call: Call<'_>, effect: Effect) -> Result<Value, Failure> {
        let token = if worker { self.tokens.worker.clone() } else { self.tokens.user.clone() };
        self.s.mutate(&token, call, effect).await
    }

    /// A user message, then an operation to answer it (queued for a worker).
    async fn chat_turn(&mut self, mixed: &Mixed) -> Result<(), Failure> {
        if self.chat.topic.is_none() || self.chat.turns >= 8 || self.chat.busy >= 2 {
            // A conversation stuck busy (its operation abandoned in an outage) is left behind.
            let topic = self.next("t");
            let vars = json!({"t": topic, "a": AGENT});
            let call = Call {
                op: "createConversation",
                query: CREATE_CONVERSATION,
                variables: vars,
                retry: Retry::NEVER,
                idempotent: false,
            };
            self.send(false, call, Effect::on(topic_stream(&topic)).id("topicId", &topic)).await?;
            self.chat = Chat { topic: Some(topic), ..Chat::default() };
        }
        let topic = self.chat.topic.clone().unwrap_or_default();
        // Usually after the latest answer; sometimes beside the last user message (the same
        // parent, which already has that child): a new branch.
        let branch = self.chat.last_user.as_ref().and_then(|(_, p)| p.clone()).filter(|_| self.s.rng.chance(20));
        let parent =
            branch.or_else(|| mixed.answer(&topic)).or_else(|| self.chat.last_user.as_ref().map(|(m, _)| m.clone()));
        let message_id = self.next("m");
        let message = json!({"messageId": message_id, "role": "user", "content": format!("question {}", self.n),
                             "parentId": parent, "requestId": message_id});
        let call = Call {
            op: "appendMessage",
            query: APPEND_MESSAGE,
            variables: json!({"t": topic, "m": message}),
            retry: Retry::CONFLICT,
            idempotent: true,
        };
        self.send(false, call, Effect::on(topic_stream(&topic)).id("messageId", &message_id)).await?;
        self.chat.last_user = Some((message_id.clone(), parent));
        self.chat.turns += 1;

        let op = self.next("o");
        let input = json!({"operationId": op, "kind": "CONVERSATION", "agentId": AGENT, "topicId": topic,
                           "model": "load-model", "provider": "local"});
        let call = Call {
            op: "startOperation",
            query: START_OPERATION,
            variables: json!({"i": input, "r": op}),
            retry: Retry::CONFLICT_OR_BUSY,
            idempotent: true,
        };
        let effect = Effect::on(operation_stream(&op)).and(topic_stream(&topic)).id("operationId", &op);
        match self.send(false, call, effect).await {
            Ok(_) => {
                self.chat.busy = 0;
                mixed.push(
                    WorkItem {
                        operation: op,
                        owner: self.tokens.user_id.clone(),
                        chat: Some((topic, message_id)),
                        task: None,
                        raced: false,
                    },
                    false,
                );
                Ok(())
            }
            Err(Failure::Refused(code)) if code == "CONVERSATION_BUSY" => {
                self.chat.busy += 1;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Take a queued operation and do it, start to finish.
    async fn work(&mut self, mixed: &Mixed) -> Result<(), Failure> {
        let Some(item) = mixed.pop() else { return self.chat_turn(mixed).await };
        if !item.raced && self.s.rng.chance(10) {
            // Another worker will try to claim it too, and lose.
            mixed.push(WorkItem { raced: true, ..item.clone() }, true);
        }
        let op = item.operation.clone();
        let worker = format!("{}-w{}", self.s.shared.run_id, self.s.client);
        let on_op = || Effect::on(operation_stream(&op)).id("operationId", &op);
        let claim = Call {
            op: "claimOperation",
            query: CLAIM,
            variables: json!({"id": op, "o": item.owner, "w": worker, "r": format!("{op}-claim-{worker}")}),
            retry: Retry::NEVER,
            idempotent: true,
        };
        let lt = match self.send(true, claim, on_op().id("workerId", &worker)).await {
            Ok(data) => lease_token(&data),
            Err(Failure::Refused(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        if self.s.rng.chance(50) {
            let renew = Call {
                op: "renewLease",
                query: RENEW,
                variables: json!({"id": op, "o": item.owner, "w": worker, "lt": lt}),
                retry: Retry::NEVER,
                idempotent: false,
            };
            self.send(true, renew, on_op()).await?;
        }
        let call_id = format!("{op}-c1");
        let input = 80 + self.s.rng.below(400);
        let output = 10 + self.s.rng.below(200);
        let vars = json!({"id": op, "o": item.owner, "lt": lt, "c": [{"id": call_id, "name": "search", "status": "succeeded"}],
                          "u": {"inputTokens": input, "outputTokens": output, "totalTokens": input + output, "costMicros": input + 3 * output},
                          "r": format!("{op}-step1")});
        let step =
            Call { op: "reportStep", query: REPORT_STEP, variables: vars, retry: Retry::CONFLICT, idempotent: true };
        self.send(true, step, on_op()).await?;
        if let Some((topic, question)) = &item.chat {
            let (answer, tool, last) = (format!("{op}-a"), format!("{op}-t"), format!("{op}-f"));
            let messages = [
                json!({"messageId": answer, "role": "assistant", "content": "Let me look that up.", "parentId": question,
                       "operationId": op, "agentId": AGENT, "model": "load-model", "provider": "local", "requestId": answer,
                       "tools": [{"id": call_id, "type": "builtin", "apiName": "search", "arguments": "{}"}]}),
                json!({"messageId": tool, "role": "tool", "content": "{\"hits\": 3}", "parentId": answer,
                       "toolCallId": call_id, "operationId": op, "requestId": tool}),
                json!({"messageId": last, "role": "assistant", "content": "Found it: 42.", "parentId": tool,
                       "operationId": op, "agentId": AGENT, "requestId": last}),
            ];
            for m in messages {
                let id = m["messageId"].as_str().unwrap_or_default().to_string();
                let call = Call {
                    op: "appendMessage",
                    query: APPEND_RUN_MESSAGE,
                    variables: json!({"t": topic, "m": m, "lt": lt, "o": item.owner}),
                    retry: Retry::CONFLICT,
                    idempotent: true,
                };
                self.send(true, call, Effect::on(topic_stream(topic)).id("messageId", &id)).await?;
            }
            mixed.set_answer(topic, &last);
        }
        let end = format!("{op}-end");
        if self.s.rng.chance(10) {
            let vars = json!({"id": op, "o": item.owner, "lt": lt, "m": "simulated failure", "r": end});
            let call =
                Call { op: "failOperation", query: FAIL, variables: vars, retry: Retry::CONFLICT, idempotent: true };
            self.send(true, call, on_op()).await?;
        } else {
            let handoff = item.task.as_ref().map(|_| {
                json!({"title": "load run", "summary": "did the work", "keyFindings": ["one", "two"], "nextAction": "repeat"})
            });
            let vars = json!({"id": op, "o": item.owner, "lt": lt, "res": "done", "h": handoff, "r": end});
            let call = Call {
                op: "completeOperation",
                query: COMPLETE,
                variables: vars,
                retry: Retry::CONFLICT,
                idempotent: true,
            };
            self.send(true, call, on_op()).await?;
        }
        Ok(())
    }

    /// A task, often depending on the previous one, and a run of it (queued for a worker).
    async fn task(&mut self, mixed: &Mixed) -> Result<(), Failure> {
        let task = self.next("k");
        let input = json!({"taskId": task, "identifier": task, "name": format!("load task {}", self.n),
                           "instruction": "Summarise the findings.", "priority": self.s.rng.below(5)});
        let call = Call {
            op: "createTask",
            query: CREATE_TASK,
            variables: json!({"i": input, "r": task}),
            retry: Retry::NEVER,
            idempotent: true,
        };
        self.send(false, call, Effect::on(task_stream(&task)).id("taskId", &task)).await?;
        if let Some(prev) = self.last_task.clone().filter(|_| self.s.rng.chance(60)) {
            let kind = if self.s.rng.chance(70) { "blocks" } else { "relates" };
            let call = Call {
                op: "addTaskDependency",
                query: ADD_DEPENDENCY,
                variables: json!({"id": task, "d": prev, "k": kind}),
                retry: Retry::CONFLICT,
                idempotent: false,
            };
            self.send(false, call, Effect::on(task_stream(&task)).id("dependsOnId", &prev)).await?;
        }
        self.last_task = Some(task.clone());
        let (topic, op) = (format!("{task}-topic1"), format!("{task}-op1"));
        let vars = json!({"id": task, "t": topic, "o": op, "r": format!("{task}-run1")});
        let call = Call { op: "runTask", query: RUN_TASK, variables: vars, retry: Retry::CONFLICT, idempotent: true };
        let effect = Effect::on(task_stream(&task)).and(operation_stream(&op)).id("operationId", &op);
        self.send(false, call, effect).await?;
        mixed.push(
            WorkItem { operation: op, owner: self.tokens.user_id.clone(), chat: None, task: Some(task), raced: false },
            false,
        );
        Ok(())
    }

    /// A decision brief, sometimes read, then resolved.
    async fn brief(&mut self) -> Result<(), Failure> {
        let brief = self.next("b");
        let input = json!({"briefId": brief, "type": "decision", "priority": "normal", "title": "Approve the plan?",
                           "summary": "The load generator asks."});
        let owner = self.tokens.user_id.clone();
        let on = || Effect::on(owned_stream("brief", owner.as_deref(), &brief)).id("briefId", &brief);
        let call = Call {
            op: "createBrief",
            query: CREATE_BRIEF,
            variables: json!({"i": input, "r": brief}),
            retry: Retry::NEVER,
            idempotent: true,
        };
        self.send(false, call, on()).await?;
        if self.s.rng.chance(50) {
            let call = Call {
                op: "markBriefRead",
                query: READ_BRIEF,
                variables: json!({"id": brief}),
                retry: Retry::CONFLICT,
                idempotent: false,
            };
            self.send(false, call, on()).await?;
        }
        let vars = json!({"id": brief, "a": "approve", "c": "fine", "r": format!("{brief}-resolve")});
        // Resolved once: a CONFLICT here means "already resolved", not a concurrent writer.
        let call =
            Call { op: "resolveBrief", query: RESOLVE_BRIEF, variables: vars, retry: Retry::NEVER, idempotent: true };
        self.send(false, call, on()).await?;
        Ok(())
    }

    /// A notification (sometimes with a dedupe key used before), then marked read.
    async fn notification(&mut self) -> Result<(), Failure> {
        let dedupe = self
            .s
            .rng
            .chance(20)
            .then(|| format!("{}-{}-dk{}", self.s.shared.run_id, self.s.client, self.s.rng.below(3)));
        let input = json!({"category": "load", "type": "load_ping", "title": "Ping", "body": format!("ping {}", self.n), "dedupeKey": dedupe});
        let mut effect = Effect::on(self.notification_stream());
        if let Some(k) = &dedupe {
            effect = effect.id("dedupeKey", k);
        }
        let call = Call {
            op: "createNotification",
            query: CREATE_NOTIFICATION,
            variables: json!({"i": input}),
            retry: Retry::CONFLICT,
            idempotent: dedupe.is_some(),
        };
        let data = self.send(false, call, effect).await?;
        let Some(id) = data["createNotification"]["notification"]["notificationId"].as_str().map(str::to_string) else {
            return Ok(());
        };
        let call = Call {
            op: "markNotificationsRead",
            query: READ_NOTIFICATIONS,
            variables: json!({"ids": [id]}),
            retry: Retry::CONFLICT,
            idempotent: false,
        };
        self.send(false, call, Effect::on(self.notification_stream()).id("notificationId", &id)).await?;
        Ok(())
    }
}
