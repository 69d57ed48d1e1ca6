//! Each root volume has its own `/var/lib/trident`, so the volume that
//! boots next must be handed the datastore (record backend, disk-image
//! file, real ext4 roots through loop devices; the UEFI VM scenario shows
//! the same on a real boot): an A/B update's finalize copies the datastore,
//! history and all, into the new volume saying "finalized"; a commit whose
//! health check fails hands it back to the old volume saying
//! "ab-update-health-check-failed" with the error, and the old volume's
//! commit settles provisioned keeping that error. Needs root.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use trident_e2e::daemon;
use trident_e2e::mini_os;
use trident_e2e::servicing_support::{Clients, FAILING_CHECK, Fixture};
use trident_host::datastore::{Datastore, OperationResult};
use trident_host::status::{AbVolume, ServicingState};
use trident_proto::v1preview::ServicingState as State;

/// The datastore in the root filesystem of partition `name`.
fn handed_datastore(disk: &Path, name: &str, dir: &Path) -> Datastore {
    let out = dir.join(format!("{name}.sqlite"));
    let _ = std::fs::remove_file(&out);
    mini_os::debugfs(
        disk,
        name,
        &format!("dump /var/lib/trident/datastore.sqlite {}", out.display()),
    );
    Datastore::open_read_only(&out).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_update_hands_the_datastore_to_the_new_volume_and_a_failed_commit_hands_it_back() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    c.provision(&f.config(&v1, "")).await;

    // Update to v2 with a health check that cannot pass.
    let v2 = mini_os::build(f.dir.path(), "v2");
    c.update_stage(&f.config(&v2, FAILING_CHECK))
        .await
        .assert_success();
    let finalize = c.update_finalize().await;
    finalize.assert_success();
    let on_b = handed_datastore(&f.disk, "root-b", f.dir.path());
    let status = on_b.host_status().unwrap();
    assert_eq!(status.servicing_state, ServicingState::AbUpdateFinalized);
    assert_eq!(status.ab_active_volume, Some(AbVolume::VolumeA));
    let ops = on_b.operations(10).unwrap();
    assert_eq!(ops[0].id, finalize.operation_id());
    assert_eq!(ops[0].result, OperationResult::Success);
    assert!(ops.len() >= 4, "install, commit, stage, finalize: {ops:?}");

    // The "reboot" into B: the commit's health check fails.
    let commit = c.commit().await;
    assert!(!commit.succeeded());
    assert_eq!(commit.error().subkind, "health-check-failed");
    let on_a = handed_datastore(&f.disk, "root-a", f.dir.path());
    let status = on_a.host_status().unwrap();
    assert_eq!(
        status.servicing_state,
        ServicingState::AbUpdateHealthCheckFailed
    );
    assert_eq!(status.ab_active_volume, Some(AbVolume::VolumeA));
    let error = status.last_error.unwrap();
    assert_eq!(error.subkind, "health-check-failed");
    assert!(error.message.contains("never-healthy"), "{}", error.message);
    assert_eq!(
        on_a.operations(1).unwrap()[0].result,
        OperationResult::Failure
    );

    // The real backend reboots into A here (the VM scenario shows it); the
    // record backend does not simulate that reboot: record it by hand.
    let mut record = f.boot_record(&d);
    record["booted"] = "volume-a".into();
    std::fs::write(d.state_dir().join("boot-record.json"), record.to_string()).unwrap();
    // Back on A: its commit settles, keeping why the update failed.
    c.commit().await.assert_success();
    assert_eq!(c.state().await, State::Provisioned);
    let kept = c.last_error().await.expect("last error kept");
    assert_eq!(kept.subkind, "health-check-failed");
}
