//! The stalled-reboot watchdog of [`super::Vm`].
//!
//! Under TCG a guest sometimes prints the kernel's `reboot: machine restart`
//! and then never comes back: QEMU keeps running, the firmware never starts
//! again. The wait watching for the next boot would sit out its whole
//! timeout (10-25 minutes) and fail a run that did nothing wrong. The
//! watchdog notices the silence and resets the machine through QMP, as
//! pressing the reset button would; the wait then goes on as for any boot.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The kernel's last line before it asks the machine to reset.
const RESTART_LINE: &[u8] = b"reboot: machine restart";
/// How long one QMP exchange may take.
const QMP_TIMEOUT: Duration = Duration::from_secs(10);

/// Tracks whether the serial log has ended in a restart line and stayed
/// unchanged since.
#[derive(Debug, Default)]
pub(super) struct StallWatch {
    /// Log length when the restart line was first seen at its end.
    len: usize,
    since: Option<Instant>,
}

impl StallWatch {
    /// True once `log` has ended with the restart line, unchanged, for
    /// `limit`.
    pub(super) fn stalled(&mut self, log: &[u8], limit: Duration) -> bool {
        if !ends_with_restart(log) {
            self.since = None;
            return false;
        }
        match self.since {
            Some(since) if self.len == log.len() => since.elapsed() >= limit,
            _ => {
                self.len = log.len();
                self.since = Some(Instant::now());
                false
            }
        }
    }
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
    let stream =
        UnixStream::connect(path).with_context(|| format!("connecting to {}", path.display()))?;
    stream.set_read_timeout(Some(QMP_TIMEOUT))?;
    stream.set_write_timeout(Some(QMP_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    // The greeting, then capabilities negotiation, then the command.
    reply(&mut reader, "the QMP greeting", "QMP")?;
    writer.write_all(b"{\"execute\":\"qmp_capabilities\"}\n")?;
    reply(&mut reader, "qmp_capabilities", "return")?;
    writer.write_all(b"{\"execute\":\"system_reset\"}\n")?;
    reply(&mut reader, "system_reset", "return")
}

/// Reads QMP lines until one carries `key` (events in between are skipped);
/// an `error` reply fails.
fn reply(reader: &mut impl BufRead, what: &str, key: &str) -> anyhow::Result<()> {
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
            return Ok(());
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
        assert!(
            !watch.stalled(&log, Duration::ZERO),
            "first sight starts the clock"
        );
        assert!(watch.stalled(&log, Duration::ZERO));
        let mut longer = log.clone();
        longer.extend_from_slice(b"[ 10.0] reboot: machine restart\n");
        assert!(
            !watch.stalled(&longer, Duration::ZERO),
            "new output restarts the clock"
        );
        assert!(!watch.stalled(&longer, Duration::from_secs(3600)));
    }

    /// The reset goes to a real QEMU over its QMP socket and is accepted.
    #[test]
    fn a_real_qemu_accepts_the_reset() {
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
        let result = system_reset(&qmp);
        let _ = qemu.kill();
        let _ = qemu.wait();
        result.expect("QMP system_reset");
        assert!(system_reset(&dir.path().join("absent.sock")).is_err());
    }
}
