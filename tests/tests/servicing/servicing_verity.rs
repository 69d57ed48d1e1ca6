//! A dm-verity root installed on a disk-image file through the real daemon
//! (`storage.verity` applied). This machine's kernel has no dm-verity, and
//! the daemon needs none: it writes the image's root to the data partition
//! and its hash tree to the hash partition, mounts the root read-only (a
//! read-only loop device) with the writable `/etc` overlay for configuring
//! it, and boots it by the root hash. Checked from outside: the partitions
//! still verify against the COSI's root hash (`veritysetup verify` works on
//! files, in user space), the configuration (fstab) went to the overlay's
//! upper directory, the boot entry carries the verity arguments, and the
//! Host Status handed to the installed OS records the root hash. The VM
//! scenario `verity` (tests/tests/vm/vm_verity.rs) boots such a root. Needs
//! root. A root whose ext4 blocks are smaller than dm-verity's 4 KiB data
//! blocks (it would not mount at boot) is refused before anything is
//! written, at install and at A/B update.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use trident_cosi::metadata::{PART_TYPE_ESP, PART_TYPE_ROOT_X86_64};
use trident_cosi::writer::{self, FixtureOutput, ImagePartition, ImagesSpec};
use trident_e2e::mini_os;
use trident_e2e::servicing_support::{self, Clients};
use trident_host::status::AbVolume;

/// `/boot`'s partition type (the Discoverable Partitions Specification's
/// XBOOTLDR).
const PART_TYPE_XBOOTLDR: &str = "bc13c2ff-59e6-4262-a352-b275fd6f7172";

/// ext4 image `name.img` of `size` from `tree`, with 4 KiB blocks (as a
/// verity root needs them: the dm-verity device's block size).
fn ext4(dir: &Path, name: &str, tree: &Path, size: &str) -> PathBuf {
    ext4_with_blocks(dir, name, tree, size, 4096)
}

/// ext4 image `name.img` of `size` from `tree` with `block_size`-byte blocks.
fn ext4_with_blocks(dir: &Path, name: &str, tree: &Path, size: &str, block_size: u32) -> PathBuf {
    let image = dir.join(format!("{name}.img"));
    mini_os::sh(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-b", &block_size.to_string(), "-d"])
            .arg(tree)
            .arg(&image)
            .arg(size),
    );
    image
}

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A verity OS as upstream's `verity` sample takes it: an ESP, `/boot`
/// (kernel and initrd), `/var` and a root packed `verity=yes`, whose
/// `/boot` and `/var` are empty mount points (nothing can make a mount
/// point in a read-only root: `/var/lib/trident` and the overlay's are
/// made on `/var`). Its root's ext4 has `root_block_size`-byte blocks.
fn verity_os(dir: &Path, root_block_size: u32) -> FixtureOutput {
    let root = dir.join("root-tree");
    let os_release = "ID=mini\nVERSION_ID=verity\nPRETTY_NAME=\"Mini verity\"\n";
    write(root.join("etc/os-release"), os_release);
    write(root.join("etc/fstab"), "# image fstab\n");
    write(
        root.join("etc/kernel/cmdline"),
        &format!("root=UUID=x ro {}\n", mini_os::CMDLINE),
    );
    write(
        root.join("usr/lib/systemd/boot/efi/systemd-bootx64.efi"),
        &mini_os::fake_systemd_boot("verity"),
    );
    for mount_point in ["boot", "var"] {
        std::fs::create_dir_all(root.join(mount_point)).unwrap();
    }
    let var = dir.join("var-tree");
    write(var.join("lib/image-var"), "the image's /var\n");
    let boot = dir.join("boot-tree");
    let release = mini_os::KERNEL_RELEASE;
    write(boot.join(format!("vmlinuz-{release}")), "kernel verity");
    write(boot.join(format!("initrd.img-{release}")), "initrd verity");
    std::fs::create_dir_all(boot.join("efi")).unwrap();
    let esp = dir.join("esp.img");
    mini_os::sh(
        Command::new("mkfs.vfat")
            .args(["-C", "-i", "12345678"])
            .arg(&esp)
            .arg("6144"),
    );
    let part = |image: PathBuf, name: &str, t: &str, fs: &str, mount: &str| {
        let uuid = mini_os::sh(
            Command::new("blkid")
                .args(["-o", "value", "-s", "UUID"])
                .arg(&image),
        );
        ImagePartition::new(image, name, t.parse().unwrap(), fs, uuid.trim(), mount)
    };
    let mut root_part = part(
        ext4_with_blocks(dir, "root", &root, "16M", root_block_size),
        "root",
        PART_TYPE_ROOT_X86_64,
        "ext4",
        "/",
    );
    root_part.verity = true;
    let spec = ImagesSpec {
        partitions: vec![
            part(esp, "esp", PART_TYPE_ESP, "vfat", "/boot/efi"),
            part(
                ext4(dir, "boot", &boot, "8M"),
                "boot",
                PART_TYPE_XBOOTLDR,
                "ext4",
                "/boot",
            ),
            root_part,
            part(
                ext4(dir, "var", &var, "8M"),
                "var",
                "4d21b016-b534-45c2-a9fb-5c16e091fd2d",
                "ext4",
                "/var",
            ),
        ],
        disk_size: None,
        lba_size: 512,
        zstd_level: writer::DEFAULT_ZSTD_LEVEL,
        os_release: os_release.to_owned(),
        bootloader: mini_os::type1_bootloader(),
    };
    writer::pack_images(&spec, &dir.join("verity.cosi")).unwrap()
}

