//! `trident offline-initialize` and `trident diagnose`: the CLI commands
//! that work without the daemon, reading and writing files directly.

use std::path::Path;
use std::process::Command;

use trident_e2e::{Daemon, stderr, trident_cli};

/// Extracts `member` of a tar archive with the system tar.
fn tar_member(archive: &Path, member: &str) -> Option<Vec<u8>> {
    let out = Command::new("tar")
        .arg("-xOf")
        .arg(archive)
        .arg(member)
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

fn tar_list(archive: &Path) -> Vec<String> {
    let out = Command::new("tar")
        .arg("-tf")
        .arg(archive)
        .output()
        .expect("tar -t");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

const HOST_STATUS: &str =
    "servicingState: provisioned\nabActiveVolume: volume-a\ntridentVersion: 0.1.0\n";

#[test]
fn offline_initialize_creates_the_datastore_without_a_daemon_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("no-daemon.sock");
    let hs = dir.path().join("hs.yaml");
    std::fs::write(&hs, HOST_STATUS).expect("write");
    let datastore = dir.path().join("state/datastore.sqlite");
    let args = [
        "offline-initialize",
        hs.to_str().unwrap_or_default(),
        "--datastore",
        datastore.to_str().unwrap_or_default(),
    ];
    let out = trident_cli(&socket, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(datastore.exists());
    assert!(
        stderr(&out).contains("servicing state provisioned"),
        "{}",
        stderr(&out)
    );

    let again = trident_cli(&socket, &args);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );

    // What diagnose reads back from that datastore, with no daemon.
    let bundle = dir.path().join("bundle.tar");
    let out = trident_cli(
        &socket,
        &[
            "diagnose",
            "-o",
            bundle.to_str().unwrap_or_default(),
            "--state-dir",
            dir.path().join("state").to_str().unwrap_or_default(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value =
        serde_json::from_slice(&tar_member(&bundle, "report.json").expect("report.json"))
            .expect("json");
    assert_eq!(
        report["servicing"]["servicingState"], "provisioned",
        "{report:#}"
    );
    assert_eq!(report["daemon"]["reachable"], false);
    let not_collected = report["not_collected"].to_string();
    assert!(not_collected.contains("daemon"), "{not_collected}");
    assert!(not_collected.contains("journal"), "{not_collected}");
    assert!(tar_list(&bundle).contains(&"datastore.sqlite".to_string()));
    assert!(stderr(&out).contains("not collected"), "{}", stderr(&out));
}

#[test]
fn offline_initialize_with_an_unreadable_host_status_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hs = dir.path().join("hs.yaml");
    std::fs::write(&hs, "servicingState: [not a state\n").expect("write");
    let datastore = dir.path().join("ds.sqlite");
    for path in [hs.clone(), dir.path().join("missing.yaml")] {
        let out = trident_cli(
            &dir.path().join("s.sock"),
            &[
                "offline-initialize",
                path.to_str().unwrap_or_default(),
                "--datastore",
                datastore.to_str().unwrap_or_default(),
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(!datastore.exists());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn diagnose_with_the_daemon_up_includes_versions_bus_and_journal_state() -> anyhow::Result<()>
{
    let daemon = Daemon::start().await?;
    let dir = tempfile::tempdir()?;
    let bundle = dir.path().join("bundle.tar");
    let out = trident_cli(
        daemon.socket_path(),
        &[
            "diagnose",
            "-o",
            bundle.to_str().unwrap_or_default(),
            "--state-dir",
            daemon.state_dir().to_str().unwrap_or_default(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(
        &tar_member(&bundle, "report.json").ok_or_else(|| anyhow::anyhow!("no report.json"))?,
    )?;
    assert_eq!(report["daemon"]["reachable"], true, "{report:#}");
    assert_eq!(report["daemon"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(report["bus"]["run_id"].is_string(), "{report:#}");
    assert!(report["host"]["kernel"].is_string(), "{report:#}");
    assert!(report.get("not_collected").is_some());
    Ok(())
}
