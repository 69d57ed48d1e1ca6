//! The optional system parts of a support bundle, as upstream's
//! `diagnose --journal --selinux`: what cannot be had is named in the
//! report's `not_collected` (and on stderr), never silently left out.

use std::path::Path;
use std::process::Command;

/// Where a host mounts its ESP.
const ESP_MOUNT_POINTS: [&str; 2] = ["/boot/efi", "/efi"];

/// The SELinux audit log.
pub const SELINUX_AUDIT_LOG: &str = "/var/log/audit/audit.log";

/// The boot state: the mounted ESP's files (path and size, one a line)
/// and the UEFI boot variables (`efibootmgr -v`: `BootCurrent`,
/// `BootNext`, `BootOrder`, every `Boot####` with its device path).
pub fn collect_boot_state(files: &mut Vec<(String, Vec<u8>)>, missing: &mut Vec<String>) {
    let name = "system/esp-tree.txt";
    match ESP_MOUNT_POINTS
        .iter()
        .map(Path::new)
        .find(|p| std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_some()))
    {
        Some(esp) => {
            let mut lines = vec![format!("# {}", esp.display())];
            list_tree(esp, esp, &mut lines);
            files.push((name.to_owned(), (lines.join("\n") + "\n").into_bytes()));
        }
        None => missing.push(format!(
            "{name}: no ESP mounted at {}",
            ESP_MOUNT_POINTS.join(" or ")
        )),
    }
    run_into(
        files,
        missing,
        "system/efibootmgr.txt",
        "efibootmgr",
        &["-v"],
    );
}

/// Every file under `dir` as `PATH SIZE`, relative to `root`, sorted.
fn list_tree(root: &Path, dir: &Path, lines: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let shown = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                lines.push(format!("{shown}/"));
                list_tree(root, &path, lines);
            }
            Ok(meta) => lines.push(format!("{shown} {}", meta.len())),
            Err(e) => lines.push(format!("{shown} ({e})")),
        }
    }
}

/// Runs `program args` into bundle file `name`, or says why not.
fn run_into(
    files: &mut Vec<(String, Vec<u8>)>,
    missing: &mut Vec<String>,
    name: &str,
    program: &str,
    args: &[&str],
) {
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
        run_into(files, missing, name, program, args);
    }
}

/// `--selinux`: the SELinux audit log, when the host has one.
pub fn collect_selinux_audit(files: &mut Vec<(String, Vec<u8>)>, missing: &mut Vec<String>) {
    match std::fs::read(SELINUX_AUDIT_LOG) {
        Ok(bytes) => files.push(("system/selinux-audit.log".to_owned(), bytes)),
        Err(error) => missing.push(format!("SELinux audit log {SELINUX_AUDIT_LOG}: {error}")),
    }
}
