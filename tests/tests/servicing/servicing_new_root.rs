//! The new-root step on a disk-image file, through the real daemon: after
//! writing, the serviced volume is mounted (loop devices over the disk
//! file), ext4 grown to its partition, /etc/fstab written from the Host
//! Configuration by PARTUUID, postProvision scripts run with TARGET_ROOT,
//! postConfigure scripts chrooted into it, then everything unmounted and
//! detached. Needs root.

#![allow(clippy::unwrap_used)]

use trident_e2e::daemon;
use trident_e2e::mini_os;
use trident_e2e::servicing_support::{Clients, Fixture};

const SCRIPTS: &str = r#"scripts:
  postProvision:
  - name: mark
    runOn: [all]
    content: 'test -d "$TARGET_ROOT/etc" && echo "$TRIDENT_TARGET_VOLUME" > "$TARGET_ROOT/etc/provisioned-volume"'
  postConfigure:
  - name: check-fstab
    runOn: [all]
    content: 'grep -q "^PARTUUID=.* / ext4" "$TARGET_ROOT/etc/fstab" && test "$TARGET_ROOT" = / && test -d /proc/self'
"#;

#[tokio::test(flavor = "multi_thread")]
async fn install_and_update_mount_grow_write_fstab_and_run_scripts_in_the_new_root() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    c.install(&f.config(&v1, SCRIPTS)).await.assert_success();

    let root_a = mini_os::partition(&f.disk, "root-a");
    let esp = mini_os::partition(&f.disk, "esp");
    let fstab = mini_os::ext4_file(&f.disk, "root-a", "/etc/fstab");
    assert!(
        fstab.contains(&format!(
            "PARTUUID={} / ext4 defaults 0 1",
            root_a.part_uuid
        )),
        "{fstab}"
    );
    assert!(
        fstab.contains(&format!(
            "PARTUUID={} /boot/efi vfat umask=0077 0 2",
            esp.part_uuid
        )),
        "{fstab}"
    );
    assert_eq!(
        mini_os::ext4_file(&f.disk, "root-a", "/etc/provisioned-volume").trim(),
        "volume-a"
    );
    assert_eq!(
        mini_os::ext4_size(&f.disk, "root-a"),
        root_a.size,
        "ext4 grown to the whole partition"
    );
    // The installed OS's datastore: install finalized, operation succeeded.
    let handed = f.dir.path().join("handed.sqlite");
    mini_os::sh(
        std::process::Command::new("debugfs")
            .arg("-R")
            .arg(format!(
                "dump /var/lib/trident/datastore.sqlite {}",
                handed.display()
            ))
            .arg(format!("{}?offset={}", f.disk.display(), root_a.offset)),
    );
    let ds = trident_host::datastore::Datastore::open_read_only(&handed).unwrap();
    assert_eq!(
        ds.host_status().unwrap().servicing_state,
        trident_host::status::ServicingState::CleanInstallFinalized
    );
    assert_eq!(
        ds.operations(10).unwrap()[0].result,
        trident_host::datastore::OperationResult::Success
    );
    assert_eq!(
        mini_os::loop_devices_on(&f.disk),
        "",
        "loop devices detached"
    );
    assert!(
        !d.state_dir().join("new-root").exists()
            || std::fs::read_dir(d.state_dir().join("new-root"))
                .unwrap()
                .next()
                .is_none(),
        "mount directory removed"
    );

    // A/B update: volume B gets its own fstab naming root-b.
    c.commit().await.assert_success();
    let v2 = mini_os::build(f.dir.path(), "v2");
    c.update_stage(&f.config(&v2, SCRIPTS))
        .await
        .assert_success();
    let root_b = mini_os::partition(&f.disk, "root-b");
    let fstab_b = mini_os::ext4_file(&f.disk, "root-b", "/etc/fstab");
    assert!(
        fstab_b.contains(&format!("PARTUUID={} / ext4", root_b.part_uuid)),
        "{fstab_b}"
    );
    assert!(fstab_b.contains(&format!("PARTUUID={} /boot/efi", esp.part_uuid)));
    assert_eq!(
        mini_os::ext4_file(&f.disk, "root-b", "/etc/provisioned-volume").trim(),
        "volume-b"
    );
    assert!(mini_os::ext4_file(&f.disk, "root-b", "/etc/os-release").contains("VERSION_ID=v2"));
    assert_eq!(mini_os::ext4_size(&f.disk, "root-b"), root_b.size);
    assert_eq!(mini_os::loop_devices_on(&f.disk), "");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_script_still_unmounts_and_detaches_the_new_root() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    // Chrooted, with /dev, /proc and /sys mounted inside: all undone.
    let failing = "scripts:\n  postConfigure:\n  - name: fail\n    runOn: [all]\n    content: 'echo boom >&2; exit 3'\n";
    let run = c.install(&f.config(&v1, failing)).await;
    assert!(!run.succeeded());
    assert_eq!(run.error().subkind, "script-failed", "{:?}", run.error());
    assert_eq!(
        mini_os::loop_devices_on(&f.disk),
        "",
        "loop devices detached"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(&d.state_dir().display().to_string()),
        "nothing left mounted under the state dir"
    );
}

