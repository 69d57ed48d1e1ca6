//! Redacted copies of the Host Status and Host Configuration, for every
//! way they leave the daemon (GetHostStatus, GetProvisionedConfig /
//! GetServicingConfig, the legacy phonehome report, a diagnose bundle).
//! The stored originals stay whole: servicing needs the real values.
//!
//! What is redacted, everywhere in the document (any string, any key):
//! - the value of a script or health-check environment variable whose name
//!   looks secret ([`super::is_secret_name`]);
//! - that same value wherever else it appears (a script body, an
//!   `additionalFiles` content, an error message);
//! - the body of any PEM private key block (e.g. an `additionalFiles`
//!   content installing a key);
//! - the passwords, PINs and WireGuard keys of a `netplan` document
//!   (`os.netplan`, `managementOs.netplan`), by their keys;
//! - the credentials of any URL (`user:PASSWORD@`, `sig=`, tokens:
//!   [`super::url`]), in every string.
//!
//! The rest of an `additionalFiles` content stays, as upstream keeps it in
//! its Host Status and diagnose bundle: an operator reading the status
//! needs to see which configuration files were written.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{REDACTED, Secrets, is_secret_name};
use crate::config::HostConfiguration;
use crate::error::{ResultExt, Subkind, TridentError};
use crate::status::HostStatus;

/// The key holding environment variables in scripts and health checks.
pub const ENVIRONMENT_KEY: &str = "environmentVariables";

/// The key holding a netplan document (`os`, `managementOs`).
pub const NETPLAN_KEY: &str = "netplan";

impl HostStatus {
    /// The secrets of `spec` and `specOld`.
    pub fn secrets(&self) -> Secrets {
        let mut secrets = Secrets::default();
        for hc in [&self.spec, &self.spec_old].into_iter().flatten() {
            secrets.extend(&Secrets::of_config(hc));
        }
        secrets
    }

    /// This status with the secrets of both configurations redacted
    /// everywhere in it (the last error included).
    pub fn redacted(&self) -> Result<HostStatus, TridentError> {
        redact_document(self, &self.secrets(), Subkind::SerializeHostStatus)
    }
}

impl HostConfiguration {
    /// This configuration with its secrets redacted.
    pub fn redacted(&self) -> Result<HostConfiguration, TridentError> {
        redact_document(
            self,
            &Secrets::of_config(self),
            Subkind::SerializeHostStatus,
        )
    }
}

/// Where secret *values* are replaced in a document ([`redact_value`]).
/// Secret-named variables and PEM private key bodies are redacted
/// everywhere in both cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only in free text ([`FREE_TEXT_KEYS`]): a document that must load
    /// again as its type (a short secret must not garble an enum value
    /// such as `servicingState`, or an id).
    FreeText,
    /// In every string: a document only read by people (a report).
    Everywhere,
}

/// Keys whose strings (and everything under them) are free text: script
/// and check bodies and arguments, file contents, environment values,
/// error messages, contexts and causes.
pub const FREE_TEXT_KEYS: [&str; 6] = [
    "content",
    "arguments",
    ENVIRONMENT_KEY,
    "message",
    "context",
    "causes",
];

/// `doc` through JSON with [`redact_value`] applied (free text only, so
/// the result loads again).
fn redact_document<T: Serialize + DeserializeOwned>(
    doc: &T,
    secrets: &Secrets,
    subkind: Subkind,
) -> Result<T, TridentError> {
    let mut value = serde_json::to_value(doc).structured(subkind)?;
    redact_value(&mut value, secrets, Scope::FreeText);
    serde_json::from_value(value).structured(subkind)
}

/// Redacts a JSON document in place: secret-named environment variables by
/// name, PEM private key bodies and URL credentials in every string,
/// secret values per `scope`.
pub fn redact_value(value: &mut Value, secrets: &Secrets, scope: Scope) {
    redact_in(value, secrets, scope == Scope::Everywhere);
}

