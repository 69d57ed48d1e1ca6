//! `os.uefiFallback` through the real daemon with `--boot-control uefi` on
//! a disk-image file: which volume's systemd-boot is the UEFI fallback
//! loader `EFI/BOOT/BOOTX64.EFI` and which entry `loader.conf` defaults to
//! after install, A/B finalize and commit, in each of upstream's three
//! modes. The ESP is read with mtools; "which entry booted" is told to the
//! daemon as systemd-boot does (`LoaderEntrySelected`). Needs root.

#![allow(clippy::unwrap_used)]

use trident_e2e::mini_os;
use trident_e2e::servicing_support::{self, Clients, Fixture};
use trident_proto::v1::ServicingKind;

/// What the ESP and the EFI variables say at one moment.
#[derive(Debug, PartialEq, Eq)]
struct BootState {
    /// `EFI/BOOT/BOOTX64.EFI` (`None`: absent).
    fallback_loader: Option<String>,
    /// The `default` line of `loader/loader.conf`.
    loader_conf_default: String,
    /// `LoaderEntryDefault`.
    default_var: Option<String>,
    /// `LoaderEntryOneShot`.
    one_shot: Option<String>,
}

fn boot_state(f: &Fixture) -> BootState {
    let conf = mini_os::esp_file(&f.disk, "loader/loader.conf").unwrap();
    BootState {
        fallback_loader: mini_os::esp_file(&f.disk, "EFI/BOOT/BOOTX64.EFI"),
        loader_conf_default: conf
            .lines()
            .find_map(|l| l.strip_prefix("default "))
            .unwrap()
            .to_owned(),
        default_var: mini_os::loader_var(f.dir.path(), "LoaderEntryDefault"),
        one_shot: mini_os::loader_var(f.dir.path(), "LoaderEntryOneShot"),
    }
}

fn state(loader: Option<&str>, conf: &str, default_var: Option<&str>, one_shot: bool) -> BootState {
    BootState {
        fallback_loader: loader.map(mini_os::fake_systemd_boot),
        loader_conf_default: format!("trident-{conf}.conf"),
        default_var: default_var.map(|v| format!("trident-{v}.conf")),
        one_shot: one_shot.then(|| "trident-volume-b.conf".to_owned()),
    }
}

/// Install v1 (committed on volume A), A/B update to v2 (volume B) and
/// commit it, with `uefiFallback: mode`; the boot state after install,
/// after the update's finalize and after its commit.
async fn install_update_commit(mode: &str) -> [BootState; 3] {
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let v2 = mini_os::build(f.dir.path(), "v2");
    let d = mini_os::uefi_daemon(f.dir.path()).await;
    let mut c = Clients::new(&d).await;
    let os = format!("os:\n  uefiFallback: {mode}\n");
    c.install(&f.config(&v1, &os)).await.assert_success();
    let installed = boot_state(&f);
    mini_os::set_booted_entry(f.dir.path(), "trident-volume-a.conf");
    c.commit().await.assert_success();

    c.update_stage(&f.config(&v2, &os)).await.assert_success();
    c.update_finalize().await.assert_success();
    let finalized = boot_state(&f);
    // The trial boot: systemd-boot booted the one-shot entry.
    mini_os::set_booted_entry(f.dir.path(), "trident-volume-b.conf");
    c.commit().await.assert_success();
    let committed = boot_state(&f);
    assert_eq!(
        mini_os::esp_file(&f.disk, "trident/volume-b/systemd-bootx64.efi"),
        Some(mini_os::fake_systemd_boot("v2")),
        "each volume's systemd-boot is kept on the ESP"
    );
    assert_eq!(mini_os::loop_devices_on(&f.disk), "");
    [installed, finalized, committed]
}

#[tokio::test(flavor = "multi_thread")]
async fn conservative_boots_the_servicing_os_until_commit() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: needs root (loop devices, mount)");
        return;
    }
    let [installed, finalized, committed] = install_update_commit("conservative").await;
    assert_eq!(installed, state(Some("v1"), "volume-a", None, false));
    assert_eq!(
        finalized,
        state(Some("v1"), "volume-a", None, true),
        "finalize leaves the fallback on the servicing OS"
    );
    assert_eq!(committed, state(Some("v2"), "volume-b", None, false));
}