/// Upstream's `verity` sample's storage, shrunk to the test disk: the
/// root's data and hash partitions, `/boot` and `/var` from the image, the
/// overlay's filesystem and the datastore's (both on `/var`).
fn config(image: &FixtureOutput, disk: &Path) -> String {
    format!(
        r#"image:
  url: file://{cosi}
  sha384: {sha}
storage:
  disks:
  - id: os
    device: {disk}
    partitionTableType: gpt
    partitions:
    - {{ id: esp, type: esp, size: 16M }}
    - {{ id: boot, type: xbootldr, size: 16M }}
    - {{ id: root-data, type: root, size: 32M }}
    - {{ id: root-hash, type: root-verity, size: 8M }}
    - {{ id: trident, type: linux-generic, size: 16M }}
    - {{ id: trident-overlay, type: linux-generic, size: 16M }}
    - {{ id: var, type: linux-generic, size: 16M }}
  filesystems:
  - {{ deviceId: esp, mountPoint: {{ path: /boot/efi, options: umask=0077 }} }}
  - {{ deviceId: boot, mountPoint: /boot }}
  - {{ deviceId: trident, source: new, type: ext4, mountPoint: /var/lib/trident }}
  - {{ deviceId: trident-overlay, source: new, type: ext4, mountPoint: /var/lib/trident-overlay }}
  - {{ deviceId: var, mountPoint: /var }}
  - {{ deviceId: root, mountPoint: {{ path: /, options: ro }} }}
  verity:
  - {{ id: root, name: root, dataDeviceId: root-data, hashDeviceId: root-hash, corruptionOption: panic }}
"#,
        cosi = image.path.display(),
        sha = image.metadata_sha384,
        disk = disk.display(),
    )
}