/// `--boot-control uefi` on a disk-image file: install puts systemd-boot,
/// volume A's Type 1 entry (kernel and initrd copied from the volume, root
/// by PARTUUID, the image's /etc/kernel/cmdline) and a
/// loader.conf defaulting to it on the ESP, through mtools (no mount).
#[tokio::test(flavor = "multi_thread")]
async fn uefi_install_writes_systemd_boot_and_volume_a_entry_on_the_esp() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = mini_os::uefi_daemon(f.dir.path()).await;
    let efivars = f.dir.path().join("efivars");
    let mut c = Clients::new(&d).await;
    c.install(&f.config(&v1, "")).await.assert_success();

    let root_a = mini_os::partition(&f.disk, "root-a");
    let esp = |p: &str| mini_os::esp_file(&f.disk, p).unwrap_or_else(|| panic!("ESP has no {p}"));
    assert_eq!(
        esp("EFI/BOOT/BOOTX64.EFI"),
        mini_os::fake_systemd_boot("v1")
    );
    assert_eq!(
        esp("EFI/systemd/systemd-bootx64.efi"),
        mini_os::fake_systemd_boot("v1")
    );
    assert!(esp("loader/loader.conf").contains("default trident-volume-a.conf"));
    let entry = esp("loader/entries/trident-volume-a.conf");
    assert!(
        entry.contains("linux   /trident/volume-a/vmlinuz"),
        "{entry}"
    );
    assert!(
        entry.contains("initrd  /trident/volume-a/initrd.img"),
        "{entry}"
    );
    assert!(
        entry.contains(&format!(
            "options root=PARTUUID={} rw {}\n",
            root_a.part_uuid,
            mini_os::CMDLINE
        )),
        "{entry}"
    );
    assert_eq!(esp("trident/volume-a/vmlinuz"), "kernel v1");
    assert_eq!(esp("trident/volume-a/initrd.img"), "initrd v1");
    assert!(
        std::fs::read_dir(&efivars).unwrap().next().is_none(),
        "install sets no one-shot: loader.conf's default is volume A"
    );
    assert_eq!(mini_os::loop_devices_on(&f.disk), "");
}

/// postConfigure runs as upstream runs it: chrooted into the mounted new
/// root (`TARGET_ROOT=/`) with `/dev`, `/proc` and `/sys` mounted inside,
/// its arguments and environment beside upstream's and our variables; a
/// `path` script is read on this host. What it writes at `/` paths lands
/// in the new root, not on the machine running the test, and nothing
/// stays mounted or staged afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn post_configure_runs_chrooted_in_the_new_root() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount, chroot)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let marker = format!("trident-chroot-marker-{}", std::process::id());
    let from_path = f.dir.path().join("from-path.sh");
    std::fs::write(&from_path, "echo \"path $1\" > /etc/from-path\n").unwrap();
    let scripts = format!(
        r#"scripts:
  postConfigure:
  - name: inside
    runOn: [all]
    arguments: [argOne]
    environmentVariables: {{ MY_VAR: hello }}
    content: |
      set -e
      echo "$TARGET_ROOT $SERVICING_TYPE $TRIDENT_SERVICING_TYPE $TRIDENT_TARGET_VOLUME $MY_VAR $1" > /etc/post-configure
      test -e /proc/self/status
      test -d /sys/class
      test -c /dev/null
      touch /{marker}
  - name: from-path
    runOn: [clean-install]
    path: {path}
    arguments: [two]
"#,
        path = from_path.display()
    );
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    c.install(&f.config(&v1, &scripts)).await.assert_success();

    let file = |p: &str| mini_os::ext4_file(&f.disk, "root-a", p);
    assert_eq!(
        file("/etc/post-configure").trim(),
        "/ clean_install clean-install volume-a hello argOne"
    );
    assert_eq!(file("/etc/from-path").trim(), "path two");
    let root_listing = mini_os::sh(
        std::process::Command::new("debugfs")
            .arg("-R")
            .arg("ls /")
            .arg(format!(
                "{}?offset={}",
                f.disk.display(),
                mini_os::partition(&f.disk, "root-a").offset
            )),
    );
    assert!(root_listing.contains(&marker), "{root_listing}");
    assert!(
        !root_listing.contains("trident-script-"),
        "the staged path script is removed: {root_listing}"
    );
    assert!(
        !root_listing.contains("proc") && !root_listing.contains("sys"),
        "the /proc and /sys made for the chroot are removed: {root_listing}"
    );
    assert!(
        !std::path::Path::new("/").join(&marker).exists(),
        "the machine running the test is untouched"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(&d.state_dir().display().to_string()),
        "nothing left mounted under the state dir"
    );
    assert_eq!(mini_os::loop_devices_on(&f.disk), "");
}
