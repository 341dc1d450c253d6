//! Human-in-the-loop cards: the four kinds (choice, input, confirm, form), their answers, how an
//! answer is checked against its card, and what a timeout does.
//!
//! ```
//! use agentlog_domain::operations::hitl::{CardAnswer, CardKind, ChoiceOption, HitlCard};
//! let card = HitlCard::new("c1", "Deploy?", CardKind::Choice {
//!     options: vec![ChoiceOption::new("yes", "Yes"), ChoiceOption::new("no", "No")],
//!     multiple: false,
//! });
//! assert!(card.check_answer(&CardAnswer::Choice { values: vec!["yes".into()] }).is_ok());
//! assert!(card.check_answer(&CardAnswer::Choice { values: vec!["maybe".into()] }).is_err());
//! ```

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::DomainError;

/// An option of a choice card or a choice field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChoiceOption {
    /// The value an answer carries.
    pub value: String,
    /// What the human sees.
    pub label: String,
}

impl ChoiceOption {
    /// An option.
    pub fn new(value: impl Into<String>, label: impl Into<String>) -> Self {
        Self { value: value.into(), label: label.into() }
    }
}

/// The input type of a form field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    /// Free text, optionally bounded.
    Text {
        /// Longest accepted text, in characters.
        #[serde(default, rename = "maxLength", skip_serializing_if = "Option::is_none")]
        max_length: Option<u32>,
    },
    /// A number, optionally bounded (integers, to keep answers exact).
    Number {
        /// Smallest accepted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<i64>,
        /// Largest accepted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<i64>,
    },
    /// Yes or no.
    Boolean,
    /// One of the options.
    Choice {
        /// The options.
        options: Vec<ChoiceOption>,
    },
}

/// One field of a form card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FormField {
    /// Key in the answer.
    pub name: String,
    /// What the human sees.
    pub label: String,
    /// Input type.
    pub field: FieldKind,
    /// Must be answered.
    #[serde(default)]
    pub required: bool,
}

/// The four kinds of card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CardKind {
    /// Pick one (or several) of the options.
    Choice {
        /// The options.
        options: Vec<ChoiceOption>,
        /// Several may be picked.
        #[serde(default)]
        multiple: bool,
    },
    /// Free text.
    Input {
        /// Must not be empty.
        #[serde(default)]
        required: bool,
        /// Longest accepted text, in characters.
        #[serde(default, rename = "maxLength", skip_serializing_if = "Option::is_none")]
        max_length: Option<u32>,
    },
    /// Yes or no.
    Confirm,
    /// Several typed fields.
    Form {
        /// The fields.
        fields: Vec<FormField>,
    },
}

impl CardKind {
    /// The wire name of the kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Choice { .. } => "choice",
            Self::Input { .. } => "input",
            Self::Confirm => "confirm",
            Self::Form { .. } => "form",
        }
    }
}

/// An answer to a card; its kind must match the card's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CardAnswer {
    /// The picked option values.
    Choice {
        /// Picked values.
        values: Vec<String>,
    },
    /// The text.
    Input {
        /// Text.
        text: String,
    },
    /// Yes or no.
    Confirm {
        /// Confirmed.
        confirmed: bool,
    },
    /// Field name → value.
    Form {
        /// Values.
        values: BTreeMap<String, Value>,
    },
}

impl CardAnswer {
    fn kind_name(&self) -> &'static str {
        match self {
            Self::Choice { .. } => "choice",
            Self::Input { .. } => "input",
            Self::Confirm { .. } => "confirm",
            Self::Form { .. } => "form",
        }
    }
}

/// What happens when nobody answers in time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum OnTimeout {
    /// Resume as if the human had given this answer.
    UseDefault {
        /// The default answer (checked against the card when asked).
        answer: CardAnswer,
    },
    /// Resume without an answer; the agent decides.
    Continue,
    /// End the operation as failed (`hitl_timeout`).
    Fail,
    /// End the operation as cancelled.
    Cancel,
}

/// A card's timeout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CardTimeout {
    /// Seconds after asking.
    pub after_secs: u64,
    /// What the timeout does.
    pub on_timeout: OnTimeout,
}

/// A human-in-the-loop card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HitlCard {
    /// Its id.
    pub card_id: String,
    /// The question.
    pub title: String,
    /// More context for the human.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Kind and its options.
    #[serde(flatten)]
    pub kind: CardKind,
    /// Optional timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<CardTimeout>,
}

/// The longest a card may wait before its timeout fires.
pub const MAX_CARD_TIMEOUT_SECS: u64 = 365 * 86_400;

fn invalid(field: &str, reason: impl Into<String>) -> DomainError {
    DomainError::validation(format!("card.{field}"), reason)
}

fn check_options(field: &str, options: &[ChoiceOption]) -> Result<(), DomainError> {
    if options.is_empty() {
        return Err(invalid(field, "needs at least one option"));
    }
    let mut seen = BTreeSet::new();
    for option in options {
        if option.value.is_empty() {
            return Err(invalid(field, "option values must not be empty"));
        }
        if !seen.insert(option.value.as_str()) {
            return Err(invalid(field, format!("option '{}' appears twice", option.value)));
        }
    }
    Ok(())
}

impl HitlCard {
    /// A card without body or timeout.
    pub fn new(card_id: impl Into<String>, title: impl Into<String>, kind: CardKind) -> Self {
        Self { card_id: card_id.into(), title: title.into(), body: None, kind, timeout: None }
    }

    /// The same card with a timeout.
    pub fn with_timeout(mut self, after_secs: u64, on_timeout: OnTimeout) -> Self {
        self.timeout = Some(CardTimeout { after_secs, on_timeout });
        self
    }

