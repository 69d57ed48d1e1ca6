//! Secret redaction: the values of Host Configuration script environment
//! variables whose names look secret (`*PASSWORD*`, `*TOKEN*`, `*SECRET*`,
//! any case) are replaced by [`REDACTED`] in text that leaves the daemon
//! (script output lines, which become log records, bus records, OTLP logs
//! and error messages).

use std::borrow::Cow;
use std::collections::BTreeMap;

/// What a secret value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Name fragments that mark a variable as secret (compared uppercased).
const SECRET_NAME_PARTS: [&str; 3] = ["PASSWORD", "TOKEN", "SECRET"];

/// Whether an environment variable named `name` holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
}

/// The secret values to keep out of output.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Longest first, so a value containing another is replaced whole.
    values: Vec<String>,
}

impl Secrets {
    /// The values of the secret-named variables of `env` (empty values
    /// are not secrets: replacing "" would garble every line).
    pub fn of_env(env: &BTreeMap<String, String>) -> Self {
        let mut values: Vec<String> = env
            .iter()
            .filter(|(name, value)| is_secret_name(name) && !value.is_empty())
            .map(|(_, value)| value.clone())
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Self { values }
    }

    /// `text` with every secret value replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), REDACTED));
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_match_case_insensitively() {
        for name in ["DB_PASSWORD", "api_token", "MySecret", "password"] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "USER", "TOKE"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn only_secret_values_are_redacted() {
        let env = BTreeMap::from([
            ("DB_PASSWORD".to_owned(), "hunter2".to_owned()),
            ("API_TOKEN".to_owned(), "tok-hunter2-long".to_owned()),
            ("EMPTY_SECRET".to_owned(), String::new()),
            ("REGION".to_owned(), "eu-west".to_owned()),
        ]);
        let secrets = Secrets::of_env(&env);
        assert_eq!(
            secrets.redact("pw=hunter2 tok=tok-hunter2-long region=eu-west"),
            "pw=[REDACTED] tok=[REDACTED] region=eu-west"
        );
        assert!(matches!(secrets.redact("nothing here"), Cow::Borrowed(_)));
    }
}
