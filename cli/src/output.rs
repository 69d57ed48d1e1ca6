//! Printing data (not progress) in the chosen format, to stdout or a file.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::args::OutputFormat;
use crate::exit::{CliError, CliResult};

/// Serialises `value` as JSON (pretty) or YAML text, ending with a newline.
pub fn encode<T: Serialize>(value: &T, format: OutputFormat) -> CliResult<String> {
    let mut text = match format {
        OutputFormat::Json | OutputFormat::Human => serde_json::to_string_pretty(value)
            .map_err(|e| CliError::Local(format!("cannot encode JSON: {e}")))?,
        OutputFormat::Yaml => serde_saphyr::to_string(value)
            .map_err(|e| CliError::Local(format!("cannot encode YAML: {e}")))?,
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Writes `text` to `outfile` when given, to stdout otherwise.
pub fn emit(text: &str, outfile: Option<&Path>) -> CliResult<()> {
    match outfile {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| CliError::file("cannot write", path, e))
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                // The reader went away (`| head`): nothing left to tell.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.map_err(|e| CliError::Local(format!("cannot write to stdout: {e}"))),
            }
        }
    }
}

/// `text` ending with a newline.
pub fn with_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// Parses YAML text into a JSON value (null for empty or unparsable text).
pub fn yaml_value(text: &str) -> serde_json::Value {
    if text.trim().is_empty() {
        return serde_json::Value::Null;
    }
    serde_saphyr::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_string()))
}
