//! What upstream's tracestream attaches to every metric: the version and a
//! description of the machine (read once per bridged operation).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::shapes::MetricContext;

const PRODUCT_UUID: &str = "/sys/class/dmi/id/product_uuid";
const OS_RELEASE: &str = "/etc/os-release";
const KERNEL_RELEASE: &str = "/proc/sys/kernel/osrelease";
const MEMINFO: &str = "/proc/meminfo";

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// VERSION of os-release, unquoted.
fn os_release_version() -> Option<String> {
    let text = std::fs::read_to_string(OS_RELEASE).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VERSION="))
        .map(|v| v.trim_matches('"').to_owned())
}

fn total_memory_gib() -> Option<u64> {
    let text = std::fs::read_to_string(MEMINFO).ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some((kib as f64 / (1024.0 * 1024.0)).round() as u64)
}

/// The fields every tracestream metric carries (upstream's keys).
pub fn metric_context() -> MetricContext {
    let unknown = || "unknown".to_owned();
    let mut platform_info = BTreeMap::new();
    platform_info.insert(
        "asset_id".into(),
        json!(read_trimmed(PRODUCT_UUID).unwrap_or_else(unknown)),
    );
    platform_info.insert(
        "os_release".into(),
        json!(os_release_version().unwrap_or_else(unknown)),
    );
    platform_info.insert(
        "total_cpu".into(),
        json!(std::thread::available_parallelism().map_or(0, |n| n.get())),
    );
    platform_info.insert(
        "total_memory_gib".into(),
        total_memory_gib().map_or(Value::Null, |g| json!(g)),
    );
    platform_info.insert(
        "kernel_version".into(),
        json!(read_trimmed(KERNEL_RELEASE).unwrap_or_else(unknown)),
    );
    let mut additional_fields = BTreeMap::new();
    additional_fields.insert("trident_version".into(), json!(crate::VERSION));
    MetricContext {
        additional_fields,
        platform_info,
    }
}
