//! The clean-install safety check with a loop device over a disk-image
//! file standing in for "the disk of the running root": the daemon is
//! handed a mount table whose `/` is on that loop device
//! (`--host-mountinfo`) and a kernel command line (`--kernel-cmdline-file`).
//! An install onto it from an installed OS is refused naming the disk, with
//! not a byte written and no script run; from installer media
//! (`root=live:`) or with `--allow-install-on-running-disk` it installs; a
//! root on another disk does not stop it. The machine's real disks and
//! mount table are never involved. Needs root (losetup).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha384};
use trident_e2e::Daemon;
use trident_e2e::servicing_support::{self, Clients, Fixture};
use trident_proto::v1::TridentErrorKind;

/// A loop device over a disk-image file; detached when dropped.
struct LoopDevice(String);

impl LoopDevice {
    fn attach(file: &Path) -> LoopDevice {
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(file)
            .output()
            .unwrap();
        assert!(out.status.success(), "losetup: {out:?}");
        LoopDevice(String::from_utf8(out.stdout).unwrap().trim().to_owned())
    }

    /// `major:minor` from sysfs.
    fn devnum(&self) -> String {
        let name = self.0.trim_start_matches("/dev/");
        std::fs::read_to_string(format!("/sys/class/block/{name}/dev"))
            .unwrap()
            .trim()
            .to_owned()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

fn sha384_file(path: &Path) -> String {
    hex::encode(Sha384::digest(std::fs::read(path).unwrap()))
}

/// Installs the fixture onto `device` by a daemon that sees `/` on
/// `root_device` (`root_devnum`) and boots with `cmdline`, plus `flags`.
async fn install(
    fx: &Fixture,
    device: &str,
    (root_device, root_devnum): (&str, &str),
    cmdline: &str,
    flags: &[&str],
) -> servicing_support::Collected {
    let dir = fx.dir.path();
    let mountinfo = dir.join("mountinfo");
    std::fs::write(
        &mountinfo,
        format!(
            "22 1 0:21 / /proc rw shared:12 - proc proc rw\n\
             25 1 {root_devnum} / / rw,relatime shared:1 - ext4 {root_device} rw\n"
        ),
    )
    .unwrap();
    let cmdline_file = dir.join("cmdline");
    std::fs::write(&cmdline_file, format!("{cmdline}\n")).unwrap();
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0"])
        .arg("--host-mountinfo")
        .arg(&mountinfo)
        .arg("--kernel-cmdline-file")
        .arg(&cmdline_file)
        .args(flags)
        .spawn()
        .await
        .unwrap();
    let mut clients = Clients::new(&daemon).await;
    let image = fx.image("image", 41, None);
    let marker = dir.join("pre-servicing-ran");
    let config = fx
        .config(
            &image,
            &format!(
                "scripts:\n  preServicing:\n  - name: marker\n    content: \"touch {}\"\n",
                marker.display()
            ),
        )
        .replace(fx.disk.to_str().unwrap(), device);
    let run = clients.install(&config).await;
    assert_eq!(
        marker.exists(),
        run.succeeded(),
        "preServicing runs only once the check passed"
    );
    run
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clean_install_onto_the_running_roots_disk_is_refused_naming_it() {
    let fx = Fixture::new();
    let device = LoopDevice::attach(&fx.disk);
    let before = sha384_file(&fx.disk);
    let run = install(
        &fx,
        &device.0,
        (&device.0, &device.devnum()),
        &format!("BOOT_IMAGE=/vmlinuz root={} ro", device.0),
        &[],
    )
    .await;
    assert!(!run.succeeded());
    let error = run.error();
    eprintln!("{}", error.message);
    assert_eq!(error.kind(), TridentErrorKind::InitializationError);
    assert_eq!(error.subkind, "clean-install-safety-check");
    assert!(error.message.contains("disk 'os'"), "{}", error.message);
    assert!(error.message.contains(&device.0), "{}", error.message);
    assert!(
        error.message.contains("--allow-install-on-running-disk"),
        "{}",
        error.message
    );
    assert_eq!(sha384_file(&fx.disk), before, "nothing written");
}

#[tokio::test(flavor = "multi_thread")]
async fn installer_media_or_the_flag_or_another_root_disk_lets_the_install_run() {
    let persistent = |device: &str| format!("BOOT_IMAGE=/vmlinuz root={device} ro");
    for (name, live, flags) in [
        ("live media", true, &[][..]),
        ("flag", false, &["--allow-install-on-running-disk"][..]),
    ] {
        let fx = Fixture::new();
        let device = LoopDevice::attach(&fx.disk);
        let cmdline = if live {
            "BOOT_IMAGE=/vmlinuz root=live:CDLABEL=installer rd.live.image".to_owned()
        } else {
            persistent(&device.0)
        };
        let root = (device.0.as_str(), device.devnum());
        let run = install(&fx, &device.0, (root.0, &root.1), &cmdline, flags).await;
        assert!(run.succeeded(), "{name}: {:#?}", run.completed().error);
    }
    // The root on another disk: the install onto this one runs.
    let fx = Fixture::new();
    let other_file = fx.dir.path().join("other-root.img");
    std::fs::File::create(&other_file)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let other = LoopDevice::attach(&other_file);
    let device = LoopDevice::attach(&fx.disk);
    let run = install(
        &fx,
        &device.0,
        (&other.0, &other.devnum()),
        &persistent(&other.0),
        &[],
    )
    .await;
    assert!(run.succeeded(), "other root: {:#?}", run.completed().error);
}
