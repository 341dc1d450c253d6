//! How typed events become stored JSON and back, including schema evolution.
//!
//! Each aggregate declares its event enum with [`domain_events!`](crate::domain_events): one variant per event type,
//! each wrapping a payload struct, with its dotted event type and current schema version. The
//! macro writes the [`DomainEvent`](crate::aggregate::DomainEvent) impl.
//!
//! # Schema evolution (the upcast rule)
//!
//! - A stored event is never rewritten. Its `schema_version` says which payload shape it has.
//! - Changing a payload's shape bumps that event type's version by one and adds one upcast
//!   step `vN → vN+1`: a pure function on the JSON payload. Reading an old event runs the steps
//!   in order until the current version, then deserializes the current struct.
//! - Writers always write the current version. Adding an optional field (`#[serde(default)]`)
//!   needs no new version; renaming, moving or retyping a field does.
//! - A version above the current one (written by newer code) or below 1 is refused with
//!   [`DecodeError::UnsupportedVersion`]; an unknown event type with
//!   [`DecodeError::UnknownEventType`]. Nothing is guessed.

use serde::Serialize;
use serde_json::Value;

use crate::error::DecodeError;

/// One upcast step: the payload of `event_type` at version `from` turned into version `from + 1`.
pub type UpcastStep = fn(event_type: &str, from: i32, payload: Value) -> Result<Value, DecodeError>;

/// The upcast step of event enums that have never changed shape: there is no step to take.
pub fn no_upcasts(event_type: &str, from: i32, _payload: Value) -> Result<Value, DecodeError> {
    Err(DecodeError::UnsupportedVersion {
        event_type: event_type.to_string(),
        version: from,
        current: from,
    })
}

/// Bring `payload` stored at `version` to `current` by running `step` once per version.
pub fn upcast_to_current(
    event_type: &str,
    version: i32,
    current: i32,
    payload: &Value,
    step: UpcastStep,
) -> Result<Value, DecodeError> {
    if version < 1 || version > current {
        return Err(DecodeError::UnsupportedVersion {
            event_type: event_type.to_string(),
            version,
            current,
        });
    }
    let mut payload = payload.clone();
    for from in version..current {
        payload = step(event_type, from, payload)?;
    }
    Ok(payload)
}

/// Serialize a payload struct to a JSON object.
///
/// Payload structs are plain data with string map keys, so serialization cannot fail; if it
/// ever did, the error is kept in the payload (and caught by the round-trip property tests)
/// rather than panicking inside a decision.
pub fn payload_of<T: Serialize>(payload: &T) -> Value {
    serde_json::to_value(payload)
        .unwrap_or_else(|e| serde_json::json!({ "payloadEncodeError": e.to_string() }))
}

/// Decode a payload struct of `event_type` stored at `version` (current: `current`): read in
/// place when it is current (no copy of the JSON), else upcast first.
pub fn decode_payload<T: serde::de::DeserializeOwned>(
    event_type: &str,
    version: i32,
    current: i32,
    payload: &Value,
    step: UpcastStep,
) -> Result<T, DecodeError> {
    if version == current {
        return T::deserialize(payload).map_err(|e| DecodeError::InvalidPayload {
            event_type: event_type.to_string(),
            version,
            reason: e.to_string(),
        });
    }
    let upcast = upcast_to_current(event_type, version, current, payload, step)?;
    payload_from(event_type, current, upcast)
}

/// [`decode_payload`] from the payload's stored JSON text: a current one is read straight into
/// its struct, with no `serde_json::Value` between (a rebuild decodes a million of them); an
/// older one is parsed and upcast first.
pub fn decode_payload_str<T: serde::de::DeserializeOwned>(
    event_type: &str,
    version: i32,
    current: i32,
    text: &str,
    step: UpcastStep,
) -> Result<T, DecodeError> {
    let invalid = |e: serde_json::Error| DecodeError::InvalidPayload {
        event_type: event_type.to_string(),
        version,
        reason: e.to_string(),
    };
    if version == current {
        return serde_json::from_str(text).map_err(invalid);
    }
    let payload: Value = serde_json::from_str(text).map_err(invalid)?;
    let upcast = upcast_to_current(event_type, version, current, &payload, step)?;
    payload_from(event_type, current, upcast)
}

