//! A tiny "OS" with real filesystems for servicing tests that mount what
//! they write: an ext4 root (os-release, a fake kernel and initrd, a fake
//! systemd-boot binary, a static busybox as /bin/sh) and a vfat ESP, packed as a COSI; and readers of
//! the target disk that need no mount (debugfs, mtools).

#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use trident_cosi::gpt::Gpt;
use trident_cosi::metadata::{
    Bootloader, BootloaderType, PART_TYPE_ESP, PART_TYPE_ROOT_X86_64, SystemdBoot,
    SystemdBootEntry, SystemdBootEntryType,
};
use trident_cosi::writer::{self, FixtureOutput, ImagePartition, ImagesSpec};

pub const KERNEL_RELEASE: &str = "6.1.0-mini";
pub const CMDLINE: &str = "console=ttyS0 quiet";
/// Content of the fake systemd-boot EFI binary in the image (followed by
/// the image's version: [`fake_systemd_boot`]).
pub const FAKE_SYSTEMD_BOOT: &str = "fake systemd-boot efi binary";

/// The fake systemd-boot of version `version` of the mini OS.
pub fn fake_systemd_boot(version: &str) -> String {
    format!("{FAKE_SYSTEMD_BOOT} {version}")
}

/// What a real OS has and the OS configuration edits: account databases
/// (`useradd --root`), sshd's config, a unit to enable.
pub const BASE_FILES: [(&str, &str); 6] = [
    ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
    ("etc/group", "root:x:0:\n"),
    ("etc/shadow", "root:*:19000:0:99999:7:::\n"),
    ("etc/gshadow", "root:*::\n"),
    ("etc/ssh/sshd_config", "PasswordAuthentication no\n"),
    (
        "usr/lib/systemd/system/site.service",
        "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
    ),
];

pub fn running_as_root() -> bool {
    nix_euid() == 0
}

