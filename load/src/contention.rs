//! Every client on the same things at once: one conversation, one task, one operation. First
//! they all race to claim the operation (one wins, the rest get CONFLICT) and to start a second
//! operation on the conversation (CONVERSATION_BUSY: its first is unfinished); then each
//! repeatedly appends a message to the conversation (all beside each other under one root
//! message: branches), comments on the task and reports a step on the operation with the lease
//! token its claim got, retrying a CONFLICT as a client would. Only the claim's winner holds a
//! token: every other client's steps are refused with CONFLICT and write nothing.

use std::time::Duration;

use serde_json::json;
use tokio::sync::Barrier;

use crate::{
    client::{Call, Effect, Failure, Retry, Session},
    mixed::{
        AGENT, APPEND_MESSAGE, CLAIM, CREATE_TASK, REPORT_STEP, START_OPERATION, lease_token, operation_stream,
        task_stream, topic_stream,
    },
    stats::Stats,
};

const CREATE_CONVERSATION: &str =
    "mutation($t: String!, $a: String) { createConversation(topicId: $t, agentId: $a) { position } }";
const ADD_COMMENT: &str = "mutation($id: String!, $c: String!, $x: String!) { addTaskComment(id: $id, commentId: $c, content: $x) { position } }";

/// What everyone contends for.
#[derive(Debug)]
pub struct Contended {
    /// The conversation.
    pub topic: String,
    /// Its first message, the parent of every other.
    pub root: String,
    /// The task.
    pub task: String,
    /// The operation (on the conversation, so the conversation is busy).
    pub operation: String,
    /// Every client races before any goes on (so the races are all run whatever the budget).
    pub raced: Barrier,
}

/// Create the conversation with its root message, the task and the operation, for `clients`.
pub async fn setup(s: &mut Session, token: &str, clients: usize) -> Result<Contended, Failure> {
    let run = s.shared.run_id.clone();
    let c = Contended {
        topic: format!("{run}-topic"),
        root: format!("{run}-root"),
        task: format!("{run}-task"),
        operation: format!("{run}-op"),
        raced: Barrier::new(clients),
    };
    let conv = topic_stream(&c.topic);
    let call = Call {
        op: "createConversation",
        query: CREATE_CONVERSATION,
        variables: json!({"t": c.topic, "a": AGENT}),
        retry: Retry::NEVER,
        idempotent: false,
    };
    s.mutate(token, call, Effect::on(&conv).id("topicId", &c.topic)).await?;
    let root = json!({"messageId": c.root, "role": "user", "content": "root", "requestId": c.root});
    let call = Call {
        op: "appendMessage",
        query: APPEND_MESSAGE,
        variables: json!({"t": c.topic, "m": root}),
        retry: Retry::CONFLICT,
        idempotent: true,
    };
    s.mutate(token, call, Effect::on(&conv).id("messageId", &c.root)).await?;
    let input = json!({"taskId": c.task, "identifier": c.task, "instruction": "Everyone at once."});
    let call = Call {
        op: "createTask",
        query: CREATE_TASK,
        variables: json!({"i": input, "r": c.task}),
        retry: Retry::NEVER,
        idempotent: true,
    };
    s.mutate(token, call, Effect::on(task_stream(&c.task)).id("taskId", &c.task)).await?;
    let input = json!({"operationId": c.operation, "kind": "CONVERSATION", "agentId": AGENT, "topicId": c.topic});
    let call = Call {
        op: "startOperation",
        query: START_OPERATION,
        variables: json!({"i": input, "r": c.operation}),
        retry: Retry::CONFLICT,
        idempotent: true,
    };
    let effect = Effect::on(operation_stream(&c.operation)).and(&conv).id("operationId", &c.operation);
    s.mutate(token, call, effect).await?;
    Ok(c)
}

/// One contending client, until the budget is spent.
pub async fn client(mut s: Session, token: String, c: &Contended) -> Result<Stats, String> {
    let result = contend(&mut s, &token, c).await;
    match result {
        Err(Failure::Record(e)) => Err(e),
        _ => Ok(s.stats),
    }
}

async fn contend(s: &mut Session, token: &str, c: &Contended) -> Result<(), Failure> {
    let conv = topic_stream(&c.topic);
    let on_op = || Effect::on(operation_stream(&c.operation)).id("operationId", &c.operation);
    let worker = format!("{}-w{}", s.shared.run_id, s.client);
    let claim = Call {
        op: "claimOperation",
        query: CLAIM,
        variables: json!({"id": c.operation, "w": worker, "r": format!("claim-{worker}")}),
        retry: Retry::NEVER,
        idempotent: true,
    };
    // A loser has no token and reports with an empty one (refused, as a stale worker's would be).
    let lt = match s.mutate(token, claim, on_op().id("workerId", &worker)).await {
        Ok(data) => lease_token(&data),
        Err(Failure::Refused(_)) => String::new(),
        Err(e) => return Err(e),
    };
    let second = s.id("o", 0);
    let input = json!({"operationId": second, "kind": "CONVERSATION", "agentId": AGENT, "topicId": c.topic});
    let start = Call {
        op: "startOperation",
        query: START_OPERATION,
        variables: json!({"i": input, "r": second}),
        retry: Retry::NEVER,
        idempotent: true,
    };
    let effect = Effect::on(operation_stream(&second)).and(&conv).id("operationId", &second);
    let raced = ignore_refusal(s.mutate(token, start, effect).await);
    // A client that stopped early never arrives: the others go on after a while.
    let _ = tokio::time::timeout(Duration::from_secs(30), c.raced.wait()).await;
    raced?;
    let mut n = 0u64;
    loop {
        n += 1;
        let m = s.id("m", n);
        let message = json!({"messageId": m, "role": "user", "content": format!("me too {n}"), "parentId": c.root, "requestId": m});
        let call = Call {
            op: "appendMessage",
            query: APPEND_MESSAGE,
            variables: json!({"t": c.topic, "m": message}),
            retry: Retry::CONFLICT,
            idempotent: true,
        };
        ignore_refusal(s.mutate(token, call, Effect::on(&conv).id("messageId", &m)).await)?;
        let comment = s.id("c", n);
        let vars = json!({"id": c.task, "c": comment, "x": format!("comment {n}")});
        let call = Call {
            op: "addTaskComment",
            query: ADD_COMMENT,
            variables: vars,
            retry: Retry::CONFLICT,
            idempotent: false,
        };
        ignore_refusal(s.mutate(token, call, Effect::on(task_stream(&c.task)).id("commentId", &comment)).await)?;
        let vars = json!({"id": c.operation, "lt": lt, "c": [{"id": format!("{}-{n}", s.client), "name": "lookup"}],
                          "u": {"totalTokens": 10}, "r": s.id("s", n)});
        // A loser's refusal is final: retrying a report without the lease cannot succeed.
        let retry = if lt.is_empty() { Retry::NEVER } else { Retry::CONFLICT };
        let call = Call { op: "reportStep", query: REPORT_STEP, variables: vars, retry, idempotent: true };
        ignore_refusal(s.mutate(token, call, on_op()).await)?;
    }
}

/// A refusal is an outcome (counted in the figures); stop only when the budget is spent, a
/// record cannot be written, or the server is gone.
fn ignore_refusal(r: Result<serde_json::Value, Failure>) -> Result<(), Failure> {
    match r {
        Ok(_) | Err(Failure::Refused(_)) => Ok(()),
        Err(e) => Err(e),
    }
}
