//! Upstream features outside the supported subset: using one is an
//! unsupported-configuration error naming the key and its line.

use super::{HostConfiguration, Unsupported};
use crate::error::{Subkind, TridentError};

/// Every declared-but-unsupported key, with its key path and why.
fn unsupported_keys(hc: &HostConfiguration) -> Vec<(String, &Unsupported, &'static str)> {
    let mut keys: Vec<(String, &Unsupported, &'static str)> = vec![
        (
            "managementOs".into(),
            &hc.management_os,
            "management OS configuration",
        ),
        (
            "internalParams".into(),
            &hc.internal_params,
            "internal parameters",
        ),
        ("storage.raid".into(), &hc.storage.raid, "software RAID"),
        (
            "storage.encryption".into(),
            &hc.storage.encryption,
            "disk encryption",
        ),
        ("storage.verity".into(), &hc.storage.verity, "dm-verity"),
        ("storage.swap".into(), &hc.storage.swap, "swap"),
        (
            "trident.phonehome".into(),
            &hc.trident.phonehome,
            "phonehome (use the gRPC servicing stream)",
        ),
        (
            "trident.logstream".into(),
            &hc.trident.logstream,
            "logstream (use TelemetryService)",
        ),
        (
            "trident.tracestream".into(),
            &hc.trident.tracestream,
            "tracestream (use TelemetryService / OTLP)",
        ),
        (
            "trident.selfUpgrade".into(),
            &hc.trident.self_upgrade,
            "self upgrade",
        ),
    ];
    for (i, disk) in hc.storage.disks.iter().enumerate() {
        keys.push((
            format!("storage.disks[{i}].adoptedPartitions"),
            &disk.adopted_partitions,
            "adopted partitions",
        ));
    }
    for (i, check) in hc.health.checks.iter().enumerate() {
        keys.push((
            format!("health.checks[{i}].systemdServices"),
            &check.systemd_services,
            "systemd service health checks",
        ));
    }
    if let Some(os) = &hc.os {
        let os_keys: [(&str, &Unsupported, &'static str); 12] = [
            ("netplan", &os.netplan, "netplan network configuration"),
            ("network", &os.network, "OS network configuration"),
            ("users", &os.users, "user management"),
            ("selinux", &os.selinux, "SELinux configuration"),
            ("sysexts", &os.sysexts, "system extensions"),
            ("confexts", &os.confexts, "configuration extensions"),
            (
                "kernelCommandLine",
                &os.kernel_command_line,
                "kernel command line changes",
            ),
            ("modules", &os.modules, "kernel module configuration"),
            ("services", &os.services, "systemd service configuration"),
            ("additionalFiles", &os.additional_files, "additional files"),
            ("hostname", &os.hostname, "hostname configuration"),
            ("uki", &os.uki, "unified kernel images"),
        ];
        for (key, value, what) in os_keys {
            keys.push((format!("os.{key}"), value, what));
        }
    }
    keys
}

/// Fails on the first unsupported key that is present.
pub(super) fn check(hc: &HostConfiguration) -> Result<(), TridentError> {
    for (path, value, what) in unsupported_keys(hc) {
        if let Some(spanned) = value {
            let loc = spanned.referenced;
            let raid = path == "storage.raid";
            return Err(TridentError::new(
                if raid {
                    Subkind::RaidUnsupported
                } else {
                    Subkind::UnsupportedFeature
                },
                format!(
                    "Host Configuration key '{path}' (line {}, column {}): {what} is not supported by this daemon",
                    loc.line(),
                    loc.column()
                ),
            ));
        }
    }
    for (i, fs) in hc.storage.filesystems.iter().enumerate() {
        if let Some(source) = fs.source
            && source != super::FilesystemSource::Image
        {
            return Err(TridentError::new(
                Subkind::UnsupportedFeature,
                format!(
                    "Host Configuration key 'storage.filesystems[{i}].source': only filesystems from the image \
                     ('image') are supported, not '{}'",
                    match source {
                        super::FilesystemSource::New => "new",
                        _ => "adopted",
                    }
                ),
            ));
        }
    }
    Ok(())
}
