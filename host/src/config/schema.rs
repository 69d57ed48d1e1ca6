//! Our JSON schema of the Host Configuration, generated from the model
//! (draft 07, like upstream's). The committed copy lives in
//! `host/schema/host-config-schema.json`; a test fails when it is stale
//! (regenerate with `TRIDENT_UPDATE_SCHEMA=1 cargo test -p trident-host schema`).

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::Value;

use super::HostConfiguration;

/// Where the committed schema lives, relative to the `host` crate.
pub const SCHEMA_FILE: &str = "schema/host-config-schema.json";

/// The schema as pretty JSON with a trailing newline.
pub fn generate() -> String {
    let generator = SchemaSettings::draft07().for_deserialize().into_generator();
    let schema = generator.into_root_schema_for::<HostConfiguration>();
    let mut value = schema.to_value();
    bound_integers(&mut value);
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// Adds the range of each fixed-width integer format, so a document the
/// schema accepts never overflows the model's integer types.
fn bound_integers(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let range = match map.get("format").and_then(Value::as_str) {
                Some("uint64") | Some("uint") => Some((0i64, i64::MAX)),
                Some("uint32") => Some((0, i64::from(u32::MAX))),
                Some("uint8") => Some((0, i64::from(u8::MAX))),
                Some("int32") => Some((i64::from(i32::MIN), i64::from(i32::MAX))),
                _ => None,
            };
            if let Some((min, max)) = range {
                map.entry("minimum").or_insert(min.into());
                map.entry("maximum").or_insert(max.into());
            }
            map.values_mut().for_each(bound_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

/// A UUID string or null (partition `uuid`).
pub(super) fn optional_uuid(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "oneOf": [
            { "type": "string", "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$" },
            { "type": "null" }
        ]
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn committed_schema_is_up_to_date() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA_FILE);
        let fresh = generate();
        if std::env::var_os("TRIDENT_UPDATE_SCHEMA").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &fresh).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == fresh,
            "{} is stale: run `TRIDENT_UPDATE_SCHEMA=1 cargo test -p trident-host schema`",
            path.display()
        );
    }
}
