//! The optional system parts of a support bundle, as upstream's
//! `diagnose --journal --selinux`: what cannot be had is named in the
//! report's `not_collected` (and on stderr), never silently left out.

use std::process::Command;

/// The SELinux audit log.
pub const SELINUX_AUDIT_LOG: &str = "/var/log/audit/audit.log";

/// `--journal`: this boot's full system journal and the kernel ring buffer.
pub fn collect_system_journal(files: &mut Vec<(String, Vec<u8>)>, missing: &mut Vec<String>) {
    let commands: [(&str, &str, &[&str]); 2] = [
        (
            "system/journal.txt",
            "journalctl",
            &["--no-pager", "--boot", "--output", "short-iso-precise"],
        ),
        ("system/dmesg.txt", "dmesg", &["--time-format", "iso"]),
    ];
    for (name, program, args) in commands {
        match Command::new(program).args(args).output() {
            Ok(out) if out.status.success() => files.push((name.to_owned(), out.stdout)),
            Ok(out) => missing.push(format!(
                "{name}: `{program}` exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(error) => missing.push(format!("{name}: cannot run `{program}`: {error}")),
        }
    }
}

/// `--selinux`: the SELinux audit log, when the host has one.
pub fn collect_selinux_audit(files: &mut Vec<(String, Vec<u8>)>, missing: &mut Vec<String>) {
    match std::fs::read(SELINUX_AUDIT_LOG) {
        Ok(bytes) => files.push(("system/selinux-audit.log".to_owned(), bytes)),
        Err(error) => missing.push(format!("SELinux audit log {SELINUX_AUDIT_LOG}: {error}")),
    }
}
