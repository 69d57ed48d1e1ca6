//! Our Host Configuration fixtures mirroring upstream's `basic` and
//! `simple` samples (host/tests/fixtures/host-config/) installed for real
//! with `--boot-control uefi`: onto a sparse disk-image file through a loop
//! device the test attaches (and detaches), only the disk's `device` and
//! the image's `url`/`sha384` rewritten to point at them. What the samples
//! ask for is checked in the GPT, the new root (read with debugfs) and the
//! ESP (mtools); the machine running the test is untouched. Install only:
//! the samples' health checks (`touch /var/tmp/...`, `sshd` active) are
//! about the booted OS and run at commit, which needs a real boot.
//! Needs root.

#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use trident_cosi::gpt::Gpt;
use trident_cosi::writer::FixtureOutput;
use trident_e2e::mini_os;
use trident_e2e::servicing_support::Clients;
use trident_e2e::upstream_sample::host_config_fixture;

const ESP_TYPE: &str = "c12a7328-f81f-11d2-ba4b-00a0c93ec93b";
const ROOT_X86_64_TYPE: &str = "4f68bce3-e8cd-4db1-96e7-fbcaf984b709";

/// A loop device over a disk-image file; detached when dropped.
struct LoopDisk {
    device: String,
}

impl LoopDisk {
    fn attach(file: &Path) -> LoopDisk {
        let device = mini_os::sh(Command::new("losetup").args(["--find", "--show"]).arg(file));
        LoopDisk {
            device: device.trim().to_owned(),
        }
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
    }
}