#[tokio::test(flavor = "multi_thread")]
async fn optimistic_boots_the_target_os_from_finalize() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: needs root (loop devices, mount)");
        return;
    }
    let [installed, finalized, committed] = install_update_commit("optimistic").await;
    assert_eq!(installed, state(Some("v1"), "volume-a", None, false));
    assert_eq!(
        finalized,
        state(Some("v2"), "volume-b", Some("volume-a"), true),
        "finalize moves the fallback to the target; NVRAM keeps the old default"
    );
    assert_eq!(committed, state(Some("v2"), "volume-b", None, false));
}

#[tokio::test(flavor = "multi_thread")]
async fn disabled_never_writes_the_fallback_loader() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: needs root (loop devices, mount)");
        return;
    }
    let [installed, finalized, committed] = install_update_commit("disabled").await;
    assert_eq!(installed, state(None, "volume-a", None, false));
    assert_eq!(finalized, state(None, "volume-a", None, true));
    assert_eq!(committed, state(None, "volume-b", None, false));
}

/// optimistic, and the trial boot did not come up on the new volume (the
/// firmware says it booted volume A): the failed commit points the
/// fallback, `loader.conf` and the EFI variables back at volume A.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_optimistic_commit_points_the_fallback_back() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let v2 = mini_os::build(f.dir.path(), "v2");
    let d = mini_os::uefi_daemon(f.dir.path()).await;
    let mut c = Clients::new(&d).await;
    let os = "os:\n  uefiFallback: optimistic\n";
    c.install(&f.config(&v1, os)).await.assert_success();
    mini_os::set_booted_entry(f.dir.path(), "trident-volume-a.conf");
    c.commit().await.assert_success();
    c.update_stage(&f.config(&v2, os)).await.assert_success();
    c.update_finalize().await.assert_success();
    assert_eq!(
        boot_state(&f),
        state(Some("v2"), "volume-b", Some("volume-a"), true)
    );

    // Before the reboot, a commit has nothing to check yet.
    let early = c.commit().await;
    early.assert_success();
    assert_eq!(
        early.completed().servicing_kind,
        Some(ServicingKind::NoneRequired as i32)
    );
    assert_eq!(
        boot_state(&f),
        state(Some("v2"), "volume-b", Some("volume-a"), true),
        "nothing pointed back"
    );
    // Still on volume A after the reboot.
    mini_os::reboot(f.dir.path());
    let failed = c.commit().await;
    assert!(!failed.succeeded());
    assert_eq!(failed.error().subkind, "booted-wrong-volume");
    assert_eq!(boot_state(&f), state(Some("v1"), "volume-a", None, false));
}

/// conservative, after a committed A/B update to volume B, a manual
/// rollback: its finalize moves the fallback to the rollback target
/// (volume A) as upstream does, the NVRAM default staying on B until the
/// rollback's commit.
#[tokio::test(flavor = "multi_thread")]
async fn a_manual_rollback_moves_the_fallback_at_finalize() {
    use trident_proto::v1preview::{ManualRollbackKind, RollbackRequest};
    if !mini_os::running_as_root() {
        eprintln!("SKIP: needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let v2 = mini_os::build(f.dir.path(), "v2");
    let d = mini_os::uefi_daemon(f.dir.path()).await;
    let mut c = Clients::new(&d).await;
    c.install(&f.config(&v1, "")).await.assert_success();
    mini_os::set_booted_entry(f.dir.path(), "trident-volume-a.conf");
    c.commit().await.assert_success();
    c.update_stage(&f.config(&v2, "")).await.assert_success();
    c.update_finalize().await.assert_success();
    mini_os::set_booted_entry(f.dir.path(), "trident-volume-b.conf");
    c.commit().await.assert_success();
    assert_eq!(boot_state(&f), state(Some("v2"), "volume-b", None, false));

    servicing_support::collect(
        c.rollback
            .rollback(RollbackRequest {
                kind: ManualRollbackKind::AbRollbackRequested as i32,
                finalize: None,
            })
            .await,
    )
    .await
    .assert_success();
    let rolled = boot_state(&f);
    assert_eq!(
        rolled.fallback_loader,
        Some(mini_os::fake_systemd_boot("v1"))
    );
    assert_eq!(rolled.loader_conf_default, "trident-volume-a.conf");
    assert_eq!(rolled.default_var.as_deref(), Some("trident-volume-b.conf"));
    assert_eq!(rolled.one_shot.as_deref(), Some("trident-volume-a.conf"));
    mini_os::set_booted_entry(f.dir.path(), "trident-volume-a.conf");
    c.commit().await.assert_success();
    let committed = boot_state(&f);
    assert_eq!(committed.loader_conf_default, "trident-volume-a.conf");
    assert_eq!((committed.default_var, committed.one_shot), (None, None));
}