fn redact_in(value: &mut Value, secrets: &Secrets, by_value: bool) {
    match value {
        Value::String(text) => {
            let redacted = if by_value {
                secrets.redact(text)
            } else {
                super::redact_patterns(std::borrow::Cow::Borrowed(text.as_str()))
            };
            if let std::borrow::Cow::Owned(redacted) = redacted {
                *text = redacted;
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| redact_in(v, secrets, by_value)),
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if key == ENVIRONMENT_KEY
                    && let Value::Object(env) = item
                {
                    for (name, env_value) in env.iter_mut() {
                        if is_secret_name(name) {
                            *env_value = Value::String(REDACTED.to_owned());
                        }
                    }
                }
                if key == NETPLAN_KEY
                    && let Value::Object(plan) = item
                {
                    super::netplan::redact_secret_keys(plan);
                }
                let by_value = by_value || FREE_TEXT_KEYS.contains(&key.as_str());
                redact_in(item, secrets, by_value);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    const CONFIG: &str = r#"
image: {url: "file:///img.cosi", sha384: ignored}
storage:
  disks:
  - id: os
    device: /dev/sda
    partitions:
    - {id: root, type: root, size: 1G}
  filesystems:
  - {deviceId: root, mountPoint: /}
scripts:
  postConfigure:
  - name: enrol
    environmentVariables: {API_TOKEN: tok-9a8b7c, REGION: eu-west-9, EMPTY_SECRET: ""}
    content: "curl -H 'x: tok-9a8b7c' https://enrol"
health:
  checks:
  - name: ping
    environmentVariables: {db_password: pw-1f2e3d}
    content: "true"
os:
  additionalFiles:
  - destination: /etc/app/key.pem
    content: "-----BEGIN PRIVATE KEY-----\nMIIEvQkeybody\n-----END PRIVATE KEY-----\n"
  - destination: /etc/app/app.conf
    content: "region=eu-west-9\n"
  - destination: /etc/app/wifi.conf
    content: "psk=wifi-pw-7d6c\n"
  netplan:
    version: 2
    wifis:
      wlan0:
        dhcp4: true
        access-points: {lab-net: {password: wifi-pw-7d6c}}
"#;

    #[test]
    fn secrets_are_redacted_and_the_rest_is_kept() {
        let hc = parse(CONFIG).unwrap();
        let status = HostStatus {
            spec_old: Some(hc.clone()),
            spec: Some(hc),
            ..HostStatus::default()
        };
        let yaml = status.redacted().unwrap().to_yaml().unwrap();
        for secret in ["tok-9a8b7c", "pw-1f2e3d", "MIIEvQkeybody", "wifi-pw-7d6c"] {
            assert!(!yaml.contains(secret), "{secret} in\n{yaml}");
        }
        for kept in [
            "eu-west-9",
            "region=eu-west-9",
            "/etc/app/key.pem",
            "-----BEGIN PRIVATE KEY-----",
            "curl -H 'x: [REDACTED]' https://enrol",
            "lab-net",
            "psk=[REDACTED]",
        ] {
            assert!(yaml.contains(kept), "{kept} missing in\n{yaml}");
        }
        let served = status.spec.as_ref().unwrap().redacted().unwrap();
        let env = &served.scripts.post_configure[0].environment_variables;
        assert_eq!(env["API_TOKEN"], REDACTED);
        assert_eq!(env["REGION"], "eu-west-9");
        assert_eq!(env["EMPTY_SECRET"], REDACTED);
        assert_eq!(
            status.spec.unwrap().scripts.post_configure[0].environment_variables["API_TOKEN"],
            "tok-9a8b7c",
            "the original stays whole"
        );
    }

    /// A one-letter secret is replaced in free text only: the status still
    /// loads, its enum values and ids intact.
    #[test]
    fn a_short_secret_does_not_garble_the_document() {
        let mut hc = parse(CONFIG).unwrap();
        hc.scripts.post_configure[0]
            .environment_variables
            .insert("X_TOKEN".to_owned(), "a".to_owned());
        let status = HostStatus {
            spec: Some(hc),
            servicing_state: crate::status::ServicingState::CleanInstallStaged,
            ..HostStatus::default()
        };
        let served = status.redacted().unwrap();
        assert_eq!(
            served.servicing_state,
            crate::status::ServicingState::CleanInstallStaged
        );
        let spec = served.spec.unwrap();
        assert_eq!(spec.storage.disks[0].partitions[0].id, "root");
        assert!(
            !spec.scripts.post_configure[0]
                .content
                .as_ref()
                .unwrap()
                .contains("a")
        );
    }
}
