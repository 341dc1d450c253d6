//! The few JavaScript value semantics the upstream parser leans on.
//!
//! Upstream is TypeScript working on plain objects, so its decisions are phrased in JS terms:
//! truthiness (`if (msg.error)`), strict equality (`m.agentId === groupAgentId`), `Map` keys,
//! `a.createdAt - b.createdAt` sorts and `Math.min` over timestamps. Reproducing the output
//! exactly means reproducing those semantics over `serde_json::Value`, in one place.

use std::cmp::Ordering;

use crate::value::Value;

/// JS truthiness of an optional (possibly absent) value.
pub(crate) fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

/// `x && x.length > 0` for arrays and strings (the only JSON values with a `length`).
pub(crate) fn non_empty(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        _ => false,
    }
}

/// A field of an object, treating non-objects as having no fields (`metadata?.x`).
pub(crate) fn field<'a>(obj: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    obj.and_then(Value::as_object).and_then(|m| m.get(key))
}

/// A message timestamp as epoch milliseconds.
///
/// Numbers are taken as they are; ISO-8601 strings are parsed (upstream's later `toTime`,
/// see docs/conversation-flow.md); `null` is 0 and booleans 0/1 like `new Date(x)`; anything
/// else is NaN.
pub(crate) fn time_of(v: Option<&Value>) -> f64 {
    match v {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => parse_date(s),
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        _ => f64::NAN,
    }
}

fn parse_date(s: &str) -> f64 {
    let s = s.trim();
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(s) {
        return dt.timestamp_millis() as f64;
    }
    // Date-time without an offset and date-only forms; JS reads the former as local time,
    // we read both as UTC so a parse never depends on the machine's time zone.
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(s, fmt) {
            return dt.and_utc().timestamp_millis() as f64;
        }
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return d.and_hms_opt(0, 0, 0).map_or(f64::NAN, |dt| dt.and_utc().timestamp_millis() as f64);
    }
    f64::NAN
}

/// A total order on timestamps for sorting: NaN (unknown) sorts after every known time.
pub(crate) fn cmp_time(a: f64, b: f64) -> Ordering {
    let key = |t: f64| if t.is_nan() { f64::INFINITY } else { t };
    key(a).total_cmp(&key(b))
}

/// JS `ToNumber` for the JSON values that can reach arithmetic.
pub(crate) fn to_number(v: Option<&Value>) -> f64 {
    match v {
        None => f64::NAN,
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => {
            let t = s.trim();
            if t.is_empty() { 0.0 } else { t.parse::<f64>().unwrap_or(f64::NAN) }
        }
        Some(Value::Array(_) | Value::Object(_)) => f64::NAN,
    }
}

/// A JS number as JSON, the way `JSON.stringify` writes it: integral values as integers,
/// NaN and infinities as `null`.
pub(crate) fn js_number(f: f64) -> Value {
    if !f.is_finite() {
        return Value::Null;
    }
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        return if f >= 0.0 { Value::from(f as u64) } else { Value::from(f as i64) };
    }
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// The result of JS `+` over JSON-ish operands: a number or a string.
#[derive(Debug, Clone)]
pub(crate) enum JsSum {
    Num(f64),
    Str(String),
}

impl JsSum {
    /// `(acc || 0) + v` as upstream writes its running sums.
    pub(crate) fn add_or_zero(acc: Option<&JsSum>, v: &Value) -> JsSum {
        let left = match acc {
            Some(JsSum::Num(n)) if *n != 0.0 && !n.is_nan() => JsSum::Num(*n),
            Some(JsSum::Str(s)) if !s.is_empty() => JsSum::Str(s.clone()),
            _ => JsSum::Num(0.0),
        };
        match (left, v) {
            (JsSum::Num(a), Value::String(s)) => JsSum::Str(format!("{}{}", num_to_string(a), s)),
            (JsSum::Str(a), Value::String(s)) => JsSum::Str(format!("{a}{s}")),
            (JsSum::Str(a), other) => JsSum::Str(format!("{a}{}", value_to_string(other))),
            (JsSum::Num(a), Value::Array(_) | Value::Object(_)) => {
                JsSum::Str(format!("{}{}", num_to_string(a), value_to_string(v)))
            }
            (JsSum::Num(a), other) => JsSum::Num(a + to_number(Some(other))),
        }
    }

    /// The sum as JSON.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            JsSum::Num(n) => js_number(*n),
            JsSum::Str(s) => Value::String(s.clone()),
        }
    }
}