/// Deserialize a payload struct of `event_type` (already upcast to `version`).
pub fn payload_from<T: serde::de::DeserializeOwned>(
    event_type: &str,
    version: i32,
    payload: Value,
) -> Result<T, DecodeError> {
    serde_json::from_value(payload).map_err(|e| DecodeError::InvalidPayload {
        event_type: event_type.to_string(),
        version,
        reason: e.to_string(),
    })
}

/// Declare an aggregate's event enum and its [`DomainEvent`](crate::aggregate::DomainEvent) impl.
///
/// ```ignore
/// domain_events! {
///     /// Events of a brief.
///     pub enum BriefEvent (upcast = no_upcasts, key = no_idempotency_key) {
///         /// A brief was created.
///         Created(BriefCreated) = "brief.created" v 1,
///     }
/// }
/// ```
#[macro_export]
macro_rules! domain_events {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident (upcast = $upcast:path, key = $key:path) {
            $(
                $(#[$vmeta:meta])*
                $variant:ident($payload:ty) = $etype:literal v $version:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        // Events are plain values moved once into the log; boxing the big ones buys nothing.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant($payload), )+
        }

        impl $crate::aggregate::DomainEvent for $name {
            fn event_type(&self) -> &'static str {
                match self { $( Self::$variant(_) => $etype, )+ }
            }

            fn schema_version(&self) -> i32 {
                match self { $( Self::$variant(_) => $version, )+ }
            }

            fn to_payload(&self) -> serde_json::Value {
                match self { $( Self::$variant(p) => $crate::event_codec::payload_of(p), )+ }
            }

            fn decode(
                event_type: &str,
                schema_version: i32,
                payload: &serde_json::Value,
            ) -> Result<Self, $crate::error::DecodeError> {
                match event_type {
                    $(
                        $etype => $crate::event_codec::decode_payload::<$payload>(
                            event_type, schema_version, $version, payload, $upcast,
                        )
                        .map(Self::$variant),
                    )+
                    other => Err($crate::error::DecodeError::UnknownEventType {
                        event_type: other.to_string(),
                    }),
                }
            }

            fn decode_str(
                event_type: &str,
                schema_version: i32,
                text: &str,
            ) -> Result<Self, $crate::error::DecodeError> {
                match event_type {
                    $(
                        $etype => $crate::event_codec::decode_payload_str::<$payload>(
                            event_type, schema_version, $version, text, $upcast,
                        )
                        .map(Self::$variant),
                    )+
                    other => Err($crate::error::DecodeError::UnknownEventType {
                        event_type: other.to_string(),
                    }),
                }
            }

            fn idempotency_key(&self) -> Option<String> {
                $key(self)
            }

            fn event_types() -> &'static [(&'static str, i32)] {
                &[ $( ($etype, $version), )+ ]
            }
        }
    };
}

/// The idempotency key of event enums whose ids all come from the command id.
pub fn no_idempotency_key<E>(_event: &E) -> Option<String> {
    None
}

/// Serde for `Option<Option<T>>` fields that distinguish "not given" (field absent) from "set
/// to nothing" (`null`), e.g. a patch that makes a limit unlimited. Use with
/// `#[serde(default, skip_serializing_if = "Option::is_none", with = "crate::event_codec::double_option")]`.
pub mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// `None` is skipped by `skip_serializing_if`; `Some(None)` is `null`; `Some(Some(v))` is `v`.
    pub fn serialize<S: Serializer, T: Serialize>(
        value: &Option<Option<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }

    /// A present field (even `null`) is `Some(..)`; an absent one falls back to `default`.
    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
}
