//! Values between GraphQL and the domain: `JSON` fields and arguments, enum wire names.

use async_graphql::Json;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A value as JSON for a `JSON` field.
pub fn json<T: serde::Serialize>(v: &T) -> Json<serde_json::Value> {
    Json(serde_json::to_value(v).unwrap_or_default())
}

/// The wire name of a serde unit enum value (`TaskStatus::Backlog` → `"backlog"`).
pub fn wire<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// Read a wire name (`"backlog"`) as its serde enum, or VALIDATION naming the field.
pub fn from_wire<T: DeserializeOwned>(field: &str, name: &str) -> Result<T, ApiError> {
    serde_json::from_value(serde_json::Value::String(name.to_string()))
        .map_err(|_| ApiError::validation(field, format!("`{name}` is not a known value")))
}

/// Decode a `JSON` argument into a domain type, or VALIDATION naming the field; a key the type
/// does not read (a misspelling) is refused too, naming it (`known_keys`).
pub fn decode<T: DeserializeOwned>(field: &str, value: Json<serde_json::Value>) -> Result<T, ApiError> {
    check_keys::<T>(field, &value.0)?;
    decode_open(field, value)
}

/// [`decode`] for a value in an outside shape whose other keys are left out by design (a message
/// as LobeHub writes it).
pub fn decode_open<T: DeserializeOwned>(field: &str, value: Json<serde_json::Value>) -> Result<T, ApiError> {
    serde_json::from_value(value.0).map_err(|e| ApiError::validation(field, e.to_string()))
}

/// Refuse a key of `value[key]` (when present) that `T` does not read, naming `field.key.…`.
pub fn check_nested<T: DeserializeOwned>(field: &str, value: &serde_json::Value, key: &str) -> Result<(), ApiError> {
    match value.get(key) {
        Some(inner) => check_keys::<T>(&format!("{field}.{key}"), inner),
        None => Ok(()),
    }
}

/// VALIDATION naming `field.key` for a key of `value` that `T` does not read
/// (`agentlog_domain::known_keys`: serde's derive tells a probe a struct's field names).
fn check_keys<T: DeserializeOwned>(field: &str, value: &serde_json::Value) -> Result<(), ApiError> {
    match agentlog_domain::known_keys::unknown_key::<T>(value) {
        Some(unknown) => Err(ApiError::validation(format!("{field}.{}", unknown.key), unknown.to_string())),
        None => Ok(()),
    }
}
