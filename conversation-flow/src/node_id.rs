//! [`NodeId`]: a message id held by the context tree, inline while short.
//!
//! The context tree names a message per node (and per tool result of a group step); as owned
//! `String`s that was one allocation and one free per message, a visible share of a parse.
//! Message ids are short (LobeHub's are 18 bytes), so they are stored inline up to
//! [`NodeId::INLINE`] bytes and on the heap beyond.

use std::fmt;
use std::ops::Deref;

use serde::{Serialize, Serializer};

/// A message id in the context tree. Derefs to `str`; serialises as a JSON string.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct NodeId(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// The first `len` bytes are the id (the rest are zero, so derived equality holds).
    Inline {
        len: u8,
        bytes: [u8; NodeId::INLINE],
    },
    Heap(Box<str>),
}

impl NodeId {
    /// The longest id stored without an allocation (the enum then fits in 24 bytes, a
    /// `String`'s size).
    pub const INLINE: usize = 22;

    /// The id `s`.
    pub fn new(s: &str) -> NodeId {
        if s.len() <= Self::INLINE {
            let mut bytes = [0u8; Self::INLINE];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            NodeId(Repr::Inline { len: s.len() as u8, bytes })
        } else {
            NodeId(Repr::Heap(s.into()))
        }
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // The bytes were copied whole from a `&str`, so they are UTF-8; the fallback is
            // unreachable and only avoids `unsafe`.
            Repr::Inline { len, bytes } => std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default(),
            Repr::Heap(s) => s,
        }
    }
}

impl Deref for NodeId {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for NodeId {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for NodeId {
    fn from(s: &str) -> NodeId {
        NodeId::new(s)
    }
}

impl PartialEq<str> for NodeId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for NodeId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for NodeId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::NodeId;

    #[test]
    fn short_and_long_ids_read_back() {
        for s in ["", "msg_kRLcsybSGe3zTg", "exactly-22-bytes-long!", "a much longer id than twenty-two bytes"] {
            let id = NodeId::new(s);
            assert_eq!(id.as_str(), s);
            assert_eq!(serde_json::to_string(&id).ok(), serde_json::to_string(s).ok());
        }
        assert_eq!(std::mem::size_of::<NodeId>(), std::mem::size_of::<String>());
    }
}
