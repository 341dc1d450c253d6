//! The write path, closed loop: each client is a worker with a run of its own that reports as
//! fast as the server answers (no think time) — one step per `reportStep`, or `batch` steps per
//! `reportBatch` — and starts the next run after [`STEPS_PER_RUN`] steps. Against
//! `agentlog-baseline` the clients instead send its one-insert `append` mutation, the floor a
//! GraphQL server over the same database can reach.

use serde_json::{Value, json};

use crate::{
    client::{Call, Effect, Failure, Retry, Session},
    mixed::{AGENT, CLAIM, REPORT_STEP, START_OPERATION, Tokens, lease_token, operation_stream},
    stats::Stats,
};

/// Steps in one run before the worker completes it and starts another.
pub const STEPS_PER_RUN: u64 = 200;

const REPORT_BATCH: &str = "mutation($id: String!, $lt: String!, $items: [BatchItemInput!]!, $r: String) { reportBatch(operationId: $id, leaseToken: $lt, items: $items, requestId: $r) { position events } }";
const COMPLETE: &str = "mutation($id: String!, $lt: String!, $r: String) { completeOperation(id: $id, leaseToken: $lt, result: \"done\", requestId: $r) { position } }";
const APPEND: &str =
    "mutation($s: String!, $p: JSON!) { append(streamId: $s, eventType: \"step_recorded\", payload: $p) { position } }";

/// One worker, until the budget is spent: runs of [`STEPS_PER_RUN`] steps, reported one per
/// request (`batch` 0 or 1: `reportStep`) or `batch` per request (`reportBatch`).
pub async fn client(mut s: Session, tokens: Tokens, batch: usize) -> Result<Stats, String> {
    match work(&mut s, &tokens.user, batch).await {
        Err(Failure::Record(e)) => Err(e),
        _ => Ok(s.stats),
    }
}

async fn work(s: &mut Session, token: &str, batch: usize) -> Result<(), Failure> {
    let per_request = batch.max(1) as u64;
    for run in 1.. {
        let op = s.id("w", run);
        let on_op = || Effect::on(operation_stream(&op)).id("operationId", &op);
        let input =
            json!({"operationId": op, "kind": "TASK", "agentId": AGENT, "model": "load-model", "provider": "local"});
        let start = Call {
            op: "startOperation",
            query: START_OPERATION,
            variables: json!({"i": input, "r": op}),
            retry: Retry::CONFLICT,
            idempotent: true,
        };
        s.mutate(token, start, on_op()).await?;
        let worker = format!("{}-w{}", s.shared.run_id, s.client);
        let claim = Call {
            op: "claimOperation",
            query: CLAIM,
            variables: json!({"id": op, "w": worker, "r": format!("{op}-claim")}),
            retry: Retry::NEVER,
            idempotent: true,
        };
        let lt = lease_token(&s.mutate(token, claim, on_op()).await?);
        let mut step = 0;
        while step < STEPS_PER_RUN {
            let r = format!("{op}-s{step}");
            let call = if batch <= 1 {
                let vars = json!({"id": op, "lt": lt, "c": [tool_call(&op, step)], "u": usage(step), "r": r});
                Call { op: "reportStep", query: REPORT_STEP, variables: vars, retry: Retry::CONFLICT, idempotent: true }
            } else {
                let items: Vec<Value> = (step..step + per_request)
                    .map(|n| json!({"step": {"phase": "ACTING", "toolCalls": [tool_call(&op, n)], "usage": usage(n)}}))
                    .collect();
                let vars = json!({"id": op, "lt": lt, "items": items, "r": r});
                Call {
                    op: "reportBatch",
                    query: REPORT_BATCH,
                    variables: vars,
                    retry: Retry::CONFLICT,
                    idempotent: true,
                }
            };
            s.mutate(token, call, on_op()).await?;
            step += per_request;
        }
        let done = Call {
            op: "completeOperation",
            query: COMPLETE,
            variables: json!({"id": op, "lt": lt, "r": format!("{op}-done")}),
            retry: Retry::CONFLICT,
            idempotent: true,
        };
        s.mutate(token, done, on_op()).await?;
    }
    Ok(())
}

fn tool_call(op: &str, n: u64) -> Value {
    json!({"id": format!("{op}-c{n}"), "name": "search", "status": "succeeded"})
}

fn usage(n: u64) -> Value {
    let (input, output) = (100 + n % 50, 20 + n % 10);
    json!({"inputTokens": input, "outputTokens": output, "totalTokens": input + output, "costMicros": input + 3 * output})
}

/// One client of `agentlog-baseline`: one `append` per request, on a stream of its own.
pub async fn baseline_client(mut s: Session, token: String) -> Result<Stats, String> {
    let stream_id = s.id("stream", 0);
    let mut n = 0u64;
    loop {
        n += 1;
        let vars =
            json!({"s": stream_id, "p": {"step": n, "usage": usage(n), "toolCalls": [tool_call(&stream_id, n)]}});
        let call = Call { op: "append", query: APPEND, variables: vars, retry: Retry::NEVER, idempotent: false };
        match s.mutate(&token, call, Effect::on(&stream_id)).await {
            Ok(_) | Err(Failure::Refused(_)) => {}
            Err(Failure::Record(e)) => return Err(e),
            Err(_) => return Ok(s.stats),
        }
    }
}
