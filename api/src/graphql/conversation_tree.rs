//! A topic's parsed tree (upstream's `contextTree`, `flatList`, `messageMap`) as GraphQL values,
//! served from the tree cache.

use std::sync::Arc;

use agentlog_projections::conversations::TopicTree;
use async_graphql::{Context, Json, SimpleObject};
use serde_json::Value;

use super::raw_json::RawJson;
use super::raw_json::Select;
use crate::error::ApiError;
use crate::graphql::request::app;
use crate::graphql::request::reads;

/// The parsed tree of a topic, in upstream's shape.
#[derive(SimpleObject)]
pub struct ConversationTree {
    /// Log position of the last message change the tree reflects.
    pub version: i64,
    /// Semantic nodes of the main line.
    pub context_tree: Json<Value>,
    /// The active path as render rows.
    pub flat_list: Json<Value>,
    /// Every kept message by id.
    pub message_map: Json<Value>,
    /// What was wrong with the input and how the parser handled it (`[{kind, …}]`).
    pub diagnostics: Json<Value>,
}

/// The tree's cached JSON as field values: placeholders the HTTP layer replaces with the
/// written bytes (`raw_json`), or, without that layer (websocket), the parsed values.
fn tree_json(ctx: &Context<'_>, tree: Arc<TopicTree>) -> Result<ConversationTree, ApiError> {
    let written = tree.json().map_err(|e| ApiError::Internal(format!("writing a tree: {e}")))?;
    if let Some(raw) = ctx.data_opt::<Arc<RawJson>>() {
        let part = |select: Select| Json(raw.placeholder(Arc::clone(&tree), select));
        return Ok(ConversationTree {
            version: tree.version,
            context_tree: part(|j| &j.context_tree),
            flat_list: part(|j| &j.flat_list),
            message_map: part(|j| &j.message_map),
            diagnostics: part(|j| &j.diagnostics),
        });
    }
    // serde_json stops at 128 levels of nesting: a tree branched deeper than that is refused
    // here rather than risking the stack.
    let parse = |bytes: &[u8]| {
        serde_json::from_slice(bytes)
            .map(Json)
            .map_err(|_| ApiError::Limit("the conversation tree is nested too deeply to serve as JSON".into()))
    };
    Ok(ConversationTree {
        version: tree.version,
        context_tree: parse(&written.context_tree)?,
        flat_list: parse(&written.flat_list)?,
        message_map: parse(&written.message_map)?,
        diagnostics: parse(&written.diagnostics)?,
    })
}

/// The tree of `owner`'s topic `topic_id` (a node the caller was let see).
pub(crate) async fn load_tree(ctx: &Context<'_>, owner: &str, topic_id: &str) -> Result<ConversationTree, ApiError> {
    let tree = app(ctx)
        .trees
        .tree_in(reads(ctx), owner, topic_id)
        .await?
        .ok_or_else(|| ApiError::not_found("conversation", topic_id))?;
    tree_json(ctx, tree)
}