    /// Is the card itself well-formed (ids, options, fields, default answer)?
    pub fn check(&self) -> Result<(), DomainError> {
        if self.card_id.trim().is_empty() {
            return Err(invalid("cardId", "must not be empty"));
        }
        if self.title.trim().is_empty() {
            return Err(invalid("title", "must not be empty"));
        }
        match &self.kind {
            CardKind::Choice { options, .. } => check_options("options", options)?,
            CardKind::Input { max_length: Some(0), .. } => {
                return Err(invalid("maxLength", "must be at least 1"));
            }
            CardKind::Input { .. } | CardKind::Confirm => {}
            CardKind::Form { fields } => {
                if fields.is_empty() {
                    return Err(invalid("fields", "a form needs at least one field"));
                }
                let mut names = BTreeSet::new();
                for f in fields {
                    if f.name.is_empty() {
                        return Err(invalid("fields", "field names must not be empty"));
                    }
                    if !names.insert(f.name.as_str()) {
                        return Err(invalid("fields", format!("field '{}' appears twice", f.name)));
                    }
                    match &f.field {
                        FieldKind::Choice { options } => {
                            check_options(&format!("fields.{}.options", f.name), options)?
                        }
                        FieldKind::Number { min: Some(lo), max: Some(hi) } if lo > hi => {
                            return Err(invalid(
                                &format!("fields.{}", f.name),
                                "min is greater than max",
                            ));
                        }
                        _ => {}
                    }
                }
            }
        }
        if let Some(timeout) = &self.timeout {
            if timeout.after_secs == 0 || timeout.after_secs > MAX_CARD_TIMEOUT_SECS {
                return Err(invalid("timeout.afterSecs", "must be between 1 second and 365 days"));
            }
            if let OnTimeout::UseDefault { answer } = &timeout.on_timeout {
                self.check_answer(answer).map_err(|e| match e {
                    DomainError::InvalidAnswer { reason, .. } => {
                        invalid("timeout.onTimeout.answer", reason)
                    }
                    other => other,
                })?;
            }
        }
        Ok(())
    }

    /// Does `answer` fit this card?
    pub fn check_answer(&self, answer: &CardAnswer) -> Result<(), DomainError> {
        let refuse =
            |reason: String| DomainError::InvalidAnswer { card_id: self.card_id.clone(), reason };
        match (&self.kind, answer) {
            (CardKind::Choice { options, multiple }, CardAnswer::Choice { values }) => {
                if values.is_empty() {
                    return Err(refuse("pick at least one option".into()));
                }
                if !multiple && values.len() > 1 {
                    return Err(refuse("pick exactly one option".into()));
                }
                let mut seen = BTreeSet::new();
                for v in values {
                    if !options.iter().any(|o| &o.value == v) {
                        return Err(refuse(format!("'{v}' is not one of the card's choices")));
                    }
                    if !seen.insert(v) {
                        return Err(refuse(format!("'{v}' is picked twice")));
                    }
                }
                Ok(())
            }
            (CardKind::Input { required, max_length }, CardAnswer::Input { text }) => {
                if *required && text.trim().is_empty() {
                    return Err(refuse("an answer is required".into()));
                }
                if let Some(max) = max_length {
                    let len = text.chars().count();
                    if len > *max as usize {
                        return Err(refuse(format!(
                            "the answer has {len} characters, at most {max} allowed"
                        )));
                    }
                }
                Ok(())
            }
            (CardKind::Confirm, CardAnswer::Confirm { .. }) => Ok(()),
            (CardKind::Form { fields }, CardAnswer::Form { values }) => {
                for name in values.keys() {
                    if !fields.iter().any(|f| &f.name == name) {
                        return Err(refuse(format!("the form has no field '{name}'")));
                    }
                }
                for f in fields {
                    match values.get(&f.name) {
                        None | Some(Value::Null) if f.required => {
                            return Err(refuse(format!("field '{}' is required", f.name)));
                        }
                        None | Some(Value::Null) => {}
                        Some(value) => check_field(f, value).map_err(refuse)?,
                    }
                }
                Ok(())
            }
            (kind, answer) => Err(refuse(format!(
                "a {} answer does not fit a {} card",
                answer.kind_name(),
                kind.name()
            ))),
        }
    }
}

fn check_field(field: &FormField, value: &Value) -> Result<(), String> {
    let name = &field.name;
    match (&field.field, value) {
        (FieldKind::Text { max_length }, Value::String(s)) => {
            if field.required && s.trim().is_empty() {
                return Err(format!("field '{name}' is required"));
            }
            match max_length {
                Some(max) if s.chars().count() > *max as usize => {
                    Err(format!("field '{name}' is longer than {max} characters"))
                }
                _ => Ok(()),
            }
        }
        (FieldKind::Number { min, max }, Value::Number(n)) => {
            let Some(n) = n.as_i64() else {
                return Err(format!("field '{name}' must be a whole number"));
            };
            if min.is_some_and(|lo| n < lo) || max.is_some_and(|hi| n > hi) {
                return Err(format!("field '{name}' is out of range"));
            }
            Ok(())
        }
        (FieldKind::Boolean, Value::Bool(_)) => Ok(()),
        (FieldKind::Choice { options }, Value::String(s)) => {
            if options.iter().any(|o| &o.value == s) {
                Ok(())
            } else {
                Err(format!("'{s}' is not one of the choices of field '{name}'"))
            }
        }
        (kind, _) => Err(format!("field '{name}' expects {}", expected(kind))),
    }
}

fn expected(kind: &FieldKind) -> &'static str {
    match kind {
        FieldKind::Text { .. } => "text",
        FieldKind::Number { .. } => "a number",
        FieldKind::Boolean => "true or false",
        FieldKind::Choice { .. } => "one of its choices",
    }
}
