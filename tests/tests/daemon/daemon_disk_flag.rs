//! `--disk` accepts only block devices and regular files: anything else
//! stops tridentd at start-up, before it takes the socket.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use trident_e2e::bin_path;

/// Runs tridentd with `--disk disk`; a daemon still running after a
/// generous bound was not refused: it is killed and the test fails.
fn start_with_disk(disk: &Path, dir: &Path) -> Output {
    let mut child = Command::new(bin_path("tridentd"))
        .arg("--socket")
        .arg(dir.join("s.sock"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["--inactivity-timeout", "0", "--disk"])
        .arg(disk)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "tridentd started with --disk {disk:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

fn assert_refused(disk: &Path, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = start_with_disk(disk, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started with --disk {disk:?}");
    assert!(
        stderr.contains(&disk.display().to_string()) && stderr.contains(what),
        "{stderr}"
    );
    assert!(!dir.path().join("s.sock").exists(), "socket was created");
}

#[test]
fn a_directory_as_disk_is_refused_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    assert_refused(dir.path(), "is a directory");
}

#[test]
fn a_character_device_as_disk_is_refused_at_start_up() {
    assert_refused(Path::new("/dev/null"), "character device");
}
