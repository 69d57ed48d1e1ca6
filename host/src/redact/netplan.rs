//! Secrets inside a netplan document (`os.netplan`, `managementOs.netplan`):
//! Wi-Fi and 802.1X passwords, a modem's PIN, WireGuard private and
//! pre-shared keys. Netplan is free-form YAML to this daemon (it is handed
//! to netplan as written), so its secrets are found by their keys as
//! netplan's reference names them, wherever they sit in the document.

use serde_json::{Map, Value};

use super::REDACTED;

/// Keys whose string value is a secret anywhere in a netplan document:
/// `access-points.<ssid>.password`, `auth.password`,
/// `auth.private-key-password`, a modem's `password` and `pin`.
const SECRET_KEYS: [&str; 3] = ["password", "private-key-password", "pin"];

/// Keys holding WireGuard key material under a `keys` (or `key`) object:
/// the interface's `private` key and a peer's pre-shared `shared` key
/// (a `public` key is not secret; GRE's numeric `input`/`output` keys
/// neither).
const KEY_MATERIAL: [&str; 2] = ["private", "shared"];

/// The object keys that hold WireGuard key material.
const KEY_OBJECTS: [&str; 2] = ["keys", "key"];

/// The secret values of `netplan` (non-empty strings only).
pub fn secret_values(netplan: &Map<String, Value>) -> Vec<String> {
    let mut values = Vec::new();
    visit(netplan, &mut |value| {
        if let Value::String(text) = value
            && !text.is_empty()
        {
            values.push(text.clone());
        }
    });
    values
}

/// Replaces every secret value of `netplan` by [`REDACTED`] in place.
pub fn redact_secret_keys(netplan: &mut Map<String, Value>) {
    visit_mut(netplan);
}

fn is_secret(key: &str, parent: Option<&str>) -> bool {
    SECRET_KEYS.contains(&key)
        || (parent.is_some_and(|p| KEY_OBJECTS.contains(&p)) && KEY_MATERIAL.contains(&key))
}

fn visit(map: &Map<String, Value>, found: &mut impl FnMut(&Value)) {
    fn walk(value: &Value, key: Option<&str>, found: &mut impl FnMut(&Value)) {
        match value {
            Value::Object(map) => {
                for (child_key, child) in map {
                    if is_secret(child_key, key) && child.is_string() {
                        found(child);
                    } else {
                        walk(child, Some(child_key), found);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, key, found)),
            _ => {}
        }
    }
    for (key, value) in map {
        walk(value, Some(key), found);
    }
}

fn visit_mut(map: &mut Map<String, Value>) {
    fn walk(value: &mut Value, key: Option<&str>) {
        match value {
            Value::Object(map) => {
                for (child_key, child) in map.iter_mut() {
                    if is_secret(child_key, key) && child.is_string() {
                        *child = Value::String(REDACTED.to_owned());
                    } else {
                        walk(child, Some(child_key));
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| walk(item, key)),
            _ => {}
        }
    }
    for (key, value) in map.iter_mut() {
        walk(value, Some(key));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn netplan() -> Map<String, Value> {
        let doc = serde_json::json!({
            "version": 2,
            "wifis": {"wlan0": {
                "access-points": {"lab-net": {"password": "wifi-pw-1"}},
                "auth": {"key-management": "eap", "password": "eap-pw-2",
                         "private-key-password": "pk-pw-3", "identity": "alice"},
            }},
            "modems": {"wwan0": {"apn": "internet", "pin": "4321", "password": "apn-pw-4"}},
            "tunnels": {"wg0": {
                "mode": "wireguard",
                "keys": {"private": "wg-private-5"},
                "peers": [{"keys": {"public": "wg-public", "shared": "wg-shared-6"}}],
            }, "gre0": {"mode": "gre", "keys": {"input": 1234, "output": "5.6.7.8"}}},
            "ethernets": {"eth0": {"dhcp4": true}},
        });
        doc.as_object().unwrap().clone()
    }

    const SECRETS: [&str; 6] = [
        "wifi-pw-1",
        "eap-pw-2",
        "pk-pw-3",
        "4321",
        "apn-pw-4",
        "wg-private-5",
    ];

    #[test]
    fn wifi_eap_modem_and_wireguard_secrets_are_found() {
        let mut found = secret_values(&netplan());
        found.sort();
        let mut expected: Vec<String> = SECRETS.iter().map(|s| s.to_string()).collect();
        expected.push("wg-shared-6".to_owned());
        expected.sort();
        assert_eq!(found, expected);
    }

    #[test]
    fn redaction_replaces_secrets_and_keeps_everything_else() {
        let mut doc = netplan();
        redact_secret_keys(&mut doc);
        let text = Value::Object(doc).to_string();
        for secret in SECRETS.iter().chain(&["wg-shared-6"]) {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        for kept in [
            "alice",
            "wg-public",
            "internet",
            "5.6.7.8",
            "1234",
            "lab-net",
        ] {
            assert!(text.contains(kept), "{kept} missing in {text}");
        }
    }
}
