//! The parser's JSON value: `serde_json::Value`'s shape, with objects that keep their keys in
//! insertion order, as a JavaScript object does.
//!
//! Upstream writes every message it passes through (`{...message, …}`) with the input's key
//! order, and the keys a spread adds after them, so byte-identical output needs the order the
//! input was read in. serde_json's own `Map` sorts keys unless its `preserve_order` feature is
//! on, and that feature is workspace-wide (features unify): it would change the JSON every other
//! crate writes and hashes. This type keeps the order here only. Reading JSON text follows
//! `JSON.parse`: a repeated key keeps its first position and takes its last value.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
pub use serde_json::Number;

/// A JSON value whose objects keep insertion order.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// `null`.
    #[default]
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number as read (printed as JavaScript prints it by the crate's writer).
    Number(Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, keys in insertion order.
    Object(Map<String, Value>),
}

/// An object: entries in insertion order, looked up by a linear scan (messages have a few dozen
/// keys at most, where a scan beats hashing). Equality ignores order, as for serde_json's map.
#[derive(Clone)]
pub struct Map<K, V> {
    entries: Vec<(K, V)>,
}

impl Default for Map<String, Value> {
    fn default() -> Self {
        Map::new()
    }
}

impl PartialEq for Map<String, Value> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl fmt::Debug for Map<String, Value> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.entries.iter().map(|(k, v)| (k, v))).finish()
    }
}

impl Map<String, Value> {
    /// An empty object.
    pub const fn new() -> Self {
        Map { entries: Vec::new() }
    }

    /// An empty object with room for `n` entries.
    pub fn with_capacity(n: usize) -> Self {
        Map { entries: Vec::with_capacity(n) }
    }

    /// The value at `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value at `key`, mutably.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Is `key` present?
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Set `key` as JavaScript assignment does: an existing key keeps its position, a new one
    /// goes last — except array-index keys (`"0"`, `"17"`), which JavaScript keeps first, in
    /// numeric order. Returns the value it replaced.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        if let Some(slot) = self.get_mut(&key) {
            return Some(std::mem::replace(slot, value));
        }
        match array_index(&key) {
            Some(n) => {
                let at = self.entries.iter().take_while(|(k, _)| array_index(k).is_some_and(|m| m < n)).count();
                self.entries.insert(at, (key, value));
            }
            None => self.entries.push((key, value)),
        }
        None
    }

    /// Remove `key` (`delete obj[key]`): the other entries keep their order.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// Entries in insertion order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&String, &Value)> + Clone {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Keys in insertion order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &String> + Clone {
        self.entries.iter().map(|(k, _)| k)
    }

    /// Values in insertion order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &Value> + Clone {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// `key` as an array index (a canonical decimal below 2^32 - 1), which JavaScript objects
/// order before every other key.
pub(crate) fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || !b.iter().all(u8::is_ascii_digit) || (b[0] == b'0' && b.len() > 1) {
        return None;
    }
    key.parse::<u64>().ok().filter(|&n| n < u64::from(u32::MAX)).map(|n| n as u32)
}

impl<'m> IntoIterator for &'m Map<String, Value> {
    type Item = (&'m String, &'m Value);
    type IntoIter =
        std::iter::Map<std::slice::Iter<'m, (String, Value)>, fn(&'m (String, Value)) -> (&'m String, &'m Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

impl FromIterator<(String, Value)> for Map<String, Value> {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        let mut m = Map::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

impl Value {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Map<String, Value>> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The object, mutably, if this is one.
    pub fn as_object_mut(&mut self) -> Option<&mut Map<String, Value>> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The array, if this is one.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The number as an f64 (what JavaScript holds), if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// `null`?
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// An object?
    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }

    /// `self[key]` of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|m| m.get(key))
    }
}

impl From<serde_json::Value> for Value {
    /// The same value; object keys come in serde_json's iteration order.
    fn from(v: serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => Value::Number(n),
            serde_json::Value::String(s) => Value::String(s),
            serde_json::Value::Array(a) => Value::Array(a.into_iter().map(Value::from).collect()),
            serde_json::Value::Object(m) => {
                // Keys are unique: push, then move array-index keys first as JavaScript orders them.
                let mut entries: Vec<(String, Value)> = m.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
                if entries.iter().any(|(k, _)| array_index(k).is_some()) {
                    entries.sort_by_key(|(k, _)| array_index(k).map_or(u64::MAX, u64::from));
                }
                Value::Object(Map { entries })
            }
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Number(n.into())
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Number(n.into())
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Number(n.into())
    }
}

impl From<Map<String, Value>> for Value {
    fn from(m: Map<String, Value>) -> Value {
        Value::Object(m)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => n.serialize(s),
            Value::String(v) => s.serialize_str(v),
            Value::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Object(m) => m.serialize(s),
        }
    }
}

impl Serialize for Map<String, Value> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Deserialize::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut m = Map::with_capacity(access.size_hint().unwrap_or(0).min(64));
        while let Some((k, v)) = access.next_entry::<String, Value>()? {
            m.insert(k, v);
        }
        Ok(Value::Object(m))
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// Read JSON text as `JSON.parse` reads it, keeping key order.
pub fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_input_order_and_repeated_keys_act_as_json_parse() {
        let v = from_str(r#"{"b":1,"a":{"z":1,"y":2},"b":3}"#).unwrap();
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"b":3,"a":{"z":1,"y":2}}"#);
    }

    #[test]
    fn insert_keeps_an_existing_position_and_remove_keeps_the_rest() {
        let Value::Object(mut m) = from_str(r#"{"a":1,"b":2,"c":3}"#).unwrap() else { panic!() };
        m.insert("a".into(), Value::from(9u64));
        m.insert("d".into(), Value::Null);
        m.remove("b");
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"a":9,"c":3,"d":null}"#);
    }

    /// As `JSON.stringify(JSON.parse(text))` prints it in Node.
    #[test]
    fn array_index_keys_come_first_in_numeric_order() {
        let v = from_str(r#"{"b":1,"10":2,"x1":3,"9":4,"01":5,"4294967295":6,"0":7}"#).unwrap();
        let want = r#"{"0":7,"9":4,"10":2,"b":1,"x1":3,"01":5,"4294967295":6}"#;
        assert_eq!(serde_json::to_string(&v).unwrap(), want);
        let from_serde = Value::from(serde_json::from_str::<serde_json::Value>(r#"{"b":1,"10":2,"9":4}"#).unwrap());
        assert_eq!(serde_json::to_string(&from_serde).unwrap(), r#"{"9":4,"10":2,"b":1}"#);
    }
}