fn num_to_string(n: f64) -> String {
    if n.is_nan() {
        "NaN".to_owned()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity".to_owned() } else { "-Infinity".to_owned() }
    } else {
        crate::js_json::js_number_string(n)
    }
}

fn value_to_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => num_to_string(n.as_f64().unwrap_or(f64::NAN)),
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::Null => String::new(),
                other => value_to_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_owned(),
    }
}

/// A JSON value as a JS `Map`/`Set` key or `===` operand.
///
/// Objects and arrays compare by identity in JS; two distinct messages never share one, so
/// they are keyed by the index of the message that carries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Key<'a> {
    Undefined,
    Null,
    Bool(bool),
    /// f64 bits with -0 folded into +0 and every NaN folded into one (SameValueZero).
    Num(u64),
    Str(&'a str),
    Object(usize),
}

impl<'a> Key<'a> {
    /// The key of an optional value; `owner` identifies the message for object identity.
    pub(crate) fn of(v: Option<&'a Value>, owner: usize) -> Key<'a> {
        match v {
            None => Key::Undefined,
            Some(Value::Null) => Key::Null,
            Some(Value::Bool(b)) => Key::Bool(*b),
            Some(Value::Number(n)) => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                let f = if f == 0.0 { 0.0 } else { f };
                Key::Num(if f.is_nan() { f64::NAN.to_bits() } else { f.to_bits() })
            }
            Some(Value::String(s)) => Key::Str(s),
            Some(Value::Array(_) | Value::Object(_)) => Key::Object(owner),
        }
    }

    /// JS `===` (NaN is never equal to itself).
    pub(crate) fn strict_eq(&self, other: &Key<'_>) -> bool {
        match (self, other) {
            (Key::Num(a), Key::Num(b)) => {
                let (a, b) = (f64::from_bits(*a), f64::from_bits(*b));
                a == b
            }
            (Key::Undefined, Key::Undefined) | (Key::Null, Key::Null) => true,
            (Key::Bool(a), Key::Bool(b)) => a == b,
            (Key::Str(a), Key::Str(b)) => a == b,
            (Key::Object(a), Key::Object(b)) => a == b,
            _ => false,
        }
    }

    /// JS truthiness of the keyed value.
    pub(crate) fn is_truthy(&self) -> bool {
        match self {
            Key::Undefined | Key::Null => false,
            Key::Bool(b) => *b,
            Key::Num(bits) => {
                let f = f64::from_bits(*bits);
                f != 0.0 && !f.is_nan()
            }
            Key::Str(s) => !s.is_empty(),
            Key::Object(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truthiness_follows_js() {
        assert!(!truthy(None));
        assert!(!truthy(Some(&json!(0))));
        assert!(!truthy(Some(&json!(""))));
        assert!(truthy(Some(&json!([]))));
        assert!(truthy(Some(&json!({}))));
        assert!(truthy(Some(&json!("x"))));
    }

    #[test]
    fn numbers_serialise_like_json_stringify() {
        assert_eq!(js_number(40.0), json!(40));
        assert_eq!(js_number(-0.0), json!(0));
        assert_eq!(js_number(0.5), json!(0.5));
        assert_eq!(js_number(f64::NAN), Value::Null);
    }

    #[test]
    fn iso_strings_are_times() {
        assert_eq!(time_of(Some(&json!("2026-01-01T00:00:01.000Z"))), 1_767_225_601_000.0);
        assert!(time_of(Some(&json!("not a date"))).is_nan());
        assert_eq!(time_of(Some(&json!(17))), 17.0);
    }

    #[test]
    fn js_plus_concatenates_strings() {
        let s = JsSum::add_or_zero(None, &json!("5"));
        assert_eq!(s.to_value(), json!("05"));
        let n = JsSum::add_or_zero(Some(&JsSum::Num(2.0)), &json!(3));
        assert_eq!(n.to_value(), json!(5));
    }

    #[test]
    fn strict_equality_treats_undefined_and_nan_like_js() {
        assert!(Key::Undefined.strict_eq(&Key::Undefined));
        assert!(!Key::Undefined.strict_eq(&Key::Null));
        let nan = Key::of(None, 0);
        assert!(nan.strict_eq(&Key::Undefined));
        assert!(Key::of(Some(&json!("a")), 0).strict_eq(&Key::of(Some(&json!("a")), 1)));
        assert!(!Key::of(Some(&json!({})), 0).strict_eq(&Key::of(Some(&json!({})), 1)));
    }
}
