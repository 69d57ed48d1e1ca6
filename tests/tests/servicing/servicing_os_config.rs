//! The OS configuration (`os.*`) applied inside the new root during a real
//! install through the daemon, onto a disk-image file (loop devices the
//! daemon creates and removes): the new root gets the user with its SSH
//! key, the hostname, the netplan file, the additional file with its mode,
//! the enabled unit, the ESP's configured GPT GUID and name, a new ext4
//! filesystem and swap in fstab; the machine running the test is untouched.
//! Needs root.

#![allow(clippy::unwrap_used)]

use std::process::Command;

use trident_e2e::daemon;
use trident_e2e::mini_os;
use trident_e2e::servicing_support::{Clients, Fixture};

const ESP_GUID: &str = "5d2c7a1e-8b44-4f0e-9a3c-61f0b7e2d9a4";
const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOsConfigE2eKeyOnly operator@lab";

fn os_config() -> String {
    format!(
        r#"os:
  hostname: os-config-e2e
  netplan:
    version: 2
    ethernets:
      uplink:
        match: {{ name: "eth*" }}
        dhcp4: true
  users:
  - name: operator
    sshPublicKeys: ["{KEY}"]
    sshMode: key-only
    secondaryGroups: [wheel]
  additionalFiles:
  - destination: /usr/local/bin/site-setup.sh
    content: 'echo "configuring $SITE_NAME"'
    permissions: '0750'
  modules:
  - {{ name: br_netfilter, loadMode: always }}
  services:
    enable: [site.service]
"#
    )
}

/// `debugfs stat` of a path of the ext4 root in partition `name`: (mode,
/// uid) as debugfs prints them.
fn ext4_mode_and_uid(disk: &std::path::Path, name: &str, path: &str) -> (String, String) {
    let p = mini_os::partition(disk, name);
    let out = mini_os::sh(
        Command::new("debugfs")
            .arg("-R")
            .arg(format!("stat {path}"))
            .arg(format!("{}?offset={}", disk.display(), p.offset)),
    );
    let field = |key: &str| {
        out.split_whitespace()
            .skip_while(|w| *w != key)
            .nth(1)
            .unwrap_or_else(|| panic!("no {key} in {out}"))
            .to_owned()
    };
    (field("Mode:"), field("User:"))
}

/// The filesystem type blkid finds at `offset` of `disk`.
fn fs_type_at(disk: &std::path::Path, offset: u64) -> String {
    mini_os::sh(
        Command::new("blkid")
            .args(["-p", "-o", "value", "-s", "TYPE", "-O"])
            .arg(offset.to_string())
            .arg(disk),
    )
    .trim()
    .to_owned()
}

