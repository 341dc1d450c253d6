//! Fields answered with JSON that is already written (a cached conversation tree): the resolver
//! puts a placeholder string in the response, and the HTTP layer splices the cached bytes in its
//! place after serialising. The tree is written once per version and never converted to
//! GraphQL values per request.
//!
//! The placeholder carries a random per-request nonce, so no string a client stored (message
//! content, a title) can be mistaken for one. A request without this context (a websocket)
//! gets no placeholders: its resolvers answer with parsed values instead.

use std::sync::{Arc, Mutex, PoisonError};

use agentlog_projections::conversations::{TopicTree, TreeJson};
use axum::{
    body::Body,
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use serde_json::Value;

/// Which part of a tree's JSON a placeholder stands for.
pub type Select = fn(&TreeJson) -> &[u8];

/// One request's placeholders (request data on HTTP POST).
pub struct RawJson {
    nonce: String,
    parts: Mutex<Vec<(Arc<TopicTree>, Select)>>,
}

impl Default for RawJson {
    fn default() -> Self {
        RawJson { nonce: uuid::Uuid::new_v4().simple().to_string(), parts: Mutex::new(Vec::new()) }
    }
}

/// Marks the start and end of a placeholder; JSON writes it as `\u0001`.
const MARK: char = '\u{1}';

impl RawJson {
    /// A placeholder for `select(tree.json())`, to return as the field's value. The tree's JSON
    /// must already be written (`TopicTree::json` succeeded).
    pub fn placeholder(&self, tree: Arc<TopicTree>, select: Select) -> Value {
        let mut parts = self.parts.lock().unwrap_or_else(PoisonError::into_inner);
        parts.push((tree, select));
        Value::String(format!("{MARK}raw:{}:{}{MARK}", self.nonce, parts.len() - 1))
    }

    /// The HTTP answer for `response`, with every placeholder replaced by its JSON.
    pub fn respond(&self, response: async_graphql::Response) -> Response {
        let parts = std::mem::take(&mut *self.parts.lock().unwrap_or_else(PoisonError::into_inner));
        if parts.is_empty() {
            return async_graphql_axum::GraphQLResponse::from(response).into_response();
        }
        let body = match serde_json::to_vec(&response) {
            Ok(b) => b,
            Err(_) => return async_graphql_axum::GraphQLResponse::from(response).into_response(),
        };
        let body = splice(&body, &self.nonce, &parts);
        let mut resp = Response::new(Body::from(body));
        resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/graphql-response+json"));
        if response.is_ok()
            && let Some(cc) = response.cache_control.value()
            && let Ok(v) = HeaderValue::from_str(&cc)
        {
            resp.headers_mut().insert(header::CACHE_CONTROL, v);
        }
        resp.headers_mut().extend(response.http_headers);
        resp
    }
}

/// Replace each `"\u0001raw:<nonce>:<i>\u0001"` string in `body` by part `i`'s bytes.
fn splice(body: &[u8], nonce: &str, parts: &[(Arc<TopicTree>, Select)]) -> Vec<u8> {
    let prefix = format!("\"\\u0001raw:{nonce}:");
    let prefix = prefix.as_bytes();
    let extra: usize = parts.iter().filter_map(|(t, s)| t.json().ok().map(|j| s(j).len())).sum();
    let mut out = Vec::with_capacity(body.len() + extra);
    let mut rest = body;
    while let Some(at) = find(rest, prefix) {
        let after = &rest[at + prefix.len()..];
        let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
        let closes = after[digits..].starts_with(b"\\u0001\"");
        let part = std::str::from_utf8(&after[..digits]).ok().and_then(|d| d.parse::<usize>().ok());
        match (closes, part.and_then(|i| parts.get(i))) {
            (true, Some((tree, select))) => match tree.json() {
                Ok(json) => {
                    out.extend_from_slice(&rest[..at]);
                    out.extend_from_slice(select(json));
                    rest = &after[digits + b"\\u0001\"".len()..];
                }
                Err(_) => {
                    out.extend_from_slice(&rest[..at + prefix.len()]);
                    rest = after;
                }
            },
            _ => {
                out.extend_from_slice(&rest[..at + prefix.len()]);
                rest = after;
            }
        }
    }
    out.extend_from_slice(rest);
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