fn nix_euid() -> u32 {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

pub fn sh(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// How a mini OS boots (its COSI's bootloader metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MiniBoot {
    /// systemd-boot, a Type 1 entry.
    Type1,
    /// shim + GRUB: fake ones in the ESP image's `EFI/BOOT/`
    /// ([`fake_loader`]).
    Grub,
}

/// The fake loader `name` (shim, grub) of version `version`.
pub fn fake_loader(name: &str, version: &str) -> String {
    format!("fake {name} efi binary {version}")
}

/// Builds version `version` of the mini OS in `dir` and packs it.
pub fn build(dir: &Path, version: &str) -> FixtureOutput {
    build_with(dir, version, MiniBoot::Type1)
}

/// Builds version `version` of the mini OS booting as `boot`.
pub fn build_with(dir: &Path, version: &str, boot: MiniBoot) -> FixtureOutput {
    let tree = dir.join(format!("{version}-tree"));
    let os_release = format!("ID=mini\nVERSION_ID={version}\nPRETTY_NAME=\"Mini {version}\"\n");
    for sub in ["etc", "boot", "usr/lib/systemd/boot/efi"] {
        std::fs::create_dir_all(tree.join(sub)).unwrap();
    }
    std::fs::write(tree.join("etc/os-release"), &os_release).unwrap();
    std::fs::write(tree.join("etc/fstab"), "# image fstab\n").unwrap();
    for (path, text) in BASE_FILES {
        let path = tree.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir_all(tree.join("etc/kernel")).unwrap();
    std::fs::write(
        tree.join("etc/kernel/cmdline"),
        format!("root=UUID=x ro {CMDLINE}\n"),
    )
    .unwrap();
    std::fs::write(
        tree.join(format!("boot/vmlinuz-{KERNEL_RELEASE}")),
        format!("kernel {version}"),
    )
    .unwrap();
    std::fs::write(
        tree.join(format!("boot/initrd.img-{KERNEL_RELEASE}")),
        format!("initrd {version}"),
    )
    .unwrap();
    std::fs::write(
        tree.join("usr/lib/systemd/boot/efi/systemd-bootx64.efi"),
        fake_systemd_boot(version),
    )
    .unwrap();
    add_busybox(&tree);
    let root = dir.join(format!("{version}-root.img"));
    sh(Command::new("mkfs.ext4")
        .args(["-q", "-F", "-d"])
        .arg(&tree)
        .arg(&root)
        .arg("16M"));
    let esp = dir.join(format!("{version}-esp.img"));
    let _ = std::fs::remove_file(&esp);
    sh(Command::new("mkfs.vfat")
        .args(["-C", "-i", "12345678"])
        .arg(&esp)
        .arg("6144"));
    if boot == MiniBoot::Grub {
        let esp_spec = esp.to_string_lossy().into_owned();
        sh(Command::new("mmd")
            .args(["-i", &esp_spec, "::/EFI", "::/EFI/BOOT"])
            .env("MTOOLS_SKIP_CHECK", "1"));
        for (name, path) in [("shim", "BOOTX64.EFI"), ("grub", "grubx64.efi")] {
            let file = dir.join(format!("{version}-{name}.efi"));
            std::fs::write(&file, fake_loader(name, version)).unwrap();
            sh(Command::new("mcopy")
                .args(["-i", &esp_spec])
                .arg(&file)
                .arg(format!("::/EFI/BOOT/{path}"))
                .env("MTOOLS_SKIP_CHECK", "1"));
        }
    }
    let part =
        |image: PathBuf, name: &str, t: &str, fs: &str, uuid: &str, mp: &str| ImagePartition {
            image,
            name: name.to_owned(),
            part_type: t.parse().unwrap(),
            fs_type: fs.to_owned(),
            fs_uuid: uuid.to_owned(),
            mount_point: mp.to_owned(),
            size: None,
            verity: false,
        };
    let root_uuid = sh(Command::new("blkid")
        .args(["-o", "value", "-s", "UUID"])
        .arg(&root));
    let spec = ImagesSpec {
        partitions: vec![
            part(esp, "esp", PART_TYPE_ESP, "vfat", "1234-5678", "/boot/efi"),
            part(
                root,
                "root",
                PART_TYPE_ROOT_X86_64,
                "ext4",
                root_uuid.trim(),
                "/",
            ),
        ],
        disk_size: None,
        lba_size: 512,
        zstd_level: writer::DEFAULT_ZSTD_LEVEL,
        os_release,
        bootloader: match boot {
            MiniBoot::Grub => Bootloader {
                bootloader_type: BootloaderType::Grub,
                systemd_boot: None,
            },
            MiniBoot::Type1 => type1_bootloader(),
        },
    };
    writer::pack_images(&spec, &dir.join(format!("{version}.cosi"))).unwrap()
}

/// The mini OS's systemd-boot metadata: one Type 1 entry (kernel
/// [`KERNEL_RELEASE`], [`CMDLINE`]).
pub fn type1_bootloader() -> Bootloader {
    Bootloader {
        bootloader_type: BootloaderType::SystemdBoot,
        systemd_boot: Some(SystemdBoot {
            entries: vec![SystemdBootEntry {
                entry_type: SystemdBootEntryType::Config,
                path: format!("loader/entries/mini-{KERNEL_RELEASE}.conf"),
                kernel: KERNEL_RELEASE.to_owned(),
                cmdline: CMDLINE.to_owned(),
            }],
        }),
    }
}

/// Applets of the image's shell (chrooted postConfigure scripts).
const BUSYBOX_APPLETS: [&str; 5] = ["sh", "cat", "grep", "ls", "touch"];

/// A static busybox as the image's `/bin/sh` and a few tools, so scripts
/// run chrooted into the new root have a shell (busybox-static).
fn add_busybox(tree: &Path) {
    let busybox = ["/usr/bin/busybox", "/bin/busybox"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("busybox-static is needed (scripts/test.sh installs it)");
    std::fs::create_dir_all(tree.join("bin")).unwrap();
    std::fs::copy(busybox, tree.join("bin/busybox")).unwrap();
    for applet in BUSYBOX_APPLETS {
        std::os::unix::fs::symlink("busybox", tree.join("bin").join(applet)).unwrap();
    }
}

/// A partition of the target disk, by GPT name.
#[derive(Debug, Clone)]
pub struct DiskPartition {
    pub offset: u64,
    pub size: u64,
    pub part_uuid: String,
}

pub fn partition(disk: &Path, name: &str) -> DiskPartition {
    let file = File::open(disk).unwrap();
    let mut head = vec![0u8; 34 * 512];
    file.read_exact_at(&mut head, 0).unwrap();
    let gpt = Gpt::parse_primary(&head, 512).unwrap();
    let e = gpt.partitions().iter().find(|e| e.name == name).unwrap();
    DiskPartition {
        offset: e.start_offset(512),
        size: e.size_bytes(512),
        part_uuid: e.unique_guid.to_string(),
    }
}

/// A file of the ext4 filesystem in partition `name`, read with debugfs.
pub fn ext4_file(disk: &Path, name: &str, path: &str) -> String {
    debugfs(disk, name, &format!("cat {path}"))
}

/// Runs one debugfs `request` on the ext4 filesystem in partition `name`
/// (e.g. `dump FILE OUT`, `rdump DIR OUTDIR`); returns its output.
pub fn debugfs(disk: &Path, name: &str, request: &str) -> String {
    let p = partition(disk, name);
    sh(Command::new("debugfs").arg("-R").arg(request).arg(format!(
        "{}?offset={}",
        disk.display(),
        p.offset
    )))
}

/// Size in bytes of the ext4 filesystem in partition `name`.
pub fn ext4_size(disk: &Path, name: &str) -> u64 {
    let p = partition(disk, name);
    let out = sh(Command::new("dumpe2fs").arg("-h").arg(format!(
        "{}?offset={}",
        disk.display(),
        p.offset
    )));
    let field = |key: &str| -> u64 {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    field("Block count:") * field("Block size:")
}

/// A file of the vfat ESP, read with mtools (`None`: absent).
pub fn esp_file(disk: &Path, path: &str) -> Option<String> {
    let p = partition(disk, "esp");
    let out = Command::new("mtype")
        .arg("-i")
        .arg(format!("{}@@{}", disk.display(), p.offset))
        .arg(format!("::{path}"))
        .env("MTOOLS_SKIP_CHECK", "1")
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Loop devices still attached to `disk`.
pub fn loop_devices_on(disk: &Path) -> String {
    sh(Command::new("losetup").arg("-j").arg(disk))
}

/// The `/proc/stat` stand-in of [`uefi_daemon`] (its `btime`).
const KERNEL_STAT: &str = "kernel-stat";

/// The host "rebooted": the kernel's boot time (whole seconds, as
/// `/proc/stat` has it) is the next second, which this waits for, so it
/// is after everything recorded before and before everything after.
pub fn reboot(dir: &Path) {
    let since_epoch = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
    };
    let booted = since_epoch().as_secs() + 1;
    std::thread::sleep(std::time::Duration::from_secs(booted) - since_epoch());
    std::fs::write(dir.join(KERNEL_STAT), format!("btime {booted}\n")).unwrap();
}

/// The host rebooted and, as systemd-boot says in `LoaderEntrySelected`,
/// booted `entry`: the uefi backend's booted volume where the root is on
/// no partition (this test machine).
pub fn set_booted_entry(dir: &Path, entry: &str) {
    reboot(dir);
    let mut data = 7u32.to_le_bytes().to_vec();
    for unit in entry.encode_utf16().chain(std::iter::once(0)) {
        data.extend_from_slice(&unit.to_le_bytes());
    }
    std::fs::write(
        dir.join("efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"),
        data,
    )
    .unwrap();
}

/// The raw value of the firmware's variable `name` (`Boot0001`,
/// `BootOrder`, `BootNext`) in the efivarfs stand-in (`None`: absent).
pub fn global_var(dir: &Path, name: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(dir.join(format!(
        "efivars/{name}-8be4df61-93ca-11d2-aa0d-00e098032b8c"
    )))
    .ok()?;
    Some(bytes[4..].to_vec())
}

/// The host rebooted and, as the firmware says in `BootCurrent`, booted
/// option `number`.
pub fn set_boot_current(dir: &Path, number: u16) {
    reboot(dir);
    let mut data = 7u32.to_le_bytes().to_vec();
    data.extend_from_slice(&number.to_le_bytes());
    std::fs::write(
        dir.join("efivars/BootCurrent-8be4df61-93ca-11d2-aa0d-00e098032b8c"),
        data,
    )
    .unwrap();
}

/// An EFI variable of systemd-boot the daemon wrote (`None`: absent).
pub fn loader_var(dir: &Path, name: &str) -> Option<String> {
    let bytes = std::fs::read(dir.join(format!(
        "efivars/{name}-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
    )))
    .ok()?;
    let units: Vec<u16> = bytes[4..]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|u| *u != 0)
        .collect();
    Some(String::from_utf16(&units).unwrap())
}

/// A private tridentd with `--boot-control uefi`; its efivarfs stand-in is
/// the directory `dir/efivars`.
pub async fn uefi_daemon(dir: &Path) -> crate::Daemon {
    let efivars = dir.join("efivars");
    std::fs::create_dir_all(&efivars).unwrap();
    // The kernel "booted" long before anything is serviced.
    std::fs::write(dir.join(KERNEL_STAT), "btime 1\n").unwrap();
    crate::Daemon::builder()
        .args([
            "--inactivity-timeout",
            "0",
            "--boot-control",
            "uefi",
            "--efivars",
        ])
        .arg(&efivars)
        .arg("--kernel-stat-file")
        .arg(dir.join(KERNEL_STAT))
        .spawn()
        .await
        .unwrap()
}

/// Copies `/var/lib/trident` (datastore, WAL, journal) of the root in
/// partition `name` of `disk` into `dir/<name>-trident` and returns that
/// folder. The partition is copied out first and its ext4 journal replayed
/// (`e2fsck -E journal_only`): a VM stopped without unmounting leaves
/// committed metadata in the ext4 journal, which debugfs alone does not see.
pub fn trident_state_after_power_off(disk: &Path, name: &str, state: &str, dir: &Path) -> PathBuf {
    let copy = replayed_copy(disk, name, dir);
    let out = dir.join(format!("{name}-trident"));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    sh(Command::new("debugfs")
        .arg("-R")
        .arg(format!("rdump {state} {}", out.display()))
        .arg(&copy));
    let _ = std::fs::remove_file(&copy);
    // rdump copies a directory under its name; the filesystem's root as
    // its files.
    match state.trim_end_matches('/').rsplit('/').next() {
        Some(last) if !last.is_empty() => out.join(last),
        _ => out,
    }
}

/// File `path` of the ext4 filesystem in partition `name` of `disk` as the
/// OS left it when the VM was powered off: read from a copy in `dir`
/// whose journal was replayed (see [`trident_state_after_power_off`]).
pub fn ext4_file_after_power_off(disk: &Path, name: &str, path: &str, dir: &Path) -> String {
    let copy = replayed_copy(disk, name, dir);
    let text = sh(Command::new("debugfs")
        .arg("-R")
        .arg(format!("cat {path}"))
        .arg(&copy));
    let _ = std::fs::remove_file(&copy);
    text
}

/// Partition `name` of `disk` copied to `dir/<name>.ext4`, its ext4
/// journal replayed.
fn replayed_copy(disk: &Path, name: &str, dir: &Path) -> PathBuf {
    let p = partition(disk, name);
    let copy = dir.join(format!("{name}.ext4"));
    sh(Command::new("dd")
        .arg(format!("if={}", disk.display()))
        .arg(format!("of={}", copy.display()))
        .args(["bs=1M", "iflag=skip_bytes,count_bytes", "conv=sparse"])
        .arg(format!("skip={}", p.offset))
        .arg(format!("count={}", p.size))
        .arg("status=none"));
    // 0: clean, 1: the journal was replayed; more is damage.
    let fsck = Command::new("e2fsck")
        .args(["-f", "-y", "-E", "journal_only"])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        matches!(fsck.status.code(), Some(0 | 1)),
        "e2fsck {}: {fsck:?}",
        copy.display()
    );
    copy
}

/// The dm-verity root hash a COSI's metadata gives the filesystem mounted
/// at `mount_point` (`images[].verity.roothash`).
pub fn cosi_verity_root_hash(cosi: &Path, mount_point: &str) -> String {
    let mut archive = tar::Archive::new(File::open(cosi).unwrap());
    let entry = archive
        .entries()
        .unwrap()
        .map(Result::unwrap)
        .find(|e| e.path().unwrap().to_string_lossy() == "metadata.json")
        .expect("metadata.json in the COSI");
    let metadata: serde_json::Value = serde_json::from_reader(entry).unwrap();
    metadata["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["mountPoint"] == mount_point)
        .and_then(|i| i["verity"]["roothash"].as_str())
        .unwrap_or_else(|| panic!("no verity root hash for {mount_point} in the COSI"))
        .to_owned()
}
