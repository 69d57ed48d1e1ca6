//! Secret redaction. Secrets are the values of Host Configuration script
//! and health-check environment variables whose names look secret
//! (`*PASSWORD*`, `*TOKEN*`, `*SECRET*`, any case), the passwords, PINs and
//! WireGuard keys of its netplan documents ([`netplan`]) and the body of
//! any PEM private key block ([`pem`]). They are replaced by [`REDACTED`] where
//! text leaves the daemon: script output lines (log, bus, OTLP records and
//! error messages), the Host Status and Host Configuration as served
//! ([`document`]), the OTLP export ([`known`]) and the datastore copy of a
//! diagnose bundle (`Datastore::export_redacted`).

pub mod document;
pub mod known;
pub mod netplan;
pub mod pem;
pub mod url;

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::config::HostConfiguration;

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
        let values: Vec<String> = env
            .iter()
            .filter(|(name, value)| is_secret_name(name) && !value.is_empty())
            .map(|(_, value)| value.clone())
            .collect();
        Self::of_values(values)
    }

    /// The secret environment values of every script and health check of
    /// `hc`, and the secrets of its netplan documents.
    pub fn of_config(hc: &HostConfiguration) -> Self {
        let scripts = &hc.scripts;
        let envs = (scripts.pre_servicing.iter())
            .chain(&scripts.post_provision)
            .chain(&scripts.post_configure)
            .map(|s| &s.environment_variables)
            .chain(hc.health.checks.iter().map(|c| &c.environment_variables));
        let mut secrets = Self::default();
        for env in envs {
            secrets.extend(&Self::of_env(env));
        }
        for plan in [&hc.os.netplan, &hc.management_os.netplan]
            .into_iter()
            .flatten()
        {
            secrets.extend(&Self::of_values(netplan::secret_values(plan)));
        }
        secrets.extend(&Self::of_values(
            config_urls(hc).flat_map(url::secret_parts).collect(),
        ));
        secrets
    }

    fn of_values(mut values: Vec<String>) -> Self {
        // Longest first; equal values adjacent for dedup.
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        Self { values }
    }

    /// Adds the values of `other`.
    pub fn extend(&mut self, other: &Secrets) {
        let mut values = std::mem::take(&mut self.values);
        values.extend(other.values.iter().cloned());
        *self = Self::of_values(values);
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every secret value, every PEM private key body and the
    /// credentials of every URL in it replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), REDACTED));
            }
        }
        redact_patterns(out)
    }
}

/// `text` with PEM private key bodies and URL credentials redacted: the
/// secrets found by their shape, whoever's they are.
pub fn redact_patterns(text: Cow<'_, str>) -> Cow<'_, str> {
    let text = match pem::redact_private_keys(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(redacted) => Cow::Owned(redacted),
    };
    match url::redact_urls(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(redacted) => Cow::Owned(redacted),
    }
}

/// Every URL of `hc` that may carry credentials: the image, the
/// extensions, the recovery key and the legacy bridge's endpoints.
fn config_urls(hc: &HostConfiguration) -> impl Iterator<Item = &str> {
    let image = hc.image.iter().map(|image| image.url.as_str());
    let extensions = (hc.os.sysexts.iter())
        .chain(&hc.os.confexts)
        .map(|ext| ext.url.as_str());
    let recovery = (hc.storage.encryption.iter())
        .filter_map(|encryption| encryption.recovery_key_url.as_deref());
    let bridge = [&hc.trident.phonehome, &hc.trident.logstream]
        .into_iter()
        .filter_map(Option::as_deref);
    image.chain(extensions).chain(recovery).chain(bridge)
}

/// Redacts a stream line by line (a script's output): [`Secrets::redact`]
/// on each line, and every line inside a PEM private key block (whose BEGIN
/// and END arrive as separate lines) replaced whole.
#[derive(Debug)]
pub struct LineRedactor<'a> {
    secrets: &'a Secrets,
    in_private_key: bool,
}

impl<'a> LineRedactor<'a> {
    pub fn new(secrets: &'a Secrets) -> Self {
        Self {
            secrets,
            in_private_key: false,
        }
    }

    /// The next line, redacted.
    pub fn line<'l>(&mut self, line: &'l str) -> Cow<'l, str> {
        if self.in_private_key {
            if pem::closes_private_key(line) {
                self.in_private_key = false;
                return self.secrets.redact(line);
            }
            return Cow::Borrowed(REDACTED);
        }
        self.in_private_key = pem::opens_private_key(line);
        self.secrets.redact(line)
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

    #[test]
    fn a_key_printed_line_by_line_is_redacted_between_its_edges() {
        let secrets = Secrets::default();
        let mut lines = LineRedactor::new(&secrets);
        let out: Vec<String> = [
            "before",
            "-----BEGIN RSA PRIVATE KEY-----",
            "MIIEpAIBAAKCAQEAsecret",
            "-----END RSA PRIVATE KEY-----",
            "after",
        ]
        .into_iter()
        .map(|l| lines.line(l).into_owned())
        .collect();
        assert_eq!(
            out,
            [
                "before",
                // A BEGIN line without its END is a cut block: redacted to its end.
                "-----BEGIN RSA PRIVATE KEY-----[REDACTED]",
                REDACTED,
                "-----END RSA PRIVATE KEY-----",
                "after"
            ]
        );
    }
}
