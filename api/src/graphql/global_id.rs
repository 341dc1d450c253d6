//! Global ids: what `node(id:)` takes and every `Node` answers as `globalId`.
//!
//! A global id is base64url (no padding) of `<Type>:<owner length>:<owner>:<id>`: the length
//! keeps owners that contain `:` unambiguous, and the owner makes ids that are unique only per
//! owner globally unique. Clients treat it as opaque. `node` answers `null` for an unknown
//! object and for another user's exactly alike (an admin sees every user's).
//!
//! ```
//! use agentlog_api::graphql::global_id::{GlobalId, NodeType};
//! let id = GlobalId::new(NodeType::Task, "alice", "t:1");
//! assert_eq!(GlobalId::parse(&id.to_string()), Some(id));
//! ```

use std::fmt;

use async_graphql::ID;
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

/// The types that implement `Node`, by their GraphQL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeType {
    /// `Task`.
    Task,
    /// `Brief`.
    Brief,
    /// `Notification`.
    Notification,
    /// `Conversation`.
    Conversation,
    /// `Agent`.
    Agent,
    /// `Group`.
    Group,
    /// `CronJob`.
    CronJob,
    /// `Operation`.
    Operation,
}

impl NodeType {
    const ALL: [Self; 8] = [
        Self::Task,
        Self::Brief,
        Self::Notification,
        Self::Conversation,
        Self::Agent,
        Self::Group,
        Self::CronJob,
        Self::Operation,
    ];

    /// The GraphQL type name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Task => "Task",
            Self::Brief => "Brief",
            Self::Notification => "Notification",
            Self::Conversation => "Conversation",
            Self::Agent => "Agent",
            Self::Group => "Group",
            Self::CronJob => "CronJob",
            Self::Operation => "Operation",
        }
    }
}

/// A decoded global id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalId {
    /// The object's type.
    pub node_type: NodeType,
    /// Its owner (user id).
    pub owner: String,
    /// Its id among the owner's objects of that type.
    pub id: String,
}

impl GlobalId {
    /// The global id of `owner`'s object `id` of type `node_type`.
    pub fn new(node_type: NodeType, owner: &str, id: &str) -> Self {
        Self { node_type, owner: owner.to_string(), id: id.to_string() }
    }

    /// Read a global id this server handed out (`None` for anything else).
    pub fn parse(text: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        let plain = String::from_utf8(bytes).ok()?;
        let (name, rest) = plain.split_once(':')?;
        let node_type = NodeType::ALL.into_iter().find(|t| t.name() == name)?;
        let (len, rest) = rest.split_once(':')?;
        let len: usize = len.parse().ok()?;
        let owner = rest.get(..len)?;
        let id = rest.get(len..)?.strip_prefix(':')?;
        if owner.is_empty() || id.is_empty() {
            return None;
        }
        Some(Self::new(node_type, owner, id))
    }

    /// As the GraphQL `ID` it is answered as.
    pub fn to_id(&self) -> ID {
        ID(self.to_string())
    }
}

impl fmt::Display for GlobalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plain = format!("{}:{}:{}:{}", self.node_type.name(), self.owner.len(), self.owner, self.id);
        f.write_str(&URL_SAFE_NO_PAD.encode(plain))
    }
}

/// The global id of `owner`'s object `id` of type `node_type`, as answered.
pub fn global_id(node_type: NodeType, owner: &str, id: &str) -> ID {
    GlobalId::new(node_type, owner, id).to_id()
}
