//! Reading a request object field by field: each by its name (or SQS alias), so that unknown
//! and doubled fields are refused by name.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::error::InvalidRequest;

/// Tracks which keys were read, so that unknown or doubled fields are refused by name.
pub(crate) struct Fields<'a> {
    map: &'a Map<String, Value>,
    used: HashSet<&'a str>,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(map: &'a Map<String, Value>) -> Self {
        Self {
            map,
            used: HashSet::new(),
        }
    }

    /// Takes a field by its snake_case name or its SQS PascalCase alias.
    pub(crate) fn take(
        &mut self,
        name: &'static str,
        alias: Option<&'static str>,
    ) -> Result<Option<(String, Value)>, InvalidRequest> {
        let a = self.map.get_key_value(name);
        let b = alias.and_then(|al| self.map.get_key_value(al));
        match (a, b) {
            (Some((k1, _)), Some((k2, _))) => Err(InvalidRequest::new(name, format!("given twice, as {k1} and {k2}"))),
            (Some((k, v)), None) | (None, Some((k, v))) => {
                self.used.insert(k.as_str());
                Ok(Some((k.clone(), v.clone())))
            }
            (None, None) => Ok(None),
        }
    }

    pub(crate) fn finish(self) -> Result<(), InvalidRequest> {
        match self.map.keys().find(|k| !self.used.contains(k.as_str())) {
            Some(k) => Err(InvalidRequest::new(truncate(k, 64), "is not a known field")),
            None => Ok(()),
        }
    }
}

pub(crate) fn as_str<'v>(field: &str, v: &'v Value) -> Result<&'v str, InvalidRequest> {
    v.as_str()
        .ok_or_else(|| InvalidRequest::new(field, format!("must be a string, got {}", kind(v))))
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}
