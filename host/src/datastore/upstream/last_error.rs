//! `lastError` in upstream's rows: upstream stores its `TridentError`
//! serialized (`message`, `error`: the variant, a string or a mapping of
//! the variant's fields, `category`, `location`: `file:line`, `cause`)
//! and reads it back as an opaque YAML value. Ours is an [`ErrorRecord`];
//! we write upstream's five keys first and our additions after them
//! (`context`, `causes`, `operationId`, `traceId`, `timestamp`), the shape
//! `trident get last-error` prints.

use serde_json::{Map, Value};

use crate::error::{Category, ContextEntry, ErrorRecord, SourceLocation};
use crate::kebab_name::KebabName;

/// Upstream's form of our error.
pub fn to_upstream(record: &ErrorRecord) -> Value {
    let mut map = Map::new();
    map.insert("message".into(), record.message.clone().into());
    map.insert("error".into(), record.subkind.clone().into());
    map.insert("category".into(), record.category.kebab_name().into());
    map.insert("location".into(), record.location.to_string().into());
    map.insert(
        "cause".into(),
        record
            .causes
            .first()
            .map_or(Value::Null, |c| c.clone().into()),
    );
    if !record.context.is_empty() {
        let context = record
            .context
            .iter()
            .map(|c| Value::from(format!("{} ({})", c.message, c.location)))
            .collect();
        map.insert("context".into(), Value::Array(context));
    }
    if !record.causes.is_empty() {
        map.insert("causes".into(), record.causes.clone().into());
    }
    for (key, value) in [
        ("operationId", &record.operation_id),
        ("traceId", &record.trace_id),
        ("timestamp", &record.timestamp),
    ] {
        if let Some(value) = value {
            map.insert(key.into(), value.clone().into());
        }
    }
    Value::Object(map)
}

/// Our record of an upstream `lastError` (any shape: what is not there is
/// left empty; a value that is not a mapping becomes the message).
pub fn from_upstream(value: &Value) -> ErrorRecord {
    let Value::Object(map) = value else {
        return record("upstream-error", Category::Internal, text(value), None);
    };
    let get = |key: &str| map.get(key).filter(|v| !v.is_null());
    let category = get("category")
        .and_then(|v| serde_json::from_value::<Category>(v.clone()).ok())
        .unwrap_or(Category::Internal);
    // The variant: a unit variant is a string, one with fields a mapping
    // of one key (when the YAML tag was written as a key).
    let subkind = match get("error") {
        Some(Value::String(name)) => name.clone(),
        Some(Value::Object(m)) if m.len() == 1 => m.keys().next().cloned().unwrap_or_default(),
        _ => "upstream-error".to_owned(),
    };
    let message = get("message").map(text).unwrap_or_default();
    let location = get("location").and_then(Value::as_str).map(parse_location);
    let mut rec = record(&subkind, category, message, location);
    rec.causes = match get("causes") {
        Some(Value::Array(causes)) => causes.iter().map(text).collect(),
        _ => get("cause").map(text).into_iter().collect(),
    };
    if let Some(Value::Array(context)) = get("context") {
        rec.context = context.iter().map(|c| parse_context(&text(c))).collect();
    }
    let string = |key: &str| get(key).and_then(Value::as_str).map(str::to_owned);
    rec.operation_id = string("operationId");
    rec.trace_id = string("traceId");
    rec.timestamp = string("timestamp");
    rec
}

fn record(
    subkind: &str,
    category: Category,
    message: String,
    location: Option<SourceLocation>,
) -> ErrorRecord {
    ErrorRecord {
        category,
        subkind: subkind.to_owned(),
        message,
        location: location.unwrap_or(SourceLocation {
            file: String::new(),
            line: 0,
        }),
        context: Vec::new(),
        causes: Vec::new(),
        operation_id: None,
        trace_id: None,
        timestamp: None,
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `file:line` (a location without a line keeps it all as the file).
fn parse_location(text: &str) -> SourceLocation {
    match text.rsplit_once(':') {
        Some((file, line)) if line.parse::<u32>().is_ok() => SourceLocation {
            file: file.to_owned(),
            line: line.parse().unwrap_or_default(),
        },
        _ => SourceLocation {
            file: text.to_owned(),
            line: 0,
        },
    }
}

/// `message (file:line)`, as [`to_upstream`] writes a context entry.
fn parse_context(text: &str) -> ContextEntry {
    if let Some((message, location)) = text
        .strip_suffix(')')
        .and_then(|rest| rest.rsplit_once(" ("))
    {
        let location = parse_location(location);
        if location.line > 0 {
            return ContextEntry {
                message: message.to_owned(),
                location,
            };
        }
    }
    ContextEntry {
        message: text.to_owned(),
        location: parse_location(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Subkind, TridentError};

    #[test]
    fn our_error_goes_to_upstream_and_back_whole() {
        let record = TridentError::new(Subkind::DatastoreQuery, "broken")
            .context("Staging the update")
            .record()
            .stamped("op-1", "4bf92f3577b34da6a3ce929d0e0e4736");
        let value = to_upstream(&record);
        assert_eq!(value["error"], "datastore-query");
        assert_eq!(value["category"], "internal");
        assert_eq!(from_upstream(&value), record);
    }

    #[test]
    fn upstreams_error_is_read_in_any_shape() {
        let value = serde_json::json!({
            "message": "Failed to stage",
            "error": {"datastore": {"inner": "write-to-datastore"}},
            "category": "servicing",
            "location": "crates/trident/src/datastore.rs:158",
            "cause": null,
        });
        let rec = from_upstream(&value);
        assert_eq!(rec.subkind, "datastore");
        assert_eq!(rec.category, Category::Servicing);
        assert_eq!(rec.location.line, 158);
        assert!(rec.causes.is_empty());
        let rec = from_upstream(&serde_json::json!("just text"));
        assert_eq!(rec.message, "just text");
        assert_eq!(
            from_upstream(&serde_json::json!({"message": "m"})).subkind,
            "upstream-error"
        );
    }
}
