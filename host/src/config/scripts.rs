//! `scripts` and `health`: user scripts run around servicing, and the
//! health checks `Commit` runs.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scripts {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_servicing: Vec<Script>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_provision: Vec<Script>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_configure: Vec<Script>,
}

impl Scripts {
    pub fn is_empty(&self) -> bool {
        self.pre_servicing.is_empty()
            && self.post_provision.is_empty()
            && self.post_configure.is_empty()
    }
}

/// When a script or check runs (upstream's servicing type selection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RunOn {
    All,
    CleanInstall,
    AbUpdate,
    /// A runtime update (extensions, netplan: applied to the running
    /// system without a reboot).
    RuntimeUpdate,
}

fn default_run_on() -> Vec<RunOn> {
    vec![RunOn::All]
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Script {
    /// Upstream allows an unnamed script.
    #[serde(default)]
    pub name: String,
    /// Default: all (upstream's default, an empty list, runs nothing).
    #[serde(default = "default_run_on")]
    pub run_on: Vec<RunOn>,
    /// Interpreter; default `/bin/sh`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environment_variables: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Health {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<HealthCheck>,
}

impl Health {
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }
}

/// Default timeout of a script health check (upstream's systemd checks
/// default to 30 s).
pub const DEFAULT_HEALTH_CHECK_TIMEOUT_SECONDS: u64 = 60;

/// A health check: a script (`content`/`path`) or, upstream's other kind,
/// a list of `systemdServices` that must be active. Upstream's parser tells
/// them apart by the `systemdServices` key; its schema also describes the
/// externally tagged form `{Script: {...}}` / `{SystemdCheck: {...}}`,
/// accepted here too and folded into the flat form by [`super::parse`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HealthCheck {
    #[serde(default)]
    pub name: String,
    #[serde(default = "default_run_on")]
    pub run_on: Vec<RunOn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environment_variables: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 4294967295u64))]
    pub timeout_seconds: Option<u64>,
    /// Present: a systemd check (upstream `SystemdCheck`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub systemd_services: Option<Vec<String>>,
    /// Upstream schema's tagged form of a script check.
    #[serde(rename = "Script", default, skip_serializing)]
    #[schemars(skip)]
    pub tagged_script: Option<Box<HealthCheck>>,
    /// Upstream schema's tagged form of a systemd check.
    #[serde(rename = "SystemdCheck", default, skip_serializing)]
    #[schemars(skip)]
    pub tagged_systemd: Option<Box<HealthCheck>>,
}

impl HealthCheck {
    /// Replaces a tagged check (`{Script: {...}}`) by its content. Returns
    /// false when a tagged form is mixed with flat keys or with another tag.
    pub(super) fn untag(&mut self) -> bool {
        let tagged = match (self.tagged_script.take(), self.tagged_systemd.take()) {
            (None, None) => return true,
            (Some(t), None) => t,
            (None, Some(mut t)) => {
                t.systemd_services.get_or_insert_with(Vec::new);
                t
            }
            (Some(_), Some(_)) => return false,
        };
        let flat_is_empty = self.name.is_empty()
            && self.run_on == default_run_on()
            && self.interpreter.is_none()
            && self.content.is_none()
            && self.path.is_none()
            && self.arguments.is_empty()
            && self.environment_variables.is_empty()
            && self.timeout_seconds.is_none()
            && self.systemd_services.is_none();
        *self = *tagged;
        flat_is_empty && self.tagged_script.is_none() && self.tagged_systemd.is_none()
    }
}