/// Partition `name` of `disk` copied out to `dir/<name>.part`.
fn copy_out(disk: &Path, dir: &Path, name: &str) -> PathBuf {
    let p = mini_os::partition(disk, name);
    let out = dir.join(format!("{name}.part"));
    mini_os::sh(
        Command::new("dd")
            .arg(format!("if={}", disk.display()))
            .arg(format!("of={}", out.display()))
            .args(["bs=512", "status=none", "iflag=skip_bytes,count_bytes"])
            .arg(format!("skip={}", p.offset))
            .arg(format!("count={}", p.size)),
    );
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_verity_root_is_installed_verifying_configured_through_the_etc_overlay_and_booted_by_its_root_hash()
 {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = servicing_support::Fixture::new();
    let dir = f.dir.path();
    let image = verity_os(dir, 4096);
    let root_hash = mini_os::cosi_verity_root_hash(&image.path, "/");
    let d = mini_os::uefi_daemon(dir).await;
    let mut c = Clients::new(&d).await;
    c.install(&config(&image, &f.disk)).await.assert_success();

    // The written root verifies: configuring it changed no data byte.
    let data = copy_out(&f.disk, dir, "root-data");
    let hash = copy_out(&f.disk, dir, "root-hash");
    mini_os::sh(
        Command::new("veritysetup")
            .arg("verify")
            .arg(&data)
            .arg(&hash)
            .arg(&root_hash),
    );
    // What configuring wrote to /etc is in the overlay's upper directory;
    // the root's own /etc is the image's.
    let fstab = mini_os::ext4_file(&f.disk, "trident-overlay", "/etc/upper/fstab");
    assert!(fstab.contains("/dev/mapper/root / ext4 ro 0 1"), "{fstab}");
    assert_eq!(
        mini_os::ext4_file(&f.disk, "root-data", "/etc/fstab"),
        "# image fstab\n"
    );
    // The entry opens the root by the image's root hash.
    let part = |name: &str| mini_os::partition(&f.disk, name).part_uuid;
    let entry = mini_os::esp_file(&f.disk, "loader/entries/trident-volume-a.conf").unwrap();
    let options = format!(
        "options root=/dev/mapper/root ro rd.systemd.verity=1 roothash={root_hash} \
         systemd.verity_root_data=PARTUUID={} systemd.verity_root_hash=PARTUUID={} \
         systemd.verity_root_options=panic-on-corruption \
         rd.overlayfs=etc,etc/upper,etc/work,/dev/disk/by-partuuid/{} {}\n",
        part("root-data"),
        part("root-hash"),
        part("trident-overlay"),
        mini_os::CMDLINE
    );
    assert!(entry.contains(&options), "{entry}\nwanted: {options}");
    assert_eq!(
        mini_os::esp_file(&f.disk, "trident/volume-a/vmlinuz").unwrap(),
        "kernel verity"
    );
    // The Host Status handed to the installed OS records the root hash.
    let handed = dir.join("handed.sqlite");
    let trident = mini_os::partition(&f.disk, "trident");
    mini_os::sh(
        Command::new("debugfs")
            .arg("-R")
            .arg(format!("dump /datastore.sqlite {}", handed.display()))
            .arg(format!("{}?offset={}", f.disk.display(), trident.offset)),
    );
    let ds = trident_host::datastore::Datastore::open_read_only(&handed).unwrap();
    let status = ds.host_status().unwrap();
    assert_eq!(
        status.verity_root_hashes[&AbVolume::VolumeA]["/"],
        root_hash,
        "{:?}",
        status.verity_root_hashes
    );
    assert_eq!(mini_os::loop_devices_on(&f.disk), "");
}

/// A root whose ext4 blocks (1 KiB, what mke2fs picks for a small image)
/// are smaller than dm-verity's 4 KiB data blocks would install and then
/// fail to mount at boot: the install is refused before the disk is
/// touched (no partition table, no ESP, no boot variable), with a
/// structured error naming the verity device and both block sizes, and
/// the host stays not provisioned. Needs no root: the refusal comes before
/// any loop device or mount.
#[tokio::test(flavor = "multi_thread")]
async fn a_verity_root_with_blocks_smaller_than_the_verity_data_blocks_is_refused_before_the_disk_is_written()
 {
    use trident_proto::v1::TridentErrorKind;
    use trident_proto::v1preview::ServicingState;

    let f = servicing_support::Fixture::new();
    let dir = f.dir.path();
    let image = verity_os(dir, 1024);
    let d = mini_os::uefi_daemon(dir).await;
    let mut c = Clients::new(&d).await;
    let run = c.install(&config(&image, &f.disk)).await;
    assert!(
        !run.succeeded(),
        "a 1 KiB-block verity root must be refused"
    );
    let error = run.error();
    assert_eq!(
        error.kind,
        TridentErrorKind::InvalidInputError as i32,
        "{error:?}"
    );
    assert_eq!(
        error.subkind, "image-does-not-match-configuration",
        "{error:?}"
    );
    for says in [
        "'storage.verity[0]'",
        "verity device 'root'",
        "'/' filesystem has 1024-byte ext4 blocks",
        "at least 4096 bytes",
    ] {
        assert!(
            error.error_message.contains(says),
            "wanted {says:?} in: {}",
            error.error_message
        );
    }
    let location = error.location.as_ref().unwrap();
    assert!(
        location.path.ends_with("image/verity_blocks.rs") && location.line > 0,
        "{location:?}"
    );
    // Nothing was written: the disk-image file is still all zeros (no
    // partition table, no ESP), no boot variable was set, and the Host
    // Status records no install.
    let disk = std::fs::read(&f.disk).unwrap();
    assert!(
        disk == vec![0u8; disk.len()],
        "the disk was written before the refusal"
    );
    let efivars: Vec<_> = std::fs::read_dir(dir.join("efivars"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(efivars.is_empty(), "boot variables written: {efivars:?}");
    assert_eq!(c.state().await, ServicingState::NotProvisioned);
    let last = c.last_error().await.unwrap();
    assert_eq!(last.subkind, "image-does-not-match-configuration");
    assert_eq!(mini_os::loop_devices_on(&f.disk), "");
}

/// [`config`] with the root's data and hash devices and the overlay on A/B
/// volume pairs (as upstream's `advanced` sample has them), shrunk to fit
/// the test disk twice.
fn ab_config(image: &FixtureOutput, disk: &Path) -> String {
    let yaml = config(image, disk)
        .replace(
            "    - { id: root-data, type: root, size: 32M }\n",
            "    - { id: data-a, type: root, size: 18M }\n    - { id: data-b, type: root, size: 18M }\n",
        )
        .replace(
            "    - { id: root-hash, type: root-verity, size: 8M }\n",
            "    - { id: hash-a, type: root-verity, size: 2M }\n    - { id: hash-b, type: root-verity, size: 2M }\n",
        )
        .replace(
            "    - { id: trident-overlay, type: linux-generic, size: 16M }\n",
            "    - { id: overlay-a, type: linux-generic, size: 8M }\n    - { id: overlay-b, type: linux-generic, size: 8M }\n",
        )
        .replace(
            "  filesystems:\n",
            "  abUpdate:\n    volumePairs:\n    - { id: root-data, volumeAId: data-a, volumeBId: data-b }\n    \
             - { id: root-hash, volumeAId: hash-a, volumeBId: hash-b }\n    \
             - { id: trident-overlay, volumeAId: overlay-a, volumeBId: overlay-b }\n  filesystems:\n",
        );
    for id in ["data-b", "hash-b", "overlay-b"] {
        assert!(yaml.contains(&format!("id: {id},")), "{yaml}");
    }
    yaml
}

/// The same refusal at an A/B update of a verity host: before the inactive
/// volume is written, the host staying provisioned on volume A.
#[tokio::test(flavor = "multi_thread")]
async fn an_ab_update_to_a_verity_root_with_small_blocks_is_refused_before_the_inactive_volume_is_written()
 {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the install before the update needs root (loop devices, mount)");
        return;
    }
    use trident_proto::v1preview::ServicingState;

    let f = servicing_support::Fixture::new();
    let dir = f.dir.path();
    let v1 = verity_os(&dir.join("v1"), 4096);
    let d = mini_os::uefi_daemon(dir).await;
    let mut c = Clients::new(&d).await;
    c.install(&ab_config(&v1, &f.disk)).await.assert_success();
    mini_os::set_booted_entry(dir, "trident-volume-a.conf");
    c.commit().await.assert_success();
    assert_eq!(c.state().await, ServicingState::Provisioned);

    let v2 = verity_os(&dir.join("v2"), 1024);
    let stage = c.update_stage(&ab_config(&v2, &f.disk)).await;
    assert!(
        !stage.succeeded(),
        "a 1 KiB-block verity root must be refused"
    );
    let error = stage.error();
    assert_eq!(
        error.subkind, "image-does-not-match-configuration",
        "{error:?}"
    );
    assert!(
        error.error_message.contains("'storage.verity[0]'")
            && error.error_message.contains("1024-byte"),
        "{}",
        error.error_message
    );
    for inactive in ["data-b", "hash-b"] {
        let p = mini_os::partition(&f.disk, inactive);
        let mut bytes = vec![0u8; p.size as usize];
        std::os::unix::fs::FileExt::read_exact_at(
            &std::fs::File::open(&f.disk).unwrap(),
            &mut bytes,
            p.offset,
        )
        .unwrap();
        assert!(
            bytes.iter().all(|b| *b == 0),
            "{inactive} was written before the refusal"
        );
    }
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(mini_os::loop_devices_on(&f.disk), "");
}