fn host_file(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn install_applies_the_os_configuration_inside_the_new_root_only() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let host_before = ["/etc/hostname", "/etc/passwd", "/etc/group"].map(host_file);
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    // The ESP's GPT identity comes from the configuration; a new ext4
    // filesystem and a swap partition are created.
    let storage = "  - { deviceId: data, source: new, type: ext4, mountPoint: { path: /var/data, options: noatime } }\n  swap: [swap]\n";
    let config = f
        .config(&v1, &format!("{storage}{}", os_config()))
        .replace(
            "{ id: esp, type: esp, size: 8M }",
            &format!("{{ id: esp, type: esp, size: 8M, uuid: {ESP_GUID}, label: EFI-SYSTEM }}"),
        )
        .replace(
            "    - { id: root-b, type: root, size: 48M }\n",
            "    - { id: root-b, type: root, size: 48M }\n    - { id: data, size: 8M }\n    - { id: swap, type: swap, size: 4M }\n",
        );
    c.install(&config).await.assert_success();
    let esp = mini_os::partition(&f.disk, "EFI-SYSTEM");
    assert_eq!(esp.part_uuid, ESP_GUID);

    let file = |path: &str| mini_os::ext4_file(&f.disk, "root-a", path);
    assert_eq!(file("/etc/hostname"), "os-config-e2e\n");

    let netplan = file("/etc/netplan/99-trident.yaml");
    assert!(netplan.contains("dhcp4: true"), "{netplan}");
    assert_eq!(
        ext4_mode_and_uid(&f.disk, "root-a", "/etc/netplan/99-trident.yaml").0,
        "0600"
    );

    let passwd = file("/etc/passwd");
    let operator = passwd
        .lines()
        .find(|l| l.starts_with("operator:"))
        .unwrap_or_else(|| panic!("no operator in {passwd}"));
    let uid = operator.split(':').nth(2).unwrap().to_owned();
    assert!(
        file("/etc/group")
            .lines()
            .any(|l| l.starts_with("wheel:") && l.ends_with("operator"))
    );
    assert_eq!(
        file("/home/operator/.ssh/authorized_keys"),
        format!("{KEY}\n")
    );
    assert_eq!(
        ext4_mode_and_uid(&f.disk, "root-a", "/home/operator/.ssh/authorized_keys"),
        ("0600".to_owned(), uid.clone())
    );
    assert_eq!(
        ext4_mode_and_uid(&f.disk, "root-a", "/home/operator/.ssh"),
        ("0700".to_owned(), uid)
    );
    assert!(
        file("/etc/ssh/sshd_config")
            .contains("Include /etc/ssh/sshd_config.d/50-trident-users.conf")
    );

    assert_eq!(
        file("/usr/local/bin/site-setup.sh"),
        "echo \"configuring $SITE_NAME\""
    );
    assert_eq!(
        ext4_mode_and_uid(&f.disk, "root-a", "/usr/local/bin/site-setup.sh").0,
        "0750"
    );
    assert!(file("/etc/modules-load.d/99-trident.conf").contains("br_netfilter\n"));
    let wants = mini_os::sh(
        Command::new("debugfs")
            .arg("-R")
            .arg("ls -l /etc/systemd/system/multi-user.target.wants")
            .arg(format!(
                "{}?offset={}",
                f.disk.display(),
                mini_os::partition(&f.disk, "root-a").offset
            )),
    );
    assert!(wants.contains("site.service"), "{wants}");

    // fstab (engine11's step) is still written beside the OS configuration.
    let fstab = file("/etc/fstab");
    assert!(fstab.contains(" / ext4 "), "{fstab}");
    assert!(
        fstab.contains(&format!("PARTUUID={ESP_GUID} /boot/efi ")),
        "{fstab}"
    );
    let data = mini_os::partition(&f.disk, "data");
    let swap = mini_os::partition(&f.disk, "swap");
    assert!(
        fstab.contains(&format!(
            "PARTUUID={} /var/data ext4 noatime 0 2",
            data.part_uuid
        )),
        "{fstab}"
    );
    assert!(
        fstab.contains(&format!(
            "PARTUUID={} none swap defaults 0 0",
            swap.part_uuid
        )),
        "{fstab}"
    );
    assert_eq!(fs_type_at(&f.disk, data.offset), "ext4");
    assert_eq!(fs_type_at(&f.disk, swap.offset), "swap");
    // Its mount point exists in the new root (it was mounted there).
    ext4_mode_and_uid(&f.disk, "root-a", "/var/data");
    assert_eq!(
        mini_os::loop_devices_on(&f.disk),
        "",
        "loop devices detached"
    );
    // The machine running the daemon is untouched.
    let host_after = ["/etc/hostname", "/etc/passwd", "/etc/group"].map(host_file);
    assert_eq!(host_before, host_after);
    assert!(!std::path::Path::new("/etc/netplan/99-trident.yaml").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_setting_the_image_cannot_take_fails_naming_the_key_and_unmounts() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    // The mini OS has no SELinux policy.
    let run = c
        .install(&f.config(&v1, "os:\n  selinux: { mode: enforcing }\n"))
        .await;
    assert!(!run.succeeded());
    let error = run.error();
    assert_eq!(
        error.subkind, "image-does-not-match-configuration",
        "{error:?}"
    );
    assert!(
        error.error_message.contains("'os.selinux.mode'"),
        "{error:?}"
    );
    assert_eq!(
        mini_os::loop_devices_on(&f.disk),
        "",
        "loop devices detached"
    );
}

/// `os.kernelCommandLine` with `--boot-control uefi` on a disk-image file:
/// the extra arguments end the `options` of volume A's boot entry.
#[tokio::test(flavor = "multi_thread")]
async fn extra_kernel_arguments_end_the_boot_entry_options() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = mini_os::uefi_daemon(f.dir.path()).await;
    let mut c = Clients::new(&d).await;
    let extra = "os:\n  kernelCommandLine:\n    extraCommandLine: [console=ttyS1, audit=0]\n";
    c.install(&f.config(&v1, extra)).await.assert_success();
    let entry = mini_os::esp_file(&f.disk, "loader/entries/trident-volume-a.conf").unwrap();
    assert!(
        entry.contains(&format!("{} console=ttyS1 audit=0\n", mini_os::CMDLINE)),
        "{entry}"
    );
}