/// `text` with the one line starting with `prefix` (indentation included)
/// replaced by `prefix` + `value`.
fn rewrite(text: &str, prefix: &str, value: &str) -> String {
    assert_eq!(
        text.lines().filter(|l| l.starts_with(prefix)).count(),
        1,
        "exactly one '{prefix}' line"
    );
    text.lines()
        .map(|l| {
            if l.starts_with(prefix) {
                format!("{prefix}{value}")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The sample `name`, pointing at `device` and the COSI `image`.
fn sample_for(name: &str, device: &str, image: &FixtureOutput) -> String {
    let text = host_config_fixture(name);
    let text = rewrite(&text, "    device: ", device);
    let text = rewrite(
        &text,
        "  url: ",
        &format!("file://{}", image.path.display()),
    );
    rewrite(&text, "  sha384: ", &image.metadata_sha384)
}

/// One GPT entry: (type GUID, size in bytes).
fn gpt_entry(disk: &Path, name: &str) -> (String, u64) {
    let file = File::open(disk).unwrap();
    let mut head = vec![0u8; 34 * 512];
    file.read_exact_at(&mut head, 0).unwrap();
    let gpt = Gpt::parse_primary(&head, 512).unwrap();
    let e = gpt
        .partitions()
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no GPT partition named {name}"));
    (e.type_guid.to_string(), e.size_bytes(512))
}

/// `debugfs stat` mode of a path of the ext4 root in partition `name`.
fn ext4_mode(disk: &Path, name: &str, path: &str) -> String {
    let p = mini_os::partition(disk, name);
    let out = mini_os::sh(
        Command::new("debugfs")
            .arg("-R")
            .arg(format!("stat {path}"))
            .arg(format!("{}?offset={}", disk.display(), p.offset)),
    );
    out.split_whitespace()
        .skip_while(|w| *w != "Mode:")
        .nth(1)
        .unwrap()
        .to_owned()
}

/// What the test machine has at the paths a sample writes in the new root.
fn host_state() -> Vec<String> {
    [
        "/etc/passwd",
        "/etc/fstab",
        "/etc/netplan/99-trident.yaml",
        "/usr/local/bin/site-setup.sh",
        "/home/operator/.ssh/authorized_keys",
    ]
    .map(|p| std::fs::read_to_string(p).unwrap_or_default())
    .to_vec()
}

/// A sparse disk file of `bytes`, the mini OS, a loop device over the disk
/// and a uefi daemon: installs sample `name` and returns the disk file, the
/// collected stream and the temp dir.
struct Installed {
    dir: tempfile::TempDir,
    disk: PathBuf,
    logs: Vec<String>,
}

async fn install_sample(name: &str, bytes: u64) -> Installed {
    let dir = tempfile::Builder::new()
        .prefix("upstream-sample-")
        .tempdir()
        .unwrap();
    let disk = dir.path().join("disk.img");
    File::create(&disk).unwrap().set_len(bytes).unwrap();
    let image = mini_os::build(dir.path(), "v1");
    let d = mini_os::uefi_daemon(dir.path()).await;
    let mut c = Clients::new(&d).await;
    {
        let loop_disk = LoopDisk::attach(&disk);
        let config = sample_for(name, &loop_disk.device, &image);
        let run = c.install(&config).await;
        run.assert_success();
        // A real new root runs every planned step (mount, configure, boot
        // files...) and no step the plan did not count.
        let (overall, _) =
            trident_e2e::overall::overall_records(d.socket_path(), &run.operation_id())
                .await
                .unwrap();
        let last = &overall.last().expect("overall progress").1;
        assert!(last.finished, "{last:?}");
        assert_eq!(last.steps_done, last.steps_planned, "{last:?}");
        assert_eq!(
            mini_os::loop_devices_on(Path::new(&loop_disk.device)),
            "",
            "the daemon's loop devices are detached"
        );
        let logs = run.logs.iter().map(|l| l.message.clone()).collect();
        drop(loop_disk);
        assert_eq!(mini_os::loop_devices_on(&disk), "");
        Installed { dir, disk, logs }
    }
}

/// What both samples share: the GPT, fstab, the grown root, the ESP's
/// boot entry and UEFI fallback loader.
fn check_disk_and_boot(disk: &Path, esp: (&str, u64), root: (&str, u64)) {
    assert_eq!(gpt_entry(disk, esp.0), (ESP_TYPE.to_owned(), esp.1));
    assert_eq!(
        gpt_entry(disk, root.0),
        (ROOT_X86_64_TYPE.to_owned(), root.1)
    );
    let esp_part = mini_os::partition(disk, esp.0);
    let root_part = mini_os::partition(disk, root.0);
    let fstab = mini_os::ext4_file(disk, root.0, "/etc/fstab");
    for line in [
        format!("PARTUUID={} / ext4 defaults 0 1", root_part.part_uuid),
        format!(
            "PARTUUID={} /boot/efi vfat umask=0077 0 2",
            esp_part.part_uuid
        ),
    ] {
        assert!(fstab.contains(&line), "{line} in {fstab}");
    }
    assert_eq!(
        mini_os::ext4_size(disk, root.0),
        root_part.size,
        "root grown"
    );
    let esp_file = |p: &str| {
        mini_os::sh(
            Command::new("mtype")
                .arg("-i")
                .arg(format!("{}@@{}", disk.display(), esp_part.offset))
                .arg(format!("::{p}"))
                .env("MTOOLS_SKIP_CHECK", "1"),
        )
    };
    let entry = esp_file("loader/entries/trident-volume-a.conf");
    assert!(
        entry.contains(&format!(
            "options root=PARTUUID={} rw {}\n",
            root_part.part_uuid,
            mini_os::CMDLINE
        )),
        "{entry}"
    );
    assert!(esp_file("loader/loader.conf").contains("default trident-volume-a.conf"));
    assert_eq!(
        esp_file("EFI/BOOT/BOOTX64.EFI"),
        mini_os::fake_systemd_boot("v1"),
        "uefiFallback conservative (the default): the fallback boots volume A"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_basic_sample_installs_for_real() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: needs root (loop devices, mount)");
        return;
    }
    let before = host_state();
    let i = install_sample("basic", (6 << 30) + (256 << 20)).await;
    // No uuid/label in the sample: the id is the GPT name.
    check_disk_and_boot(&i.disk, ("efi", 128 << 20), ("sysroot", 6 << 30));
    assert_eq!(
        host_state(),
        before,
        "the machine running the test is untouched"
    );
    drop(i.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_simple_sample_installs_for_real() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: needs root (loop devices, mount)");
        return;
    }
    let before = host_state();
    let i = install_sample("simple", (10 << 30) + (256 << 20)).await;
    let (disk, root) = (&i.disk, "root-part");
    check_disk_and_boot(disk, ("esp-part", 100 << 20), (root, 10 << 30));
    let file = |p: &str| mini_os::ext4_file(disk, root, p);

    let netplan = file("/etc/netplan/99-trident.yaml");
    for part in ["uplink", "name: eth*", "dhcp4: true"] {
        assert!(netplan.contains(part), "{part} in {netplan}");
    }
    assert_eq!(
        ext4_mode(disk, root, "/etc/netplan/99-trident.yaml"),
        "0600"
    );
    assert!(
        file("/etc/passwd")
            .lines()
            .any(|l| l.starts_with("operator:"))
    );
    assert_eq!(
        file("/home/operator/.ssh/authorized_keys"),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyForTestsOnly operator@lab\n"
    );
    assert!(
        file("/etc/ssh/sshd_config")
            .contains("Include /etc/ssh/sshd_config.d/50-trident-users.conf"),
        "sshMode: key-only applied as an sshd drop-in"
    );
    assert_eq!(
        file("/usr/local/bin/site-setup.sh"),
        "echo \"configuring $SITE_NAME\""
    );
    assert_eq!(
        ext4_mode(disk, root, "/usr/local/bin/site-setup.sh"),
        "0750"
    );
    // postConfigure ran the additional file inside the chroot, with the
    // sample's environment variable.
    assert!(
        i.logs.iter().any(|l| l == "configuring lab-7"),
        "site-setup output in the stream: {:?}",
        i.logs
            .iter()
            .filter(|l| l.contains("configuring"))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        host_state(),
        before,
        "the machine running the test is untouched"
    );
    drop(i.dir);
}
