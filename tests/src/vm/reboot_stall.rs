//! The stalled-boot watchdog of [`super::Vm`].
//!
//! Under TCG a guest sometimes stops between the kernel's reboot and the
//! next kernel, and QEMU keeps running:
//! - after the kernel's `reboot: machine restart` the firmware never
//!   starts again. Nothing has been chosen yet, so a reset (as pressing
//!   the reset button would) boots what the guest asked for, and the wait
//!   goes on as for any boot.
//! - the firmware has started a boot option (`BdsDxe: starting ...`) and
//!   the boot loader stops printing before the kernel starts (seen once,
//!   in GRUB's first `search`). A reset would not boot the same thing:
//!   the firmware has consumed `BootNext`. The watchdog saves the vCPUs'
//!   registers for diagnosis, kicks the vCPUs once (QMP `stop` and
//!   `cont`), and if the guest stays silent the wait fails at once with
//!   what it saw instead of sitting out its whole timeout (10-25 minutes).
//!
//! A running kernel may be silent for long; only these two phases are
//! watched.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The kernel's last line before it asks the machine to reset.
const RESTART_LINE: &[u8] = b"reboot: machine restart";
/// The firmware's line as it hands over to a boot option's loader.
const FIRMWARE_START: &[u8] = b"BdsDxe: starting";
/// How long one QMP exchange may take.
const QMP_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a silent guest stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stall {
    /// After the kernel's restart line, before the firmware's first line.
    Restart,
    /// In the boot loader the firmware started, before the kernel.
    BootLoader,
}

/// Tracks how long the serial log has stayed unchanged, and in which
/// phase.
#[derive(Debug, Default)]
pub(super) struct StallWatch {
    /// Log length when the silence began.
    len: usize,
    since: Option<Instant>,
}

impl StallWatch {
    /// The stall, once `log` has stayed unchanged for `limit` in a watched
    /// phase.
    pub(super) fn stalled(&mut self, log: &[u8], limit: Duration) -> Option<Stall> {
        let phase = phase(log)?;
        match self.since {
            Some(since) if self.len == log.len() => (since.elapsed() >= limit).then_some(phase),
            _ => {
                self.len = log.len();
                self.since = Some(Instant::now());
                None
            }
        }
    }
}

/// The watched phase `log` ends in, if any.
fn phase(log: &[u8]) -> Option<Stall> {
    if ends_with_restart(log) {
        return Some(Stall::Restart);
    }
    let started = rfind(log, FIRMWARE_START)?;
    match log[started..].split(|&b| b == b'\n').any(is_kernel_line) {
        true => None,
        false => Some(Stall::BootLoader),
    }
}

