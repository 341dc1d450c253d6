//! Values bound into and read out of SQL, and rows of them.

/// A value bound into or read out of portable SQL.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// NULL.
    Null,
    /// An integer (also booleans, as 0/1, and times, as epoch microseconds).
    Int(i64),
    /// A float.
    Float(f64),
    /// Text (also JSON).
    Text(String),
}

impl SqlValue {
    /// As an integer, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Self::Int(i) => Some(*i),
            Self::Float(f) => Some(*f as i64),
            _ => None,
        }
    }
    /// As a float, if it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Int(i) => Some(*i as f64),
            Self::Float(f) => Some(*f),
            _ => None,
        }
    }
    /// As text, if it is text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl SqlValue {
    /// The value borrowed, to bind.
    pub fn as_ref(&self) -> SqlRef<'_> {
        match self {
            Self::Null => SqlRef::Null,
            Self::Int(v) => SqlRef::Int(*v),
            Self::Float(v) => SqlRef::Float(*v),
            Self::Text(s) => SqlRef::Text(s),
        }
    }
}

/// A value to bind, borrowed from the caller for the statement's run (text is not copied).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SqlRef<'a> {
    /// NULL.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// Text.
    Text(&'a str),
}

impl<'a> From<Option<&'a str>> for SqlRef<'a> {
    fn from(v: Option<&'a str>) -> Self {
        v.map_or(Self::Null, Self::Text)
    }
}

impl From<i64> for SqlValue {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}
impl From<i32> for SqlValue {
    fn from(v: i32) -> Self {
        Self::Int(v.into())
    }
}
impl From<u32> for SqlValue {
    fn from(v: u32) -> Self {
        Self::Int(v.into())
    }
}
impl From<bool> for SqlValue {
    fn from(v: bool) -> Self {
        Self::Int(v.into())
    }
}
impl From<f64> for SqlValue {
    fn from(v: f64) -> Self {
        Self::Float(v)
    }
}
impl From<String> for SqlValue {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}
impl From<&str> for SqlValue {
    fn from(v: &str) -> Self {
        Self::Text(v.to_string())
    }
}
impl From<&String> for SqlValue {
    fn from(v: &String) -> Self {
        Self::Text(v.clone())
    }
}
impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}
impl From<&serde_json::Value> for SqlValue {
    fn from(v: &serde_json::Value) -> Self {
        Self::Text(v.to_string())
    }
}

/// A row read through the portable layer.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<SqlValue>);

impl Row {
    /// Column `i`.
    pub fn get(&self, i: usize) -> &SqlValue {
        self.0.get(i).unwrap_or(&SqlValue::Null)
    }
    /// Column `i` as an integer (None when NULL or not a number).
    pub fn i64(&self, i: usize) -> Option<i64> {
        self.get(i).as_i64()
    }
    /// Column `i` as a float.
    pub fn f64(&self, i: usize) -> Option<f64> {
        self.get(i).as_f64()
    }
    /// Column `i` as text.
    pub fn str(&self, i: usize) -> Option<&str> {
        self.get(i).as_str()
    }
    /// Column `i` as JSON (None when NULL or not valid JSON).
    pub fn json(&self, i: usize) -> Option<serde_json::Value> {
        self.str(i).and_then(|s| serde_json::from_str(s).ok())
    }
}
