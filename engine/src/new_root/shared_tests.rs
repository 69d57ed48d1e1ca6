//! An A/B update's new root gets the running system's shared filesystems
//! bound in (`NewRoot::bind_shared`): the same filesystem, so what
//! configuring the new OS writes there is what the running system sees;
//! a directory where the running system does not have the configured
//! device mounted is left out. Needs root (mount, losetup).
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;

use trident_host::status::{AbVolume, HostStatus, PartitionLayout};

use super::hostile_root::HostileRoot;
use super::probe::FsKind;
use super::root_dir::RootDir;
use super::tools::{BindGuard, LoopDevice};
use super::{NewRoot, SharedFs, mounts_device};
use crate::block_device::BlockDevices;

const YAML: &str = r#"
image: { url: "file:///img.cosi", sha384: ignored }
storage:
  disks:
  - id: d
    device: /dev/vda
    partitions:
    - { id: root-a, type: root, size: 1G }
    - { id: root-b, type: root, size: 1G }
    - { id: home, type: linux-generic, size: 1G }
  abUpdate:
    volumePairs:
    - { id: root, volumeAId: root-a, volumeBId: root-b }
  filesystems:
  - { deviceId: root, mountPoint: / }
  - { deviceId: home, source: new, type: ext4, mountPoint: /home }
"#;

fn mount_tmpfs(dir: &Path) {
    run("mount", &["-t", "tmpfs", "tmpfs", &dir.to_string_lossy()]);
}

/// Runs `tool` with `args`; it must succeed.
fn run(tool: &str, args: &[&str]) {
    let status = Command::new(tool).args(args).status().unwrap();
    assert!(status.success(), "{tool} {args:?}: {status}");
}

#[test]
fn a_shared_filesystem_not_mounted_from_its_device_is_not_bound() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: mount needs root");
        return;
    }
    let hc = trident_host::config::parse(YAML).unwrap();
    let devices = BlockDevices::new(&hc, &HostStatus::default()).unwrap();
    assert_eq!(
        devices.shared_mount_points(),
        [("/home".to_owned(), "home".to_owned())]
    );
    let dir = tempfile::tempdir().unwrap();
    // A tmpfs where the running system would have /home: not the
    // configured partition (a disk-image target, a host serviced from
    // elsewhere).
    let home = dir.path().join("host/home");
    fs::create_dir_all(&home).unwrap();
    mount_tmpfs(&home);
    let path = dir.path().join("new-root");
    fs::create_dir_all(&path).unwrap();
    let mut root = NewRoot {
        path: path.clone(),
        dir: Some(RootDir::open(&path).unwrap()),
        hc,
        volume: AbVolume::VolumeB,
        devices,
        partitions: BTreeMap::new(),
        mounted: Vec::new(),
        etc_overlay: None,
        shared: Vec::new(),
    };
    root.bind_shared(&[SharedFs {
        mount_point: "/home".into(),
        device_id: "home".into(),
        source: home.clone(),
    }])
    .unwrap();
    assert!(root.shared.is_empty());
    assert!(!path.join("home").exists(), "nothing bound");
    root.unmount().unwrap();
    run("umount", &[&home.to_string_lossy()]);
}

#[test]
fn the_running_systems_mount_of_a_device_is_bound_into_the_new_root() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: mount needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("home.ext4");
    fs::File::create(&image).unwrap().set_len(8 << 20).unwrap();
    run("mkfs.ext4", &["-q", "-F", &image.to_string_lossy()]);
    let (device, other) = (
        LoopDevice::attach(&image.to_string_lossy(), 0, 8 << 20).unwrap(),
        LoopDevice::attach(&image.to_string_lossy(), 0, 4 << 20).unwrap(),
    );
    let home = dir.path().join("host/home");
    fs::create_dir_all(&home).unwrap();
    run("mount", &[&device.path_str(), &home.to_string_lossy()]);
    fs::write(home.join("from-the-running-system"), "a").unwrap();
    assert!(mounts_device(&home, device.path()));
    assert!(!mounts_device(&home, other.path()), "another device");
    assert!(!mounts_device(dir.path(), device.path()), "not its mount");
    let target = dir.path().join("new-root/home");
    fs::create_dir_all(&target).unwrap();
    let bind = BindGuard::bind(&home, &target).unwrap();
    assert_eq!(
        fs::read_to_string(target.join("from-the-running-system")).unwrap(),
        "a"
    );
    fs::write(target.join("from-the-new-os"), "b").unwrap();
    bind.unmount().unwrap();
    assert!(!target.join("from-the-new-os").exists(), "unbound");
    assert_eq!(
        fs::read_to_string(home.join("from-the-new-os")).unwrap(),
        "b",
        "the new OS wrote to the running system's filesystem itself"
    );
    run("umount", &[&home.to_string_lossy()]);
}

/// Issue 37: a filesystem of the new root is mounted on its mount point as
/// the installed OS resolves it, inside the root: a symlink on the way
/// (`/boot -> /...`, `/boot/efi -> ../../..`) never puts the mount on the
/// host.
#[test]
fn mount_points_stay_inside_a_root_whose_links_point_out() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: mount needs root");
        return;
    }
    let images = tempfile::tempdir().unwrap();
    let image = images.path().join("fs.img");
    fs::File::create(&image).unwrap().set_len(8 << 20).unwrap();
    run("mkfs.ext4", &["-q", "-F", &image.to_string_lossy()]);
    let target = crate::block_device::ResolvedDevice::Partition {
        id: "boot".into(),
        layout: PartitionLayout {
            disk_id: "d".into(),
            device: image.to_string_lossy().into_owned(),
            number: 1,
            offset: 0,
            size: 8 << 20,
        },
    };
    let hc = trident_host::config::parse(YAML).unwrap();
    let devices = BlockDevices::new(&hc, &HostStatus::default()).unwrap();
    for hostile in HostileRoot::variants("/boot/efi") {
        let mut root = NewRoot {
            path: hostile.root.clone(),
            dir: Some(RootDir::open(&hostile.root).unwrap()),
            hc: hc.clone(),
            volume: AbVolume::VolumeA,
            devices: devices.clone(),
            partitions: BTreeMap::new(),
            mounted: Vec::new(),
            etc_overlay: None,
            shared: Vec::new(),
        };
        root.mount_one("/boot/efi", &target, FsKind::Ext4).unwrap();
        root.dir()
            .write_file(
                Path::new("/boot/efi/written"),
                b"on the filesystem\n",
                0o644,
            )
            .unwrap();
        let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
        let landing = hostile.landing().display().to_string();
        assert!(
            mounts
                .lines()
                .any(|l| l.split(' ').nth(4) == Some(landing.as_str())),
            "{}: not mounted at {landing}",
            hostile.variant
        );
        hostile.assert_outside_untouched();
        root.unmount().unwrap();
        hostile.assert_outside_untouched();
    }
    // What was written went to the filesystem, mounted each time.
    let listing = Command::new("debugfs")
        .args(["-R", "cat /written"])
        .arg(&image)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&listing.stdout),
        "on the filesystem\n"
    );
}