/// A kernel log line on the console: `[  12.345678] ...` (whatever its
/// level: a `quiet` kernel prints no `Linux version`, but prints its
/// warnings and systemd's lines with timestamps).
fn is_kernel_line(line: &[u8]) -> bool {
    let line = line.strip_prefix(b"\r").unwrap_or(line);
    let Some(rest) = line.strip_prefix(b"[") else {
        return false;
    };
    let Some(close) = rest.iter().position(|&b| b == b']') else {
        return false;
    };
    let stamp = rest[..close].trim_ascii_start();
    match stamp.iter().position(|&b| b == b'.') {
        Some(dot) => {
            dot > 0
                && dot + 1 < stamp.len()
                && stamp
                    .iter()
                    .enumerate()
                    .all(|(i, b)| i == dot || b.is_ascii_digit())
        }
        None => false,
    }
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// Whether the last non-blank line of `log` is the kernel's restart line.
fn ends_with_restart(log: &[u8]) -> bool {
    let trimmed = log
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(&log[..0], |end| &log[..=end]);
    let last_line = trimmed
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(trimmed, |nl| &trimmed[nl + 1..]);
    last_line
        .windows(RESTART_LINE.len())
        .any(|w| w == RESTART_LINE)
}

/// Resets the machine through the QMP socket at `path` (`system_reset`).
pub(super) fn system_reset(path: &Path) -> anyhow::Result<()> {
    execute(path, &["system_reset"]).map(drop)
}

/// Stops and resumes every vCPU (QMP `stop`, `cont`), after saving their
/// registers (HMP `info registers -a`), which it returns.
pub(super) fn kick(path: &Path) -> anyhow::Result<String> {
    let registers = human_command(path, "info registers -a")?;
    execute(path, &["stop", "cont"])?;
    Ok(registers)
}

/// Runs an HMP command through QMP; returns its text.
fn human_command(path: &Path, command: &str) -> anyhow::Result<String> {
    let request = serde_json::json!({
        "execute": "human-monitor-command",
        "arguments": { "command-line": command },
    });
    let replies = exchange(path, &[request])?;
    Ok(replies
        .first()
        .and_then(|r| r.get("return"))
        .and_then(|r| r.as_str())
        .unwrap_or_default()
        .to_owned())
}

/// Runs argument-less QMP commands in order.
fn execute(path: &Path, commands: &[&str]) -> anyhow::Result<Vec<serde_json::Value>> {
    let requests: Vec<_> = commands
        .iter()
        .map(|c| serde_json::json!({ "execute": c }))
        .collect();
    exchange(path, &requests)
}

/// One QMP session: the greeting, capabilities negotiation, then each
/// request and its reply.
fn exchange(path: &Path, requests: &[serde_json::Value]) -> anyhow::Result<Vec<serde_json::Value>> {
    let stream =
        UnixStream::connect(path).with_context(|| format!("connecting to {}", path.display()))?;
    stream.set_read_timeout(Some(QMP_TIMEOUT))?;
    stream.set_write_timeout(Some(QMP_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    reply(&mut reader, "the QMP greeting", "QMP")?;
    writer.write_all(b"{\"execute\":\"qmp_capabilities\"}\n")?;
    reply(&mut reader, "qmp_capabilities", "return")?;
    let mut replies = Vec::new();
    for request in requests {
        writer.write_all(format!("{request}\n").as_bytes())?;
        replies.push(reply(&mut reader, &request.to_string(), "return")?);
    }
    Ok(replies)
}

/// Reads QMP lines until one carries `key` (events in between are skipped);
/// an `error` reply fails. Returns that line.
fn reply(reader: &mut impl BufRead, what: &str, key: &str) -> anyhow::Result<serde_json::Value> {
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            bail!("QMP closed before the reply to {what}");
        }
        let value: serde_json::Value =
            serde_json::from_str(&line).with_context(|| format!("QMP reply to {what}: {line}"))?;
        if value.get("error").is_some() {
            bail!("QMP refused {what}: {line}");
        }
        if value.get(key).is_some() {
            return Ok(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_ending_in_the_restart_line_is_a_candidate() {
        assert!(ends_with_restart(
            b"x\r\n[  1.0] reboot: machine restart\r\n"
        ));
        assert!(!ends_with_restart(
            b"[  1.0] reboot: machine restart\r\nBdsDxe: loading\r\n"
        ));
        assert!(!ends_with_restart(b""));
    }

    #[test]
    fn the_watch_fires_only_after_the_limit_with_no_new_output() {
        let mut watch = StallWatch::default();
        let log = b"[ 9.9] reboot: machine restart\n".to_vec();
        assert_eq!(
            watch.stalled(&log, Duration::ZERO),
            None,
            "first sight starts the clock"
        );
        assert_eq!(watch.stalled(&log, Duration::ZERO), Some(Stall::Restart));
        let mut longer = log.clone();
        longer.extend_from_slice(b"[ 10.0] reboot: machine restart\n");
        assert_eq!(
            watch.stalled(&longer, Duration::ZERO),
            None,
            "new output restarts the clock"
        );
        assert_eq!(watch.stalled(&longer, Duration::from_secs(3600)), None);
    }

    #[test]
    fn only_the_firmware_and_boot_loader_phases_are_watched() {
        let restart = b"[ 9.9] reboot: machine restart\r\n".to_vec();
        let mut loader = restart.clone();
        loader.extend_from_slice(b"BdsDxe: starting Boot0005 \"AZLB\"\r\nWelcome to GRUB!\r\n");
        let mut kernel = loader.clone();
        kernel.extend_from_slice(b"[    0.000000] Linux version 6.1.0\r\n");
        let mut next_loader = kernel.clone();
        next_loader.extend_from_slice(b"BdsDxe: starting Boot0004 \"AZLA\"\r\n");
        assert_eq!(phase(&restart), Some(Stall::Restart));
        assert_eq!(phase(&loader), Some(Stall::BootLoader));
        assert_eq!(phase(&kernel), None, "a running kernel may be silent");
        assert_eq!(phase(&next_loader), Some(Stall::BootLoader));
        assert_eq!(phase(b"[ 5.0] before any firmware line\n"), None);
        let mut quiet = loader.clone();
        quiet.extend_from_slice(b"\r[   12.5] systemd[1]: a quiet kernel's first line\r\n");
        assert_eq!(phase(&quiet), None, "any kernel timestamp counts");
        let mut not_kernel = loader.clone();
        not_kernel.extend_from_slice(b"[0m[37m[40m error: no such device\r\n");
        assert_eq!(phase(&not_kernel), Some(Stall::BootLoader));
    }

    /// The reset and the kick go to a real QEMU over its QMP socket and are
    /// accepted; the kick returns the registers.
    #[test]
    fn a_real_qemu_accepts_the_reset_and_the_kick() {
        let dir = tempfile::tempdir().expect("temp dir");
        let qmp = dir.path().join("qmp.sock");
        let mut qemu = std::process::Command::new("qemu-system-x86_64")
            .args([
                "-machine",
                "q35",
                "-accel",
                "tcg",
                "-nodefaults",
                "-display",
                "none",
                "-S",
            ])
            .arg("-qmp")
            .arg(format!("unix:{},server=on,wait=off", qmp.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("qemu-system-x86_64 (package qemu-system-x86)");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !qmp.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let reset = system_reset(&qmp);
        let kicked = kick(&qmp);
        let _ = qemu.kill();
        let _ = qemu.wait();
        reset.expect("QMP system_reset");
        let registers = kicked.expect("QMP stop, cont and info registers");
        assert!(
            registers.contains("CPU#0") && registers.contains("IP="),
            "{registers}"
        );
        assert!(system_reset(&dir.path().join("absent.sock")).is_err());
    }
}
