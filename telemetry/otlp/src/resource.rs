//! The OpenTelemetry resource that names this daemon on this host.

use std::path::Path;

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::resource::TelemetryResourceDetector;

/// Machine id (systemd), the `host.id` of the resource.
pub const MACHINE_ID_PATH: &str = "/etc/machine-id";
/// Source of `os.description` (its PRETTY_NAME).
pub const OS_RELEASE_PATH: &str = "/etc/os-release";
/// Source of `host.name`.
pub const HOSTNAME_PATH: &str = "/proc/sys/kernel/hostname";

/// Who is exporting: the parts the caller knows.
#[derive(Debug, Clone)]
pub struct ServiceIdentity {
    pub service_name: String,
    pub service_version: String,
    /// The daemon run id (also the bus's cursor run id).
    pub instance_id: String,
}

/// Builds the resource: service identity, host, OS, then `OTEL_RESOURCE_ATTRIBUTES`
/// extras (which may add keys but never replace the service identity).
pub fn build_resource(identity: &ServiceIdentity, extra: &[(String, String)]) -> Resource {
    let mut attributes = vec![
        KeyValue::new("service.version", identity.service_version.clone()),
        KeyValue::new("service.instance.id", identity.instance_id.clone()),
        KeyValue::new("os.type", std::env::consts::OS),
        KeyValue::new("host.arch", host_arch()),
    ];
    if let Some(name) = read_trimmed(Path::new(HOSTNAME_PATH)) {
        attributes.push(KeyValue::new("host.name", name));
    }
    if let Some(id) = read_trimmed(Path::new(MACHINE_ID_PATH)) {
        attributes.push(KeyValue::new("host.id", id));
    }
    if let Some(pretty) = std::fs::read_to_string(OS_RELEASE_PATH)
        .ok()
        .and_then(|text| os_release_pretty_name(&text))
    {
        attributes.push(KeyValue::new("os.description", pretty));
    }
    let fixed: Vec<String> = attributes.iter().map(|kv| kv.key.to_string()).collect();
    let extras = extra
        .iter()
        .filter(|(key, _)| key != "service.name" && !fixed.iter().any(|f| f == key))
        .map(|(key, value)| KeyValue::new(key.clone(), value.clone()));
    Resource::builder_empty()
        .with_detector(Box::new(TelemetryResourceDetector))
        .with_attributes(extras)
        .with_attributes(attributes)
        .with_service_name(identity.service_name.clone())
        .build()
}

/// `PRETTY_NAME` of an os-release file, unquoted.
pub fn os_release_pretty_name(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.trim().strip_prefix("PRETTY_NAME=")?;
        let value = value.trim().trim_matches('"').trim_matches('\'');
        (!value.is_empty()).then(|| value.to_string())
    })
}

fn read_trimmed(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// `host.arch` spelled as the semantic conventions want.
fn host_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pretty_name_is_read_unquoted() {
        let text =
            "NAME=\"Azure Linux\"\nPRETTY_NAME=\"Microsoft Azure Linux 3.0\"\nID=azurelinux\n";
        assert_eq!(
            os_release_pretty_name(text).as_deref(),
            Some("Microsoft Azure Linux 3.0")
        );
        assert_eq!(os_release_pretty_name("ID=x\n"), None);
    }

    #[test]
    fn resource_names_the_service_and_keeps_it_over_extras() {
        let identity = ServiceIdentity {
            service_name: "tridentd".into(),
            service_version: "0.1.0".into(),
            instance_id: "run-1".into(),
        };
        let resource = build_resource(
            &identity,
            &[
                ("service.name".into(), "spoofed".into()),
                ("deployment.environment".into(), "lab".into()),
            ],
        );
        let get = |key: &'static str| resource.get(&opentelemetry::Key::from_static_str(key));
        assert_eq!(
            get("service.name").map(|v| v.to_string()).as_deref(),
            Some("tridentd")
        );
        assert_eq!(
            get("service.instance.id").map(|v| v.to_string()).as_deref(),
            Some("run-1")
        );
        assert_eq!(
            get("os.type").map(|v| v.to_string()).as_deref(),
            Some("linux")
        );
        assert_eq!(
            get("deployment.environment")
                .map(|v| v.to_string())
                .as_deref(),
            Some("lab")
        );
    }
}
