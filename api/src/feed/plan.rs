//! Which subscribe messages the feed serves: an `events` subscription whose document has one
//! shape the engine would accept as is. Anything else (fragments, directives, other fields,
//! variables of another type, several operations) is left to the engine, which answers it —
//! errors included — exactly as before.

use async_graphql::{
    InputType, Name, Pos, Value, Variables,
    parser::{
        parse_query,
        types::{BaseType, OperationType, Selection, Type},
    },
};
use serde::Deserialize;

use crate::graphql::{events::EventFilterInput, variables::selected_operation};

/// A client's `subscribe` (graphql-transport-ws) or `start` (graphql-ws) message: its request
/// (the id is read with the message's type, `oversized::Envelope`).
#[derive(Deserialize)]
pub struct Subscribe {
    pub payload: Payload,
}

/// The GraphQL request a subscribe message carries.
#[derive(Deserialize)]
pub struct Payload {
    pub query: String,
    #[serde(default)]
    pub variables: Option<serde_json::Value>,
    #[serde(default, rename = "operationName")]
    pub operation_name: Option<String>,
}

/// One field of `Event`, as a selection names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventField {
    Position,
    EventId,
    StreamId,
    StreamVersion,
    EventType,
    SchemaVersion,
    Payload,
    Metadata,
    RootSourceId,
    ParentNodeId,
    UserId,
    RecordedAt,
    Typename,
}

impl EventField {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "position" => Self::Position,
            "eventId" => Self::EventId,
            "streamId" => Self::StreamId,
            "streamVersion" => Self::StreamVersion,
            "eventType" => Self::EventType,
            "schemaVersion" => Self::SchemaVersion,
            "payload" => Self::Payload,
            "metadata" => Self::Metadata,
            "rootSourceId" => Self::RootSourceId,
            "parentNodeId" => Self::ParentNodeId,
            "userId" => Self::UserId,
            "recordedAt" => Self::RecordedAt,
            "__typename" => Self::Typename,
            _ => return None,
        })
    }
}

/// An `events` subscription the feed serves: its arguments and what each event renders as.
#[derive(Debug)]
pub struct Plan {
    /// The field's response key (`events` or its alias).
    pub key: String,
    /// Where the field is in the document (for an error's `locations`).
    pub pos: Pos,
    /// Response key and field of each selected field, in document order.
    pub fields: Vec<(String, EventField)>,
    pub from_position: Option<i64>,
    pub filter: Option<EventFilterInput>,
    pub settled: bool,
}

/// The plan of `payload`, or `None` when the engine should serve it.
pub fn plan(payload: &Payload) -> Option<Plan> {
    let doc = parse_query(&payload.query).ok()?;
    if !doc.fragments.is_empty() {
        return None;
    }
    let op = selected_operation(&doc, payload.operation_name.as_deref())?;
    if op.ty != OperationType::Subscription || !op.directives.is_empty() {
        return None;
    }
    let [root] = op.selection_set.node.items.as_slice() else { return None };
    let Selection::Field(field) = &root.node else { return None };
    let field_pos = field.pos;
    let field = &field.node;
    if field.name.node != "events" || !field.directives.is_empty() {
        return None;
    }
    let mut fields: Vec<(String, EventField)> = Vec::new();
    for item in &field.selection_set.node.items {
        let Selection::Field(sub) = &item.node else { return None };
        let sub = &sub.node;
        if !sub.arguments.is_empty() || !sub.directives.is_empty() || !sub.selection_set.node.items.is_empty() {
            return None;
        }
        let key = sub.response_key().node.to_string();
        // The engine merges a repeated response key; the feed leaves that to it.
        if fields.iter().any(|(k, _)| *k == key) {
            return None;
        }
        fields.push((key, EventField::named(&sub.name.node)?));
    }
    if fields.is_empty() {
        return None;
    }

    // Each variable is declared once, with the type of the one argument that uses it, and used.
    let variables = Variables::from_json(payload.variables.clone().unwrap_or(serde_json::Value::Null));
    let mut used: Vec<&str> = Vec::new();
    let mut from_position = None;
    let mut filter = None;
    let mut settled = false;
    let mut seen: Vec<&str> = Vec::new();
    for (name, value) in &field.arguments {
        let name = name.node.as_str();
        if seen.contains(&name) {
            return None;
        }
        seen.push(name);
        let (expected_type, non_null_only) = match name {
            "fromPosition" => ("Int", false),
            "filter" => ("EventFilterInput", false),
            "settled" => ("Boolean", true),
            _ => return None,
        };
        let value = value.node.clone().into_const_with(|var: Name| {
            let def = op.variable_definitions.iter().find(|d| d.node.name.node == var).ok_or(())?;
            let def = &def.node;
            if !def.directives.is_empty() || !is_named(&def.var_type.node, expected_type, non_null_only) {
                return Err(());
            }
            used.push(def.name.node.as_str());
            match (variables.get(&var), &def.default_value) {
                (Some(v), _) => Ok(v.clone()),
                (None, Some(default)) => Ok(default.node.clone()),
                (None, None) => Ok(Value::Null),
            }
        });
        let value = value.ok()?;
        match name {
            // A negative position is the engine's to refuse (VALIDATION).
            "fromPosition" => {
                from_position = <Option<i64> as InputType>::parse(Some(value)).ok()?;
                if from_position.is_some_and(|p| p < 0) {
                    return None;
                }
            }
            "filter" => {
                // Its coercion ignores a field the input type lacks; the engine's validation refuses it.
                if let Value::Object(fields) = &value
                    && !fields.keys().all(|k| FILTER_FIELDS.contains(&k.as_str()))
                {
                    return None;
                }
                filter = <Option<EventFilterInput> as InputType>::parse(Some(value)).ok()?;
            }
            _ => settled = <bool as InputType>::parse(Some(value)).ok()?,
        }
    }
    // The engine refuses a declared variable no argument uses, and one declared twice.
    for def in &op.variable_definitions {
        let name = def.node.name.node.as_str();
        if used.iter().filter(|u| **u == name).count() != 1
            || op.variable_definitions.iter().filter(|d| d.node.name.node == name).count() != 1
        {
            return None;
        }
    }
    Some(Plan { key: field.response_key().node.to_string(), pos: field_pos, fields, from_position, filter, settled })
}

/// The fields of `EventFilterInput`.
const FILTER_FIELDS: [&str; 4] = ["eventTypes", "streamPrefix", "rootSourceId", "userId"];

/// `ty` is the named type `name` (nullable, or non-null when `non_null_only`, or either).
fn is_named(ty: &Type, name: &str, non_null_only: bool) -> bool {
    matches!(&ty.base, BaseType::Named(n) if n == name) && (!non_null_only || !ty.nullable)
}
