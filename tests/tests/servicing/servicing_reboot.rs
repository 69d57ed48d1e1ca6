//! `--reboot systemd`: the operation's `Completed` says REBOOT_STARTED and
//! reaches the client first; only then does the daemon run `systemctl
//! reboot`. The machine must not reboot, so `systemctl` here is a stand-in
//! on PATH that records its arguments (the one mock: a real reboot cannot
//! run in a test).

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use trident_e2e::servicing_support::{Clients, Fixture};
use trident_proto::v1::RebootStatus;

#[tokio::test(flavor = "multi_thread")]
async fn systemd_reboot_runs_systemctl_reboot_after_completed_reboot_started() {
    let f = Fixture::new();
    let bin = f.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = f.dir.path().join("systemctl-calls");
    let fake = bin.join("systemctl");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", calls.display()),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let d = trident_e2e::Daemon::builder()
        .args(["--inactivity-timeout", "0", "--reboot", "systemd"])
        .env("PATH", path)
        .spawn()
        .await
        .unwrap();
    let mut c = Clients::new(&d).await;
    let image = f.image("v1", 1, None);
    let run = c.install(&f.config(&image, "")).await;
    run.assert_success();
    assert_eq!(
        run.completed().reboot_status,
        RebootStatus::RebootStarted as i32
    );
    let mut waited = Duration::ZERO;
    while !calls.exists() && waited < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += Duration::from_millis(100);
    }
    assert_eq!(std::fs::read_to_string(&calls).unwrap(), "reboot\n");
}
