//! The keys a type reads, asked of the type itself: serde's derive hands a struct's field
//! names to `Deserializer::deserialize_struct`, so a deserializer that answers nothing but
//! records them (`Probe`) learns them without a value. A `JSON` argument's key outside them is a
//! misspelling or a field that does not exist: the server refuses it instead of dropping it.
//!
//! Only plain structs name their fields this way. A struct with a flattened field, a map or an
//! enum asks for a map or anything (`deserialize_map`, `deserialize_any`): its keys are not
//! checked here ([`fields_of`] answers `None`).

use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

/// A key of a value that its type does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// The key.
    pub key: String,
    /// The keys the type reads.
    pub known: &'static [&'static str],
}

impl std::fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown field `{}`, expected one of: {}", self.key, self.known.join(", "))
    }
}

/// The first key of `value` that `T` does not read: `value` an object, or an array of objects
/// (`T` a list); anything else, and a `T` whose keys are not known ([`fields_of`]), has none.
pub fn unknown_key<T: DeserializeOwned>(value: &Value) -> Option<UnknownKey> {
    let known = fields_of::<T>()?;
    let objects: Vec<&serde_json::Map<String, Value>> = match value {
        Value::Object(o) => vec![o],
        Value::Array(items) => items.iter().filter_map(Value::as_object).collect(),
        _ => return None,
    };
    objects
        .into_iter()
        .find_map(|object| object.keys().find(|k| !known.contains(&k.as_str())))
        .map(|key| UnknownKey { key: key.clone(), known })
}

/// The field names `T` reads when it is a plain struct, or a list or option of one.
pub fn fields_of<T: DeserializeOwned>() -> Option<&'static [&'static str]> {
    match T::deserialize(Probe) {
        Err(Probed::Fields(fields)) => Some(fields),
        _ => None,
    }
}

/// What the probe learned; always an "error", so deserialization stops at once.
#[derive(Debug)]
enum Probed {
    Fields(&'static [&'static str]),
    Other,
}

impl fmt::Display for Probed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("probed")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Probed::Other
    }
}

/// A deserializer with no value: it records a struct's field names, looks through an option or
/// a list to their element, and answers anything else with `Probed::Other`.
struct Probe;

impl<'de> Deserializer<'de> for Probe {
    type Error = Probed;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probed> {
        Err(Probed::Other)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Probed> {
        Err(Probed::Fields(fields))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probed> {
        visitor.visit_some(Probe)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probed> {
        visitor.visit_seq(OneElement)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Probed> {
        visitor.visit_newtype_struct(Probe)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct tuple tuple_struct map enum identifier ignored_any
    }
}

/// A list's first element, probed.
struct OneElement;

impl<'de> SeqAccess<'de> for OneElement {
    type Error = Probed;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Probed> {
        seed.deserialize(Probe).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Plain {
        task_id: String,
        #[serde(default)]
        max_topics: Option<u32>,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Flattened {
        #[serde(flatten)]
        inner: Plain,
    }

    #[test]
    fn a_plain_struct_names_its_fields_through_options_and_lists() {
        assert_eq!(fields_of::<Plain>(), Some(&["taskId", "maxTopics"][..]));
        assert_eq!(fields_of::<Option<Plain>>(), Some(&["taskId", "maxTopics"][..]));
        assert_eq!(fields_of::<Vec<Plain>>(), Some(&["taskId", "maxTopics"][..]));
        assert_eq!(fields_of::<Flattened>(), None, "a flattened struct reads a map");
        assert_eq!(fields_of::<serde_json::Value>(), None);
        assert_eq!(fields_of::<String>(), None);
    }

    #[test]
    fn a_key_the_type_does_not_read_is_named() {
        assert_eq!(unknown_key::<Plain>(&json!({"taskId": "t", "maxTopics": 2})), None);
        let e =
            unknown_key::<Plain>(&json!({"taskId": "t", "maxTopic": 2})).expect("a misspelling");
        assert_eq!(e.key, "maxTopic");
        assert!(e.to_string().contains("taskId, maxTopics"), "{e}");
        assert!(unknown_key::<Vec<Plain>>(&json!([{"taskId": "t"}, {"task": "u"}])).is_some());
        assert_eq!(
            unknown_key::<Flattened>(&json!({"anything": 1})),
            None,
            "not known: not checked"
        );
        assert_eq!(unknown_key::<Plain>(&json!("text")), None, "not an object: left to serde");
    }
}
