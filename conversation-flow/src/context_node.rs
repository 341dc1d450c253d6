//! The context tree's node kinds, and how each serialises as upstream writes it.

use crate::value::Value;
use serde::ser::{Serialize, SerializeMap, Serializer};

use super::node_id::NodeId;

/// One node of the context tree (`type` tags the kind, as upstream's `ContextNode`).
///
/// The rare, large kinds are boxed so the common ones (messages, groups, branches) stay small
/// in the tree's arrays. A node serialises with its keys in the order upstream's object
/// literals give them (`type` is not first: upstream writes it where its literal has it).
#[derive(Debug, Clone, PartialEq)]
pub enum ContextNode {
    /// A plain message.
    Message(MessageNode),
    /// An assistant run: its steps, signal-callback blocks and task completions.
    AssistantGroup(AssistantGroupNode),
    /// Parallel answers shown side by side.
    Compare(Box<CompareNode>),
    /// Alternative continuations of one message.
    Branch(BranchNode),
    /// A broadcast to several agents.
    AgentCouncil(Box<AgentCouncilNode>),
    /// Several async tasks spawned from one message.
    Tasks(Box<TasksNode>),
    /// Reactive turns fired by one long-running tool (inside a group).
    SignalCallbacks(Box<SignalCallbacksNode>),
}

impl Serialize for ContextNode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self {
            ContextNode::Message(n) => {
                m.serialize_entry("id", &n.id)?;
                m.serialize_entry("type", "message")?;
                if let Some(tools) = &n.tools {
                    m.serialize_entry("tools", tools)?;
                }
            }
            ContextNode::AssistantGroup(n) => {
                m.serialize_entry("children", &n.children)?;
                m.serialize_entry("id", &n.id)?;
                m.serialize_entry("type", "assistantGroup")?;
            }
            ContextNode::Compare(n) => {
                if let Some(active) = &n.active_column_id {
                    m.serialize_entry("activeColumnId", active)?;
                }
                m.serialize_entry("columns", &n.columns)?;
                m.serialize_entry("id", &n.id)?;
                m.serialize_entry("messageId", &n.message_id)?;
                m.serialize_entry("type", "compare")?;
            }
            ContextNode::Branch(n) => {
                m.serialize_entry("activeBranchIndex", &n.active_branch_index)?;
                m.serialize_entry("branches", &n.branches)?;
                m.serialize_entry("id", &n.id)?;
                m.serialize_entry("parentMessageId", &n.parent_message_id)?;
                m.serialize_entry("type", "branch")?;
            }
            ContextNode::AgentCouncil(n) => {
                m.serialize_entry("id", &n.id)?;
                m.serialize_entry("members", &n.members)?;
                m.serialize_entry("messageId", &n.message_id)?;
                m.serialize_entry("type", "agentCouncil")?;
            }
            ContextNode::Tasks(n) => {
                m.serialize_entry("children", &n.children)?;
                m.serialize_entry("id", &n.id)?;
                m.serialize_entry("messageId", &n.message_id)?;
                m.serialize_entry("type", "tasks")?;
            }
            ContextNode::SignalCallbacks(n) => {
                m.serialize_entry("callbacks", &n.callbacks)?;
                m.serialize_entry("id", &n.id)?;
                if let Some(v) = &n.source_tool_call_id {
                    m.serialize_entry("sourceToolCallId", v)?;
                }
                m.serialize_entry("sourceToolMessageId", &n.source_tool_message_id)?;
                if let Some(v) = &n.source_tool_name {
                    m.serialize_entry("sourceToolName", v)?;
                }
                m.serialize_entry("type", "signalCallbacks")?;
            }
        }
        m.end()
    }
}

/// `{id, type: 'message', tools?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageNode {
    /// The message id.
    pub id: NodeId,
    /// Ids of this step's tool results (group steps only).
    pub tools: Option<Vec<NodeId>>,
}

impl MessageNode {
    /// A message node without tools.
    pub fn plain(id: &str) -> MessageNode {
        MessageNode { id: NodeId::new(id), tools: None }
    }
}

/// `{id, type: 'assistantGroup', children}`.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantGroupNode {
    /// The chain head's id.
    pub id: NodeId,
    /// Steps, then signal-callback blocks, then task completions.
    pub children: Vec<ContextNode>,
}

/// `{id, type: 'compare', messageId, columns, activeColumnId?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareNode {
    /// `compare-<parent>-<columns>` or `compare-<group>-<n>`.
    pub id: String,
    /// The message the columns answer.
    pub message_id: Value,
    /// One node list per column.
    pub columns: Vec<Vec<ContextNode>>,
    /// The column the conversation continues from.
    pub active_column_id: Option<NodeId>,
}

/// `{id, type: 'branch', parentMessageId, activeBranchIndex, branches}`.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchNode {
    /// `branch-<parent>-<n>`.
    pub id: String,
    /// The message whose children branch.
    pub parent_message_id: NodeId,
    /// The resolved branch, or the branch count while a new branch is being created.
    pub active_branch_index: usize,
    /// One linear node list per branch.
    pub branches: Vec<Vec<ContextNode>>,
}

impl Drop for BranchNode {
    /// Branches nest as deep as the conversation; drop them with a heap stack, not recursion.
    fn drop(&mut self) {
        let mut stack: Vec<Vec<ContextNode>> = std::mem::take(&mut self.branches);
        while let Some(mut list) = stack.pop() {
            for node in &mut list {
                if let ContextNode::Branch(b) = node {
                    stack.extend(std::mem::take(&mut b.branches));
                }
            }
        }
    }
}

/// `{id, type: 'agentCouncil', messageId, members}`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCouncilNode {
    /// `agentCouncil-<tool>-<members>`.
    pub id: String,
    /// The broadcast tool message.
    pub message_id: NodeId,
    /// One node per member (tool anchors included, as upstream).
    pub members: Vec<ContextNode>,
}

/// `{id, type: 'tasks', messageId, children}`.
#[derive(Debug, Clone, PartialEq)]
pub struct TasksNode {
    /// `tasks-<parent>-<tasks>`.
    pub id: String,
    /// The message that spawned the tasks.
    pub message_id: NodeId,
    /// One message node per task.
    pub children: Vec<ContextNode>,
}

/// `{id, type: 'signalCallbacks', callbacks, sourceToolCallId, sourceToolMessageId, sourceToolName}`.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalCallbacksNode {
    /// The callback message nodes, by sequence.
    pub callbacks: Vec<ContextNode>,
    /// `signalCallbacks-<tool message id>`.
    pub id: String,
    /// From the first callback's signal.
    pub source_tool_call_id: Option<Value>,
    /// The tool result the callbacks hang off.
    pub source_tool_message_id: NodeId,
    /// From the first callback's signal.
    pub source_tool_name: Option<Value>,
}
