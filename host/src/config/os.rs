//! `os` and `managementOs`: the OS configuration upstream applies inside the
//! new root. Modelled in full so upstream documents parse; what the engine
//! does not apply yet is refused by [`super::unsupported`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Os {
    /// Netplan YAML (version 2), kept as data.
    #[serde(default)]
    pub netplan: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub selinux: Selinux,
    #[serde(default)]
    pub users: Vec<User>,
    #[serde(default)]
    pub additional_files: Vec<AdditionalFile>,
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub modules: Vec<Module>,
    #[serde(default)]
    pub services: Services,
    #[serde(default)]
    pub kernel_command_line: KernelCommandLine,
    #[serde(default)]
    pub sysexts: Vec<Extension>,
    #[serde(default)]
    pub confexts: Vec<Extension>,
    #[serde(default)]
    pub uefi_fallback: UefiFallbackMode,
}

impl Os {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagementOs {
    #[serde(default)]
    pub netplan: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub users: Vec<User>,
}

impl ManagementOs {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Selinux {
    #[serde(default)]
    pub mode: Option<SelinuxMode>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SelinuxMode {
    Disabled,
    Permissive,
    Enforcing,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct User {
    pub name: String,
    #[serde(default)]
    pub password: Password,
    #[serde(default)]
    pub uid: Option<i32>,
    #[serde(default)]
    pub primary_group: Option<String>,
    #[serde(default)]
    pub secondary_groups: Vec<String>,
    #[serde(default)]
    pub ssh_public_keys: Vec<String>,
    #[serde(default)]
    pub ssh_mode: SshMode,
    #[serde(default)]
    pub startup_command: Option<String>,
    #[serde(default)]
    pub home_directory: Option<String>,
}

/// `{ type: locked }` (upstream's only password mode outside its
/// "dangerous-options" build).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "type")]
pub enum Password {
    #[default]
    Locked,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SshMode {
    #[default]
    Block,
    KeyOnly,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdditionalFile {
    pub destination: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    /// Octal mode, e.g. `0755`.
    #[serde(default)]
    pub permissions: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Module {
    pub name: String,
    #[serde(default)]
    pub load_mode: LoadMode,
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LoadMode {
    Always,
    Auto,
    Disable,
    #[default]
    Inherit,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Services {
    #[serde(default)]
    pub enable: Vec<String>,
    #[serde(default)]
    pub disable: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KernelCommandLine {
    pub extra_command_line: Vec<String>,
}

/// A system or configuration extension image (`os.sysexts[]`,
/// `os.confexts[]`): downloaded, checked against `sha384` (of the whole
/// file) and placed where systemd-sysext / systemd-confext merge it, at
/// install, A/B update and runtime update.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Extension {
    /// `file://`, `http(s)://` or `oci://` (one-layer artifact).
    pub url: String,
    /// SHA-384 of the whole image file (96 hex digits).
    #[schemars(pattern(r"^[0-9a-fA-F]{96}$"))]
    pub sha384: String,
    /// Absolute path of the image in the target OS, `NAME.raw` in one of
    /// the kind's directories; default: the kind's default directory and
    /// the NAME of the image's `extension-release.NAME`. Filled in the
    /// Host Status with where the image was placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Where a system extension may be placed (upstream's list; not `/run`).
pub const SYSEXT_DIRECTORIES: [&str; 3] =
    ["/etc/extensions", "/var/lib/extensions", "/.extra/sysext"];
/// Where a configuration extension may be placed (upstream's list).
pub const CONFEXT_DIRECTORIES: [&str; 3] = [
    "/var/lib/confexts",
    "/usr/lib/confexts",
    "/usr/local/lib/confexts",
];
/// Where a system extension goes without `path`.
pub const DEFAULT_SYSEXT_DIRECTORY: &str = "/var/lib/extensions";
/// Where a configuration extension goes without `path`.
pub const DEFAULT_CONFEXT_DIRECTORY: &str = "/var/lib/confexts";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum UefiFallbackMode {
    #[default]
    Conservative,
    Optimistic,
    Disabled,
}

/// Where Trident writes `os.netplan` (relative to a root): sorts after an
/// image's own files so its values win.
pub const NETPLAN_FILE: &str = "etc/netplan/99-trident.yaml";

/// The netplan file for the `netplan` section of a Host Configuration
/// (`os.netplan`, `managementOs.netplan`): `network:` holding it, with a
/// header comment. Fails when it is not a version 2 document (upstream's
/// contract, netplan's only version) or cannot be written as YAML.
pub fn netplan_file_text(
    netplan: &serde_json::Map<String, serde_json::Value>,
) -> Result<String, String> {
    if netplan.get("version").and_then(serde_json::Value::as_u64) != Some(2) {
        return Err("netplan needs 'version: 2'".to_owned());
    }
    let text = serde_saphyr::to_string(&serde_json::json!({ "network": netplan }))
        .map_err(|e| format!("cannot write the netplan document as YAML: {e}"))?;
    Ok(format!(
        "# Written by Trident from the Host Configuration (netplan).\n{text}"
    ))
}
