//! The conversations read model: `conversation_topics`, `conversation_messages` (each message
//! as the LobeHub-shaped object the conversation-flow parser reads, kept current through edits,
//! deletes and branch switches) and `conversation_threads`, folded from `conversation.*`
//! events, and `conversation_message_groups` (compression and parallel groups,
//! `message_groups`); and the conversation tree (`contextTree`, `flatList`) served from
//! [`ConversationTrees`], a per-process cache refreshed from only the rows that changed.
//!
//! ```no_run
//! # async fn demo(db: agentlog_projections::ReadDb) -> Result<(), agentlog_projections::ProjectionError> {
//! use agentlog_projections::{conversations, page::PageRequest};
//! let trees = conversations::ConversationTrees::new(db.clone(), 200_000);
//! let tree = trees.tree("user-1", "topic-1").await?;
//! let messages = conversations::topic_messages(&db, "user-1", "topic-1", false, &PageRequest::first(100)).await?;
//! # Ok(()) }
//! ```

mod message_groups;
mod message_json;
mod projection;
mod query;
mod rows;
mod tree_cache;

pub use message_groups::MessageGroupRow;
pub use projection::ConversationsProjection;
pub use query::{
    conversation, conversations, fresh_tree, parse_input, topic_message_groups, topic_messages, topic_threads,
};
pub use rows::{ConversationRow, MessageRow, ThreadRow};
pub use tree_cache::{ConversationTrees, TopicTree, TreeJson};
