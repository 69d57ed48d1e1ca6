//! The CLI surface upstream users type: `stream-image`, `diagnose -o
//! --journal --selinux`, `offline-initialize` without a Host Status,
//! `--multiboot`, `rebuild-raid -c`, `get status` with upstream's keys, and
//! the daemon's agent configuration (`trident.conf`, exit 4). Everything
//! either acts or says why not, with upstream's exit codes.

use std::process::Command;
use std::time::Duration;

use trident_e2e::{Daemon, stderr, stdout, trident_cli};

#[test]
fn stream_image_is_stream_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = trident_cli(
        &dir.path().join("unused.sock"),
        &["stream-image", "file:///x.cosi", "--hash", "abc"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--hash must be a SHA-384"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn refused_upstream_flags_say_why_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("unused.sock");
    let config = dir.path().join("c.yaml");
    std::fs::write(&config, "storage: {}\n").expect("write");
    let config = config.to_str().unwrap_or_default();
    let cases: [(&[&str], &str); 3] = [
        (&["install", config, "--multiboot"], "--multiboot"),
        (&["offline-initialize"], "needs a Host Status file"),
        (
            &[
                "offline-initialize",
                "--history-path",
                "/h.json",
                "--disk",
                "/dev/sdz",
            ],
            "history",
        ),
    ];
    for (args, says) in cases {
        let out = trident_cli(&socket, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rebuild_raid_c_is_checked_and_the_note_says_it_is_not_sent() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let dir = tempfile::tempdir()?;
    let missing = dir.path().join("missing.yaml");
    let out = trident_cli(
        daemon.socket_path(),
        &["rebuild-raid", "-c", missing.to_str().unwrap_or_default()],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("missing.yaml"), "{}", stderr(&out));

    let config = dir.path().join("c.yaml");
    std::fs::write(&config, "storage: {}\n")?;
    let out = trident_cli(
        daemon.socket_path(),
        &[
            "rebuild-raid",
            "-c",
            config.to_str().unwrap_or_default(),
            "--progress",
            "plain",
        ],
    );
    assert!(stderr(&out).contains("is not sent"), "{}", stderr(&out));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn get_status_prints_the_full_host_status_with_upstream_keys() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let out = trident_cli(daemon.socket_path(), &["get", "status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for key in [
        "spec:",
        "specOld:",
        "servicingState: not-provisioned",
        "lastError:",
        "partitionPaths:",
        "abActiveVolume:",
        "diskUuids:",
        "installIndex:",
        "isManagementOs: false",
        "tridentVersion:",
    ] {
        assert!(text.contains(key), "{key} missing:\n{text}");
    }
    let out = trident_cli(daemon.socket_path(), &["--output", "json", "get", "status"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(json["servicingState"], "not-provisioned", "{json:#}");
    assert!(json.get("diskUuids").is_some(), "{json:#}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn diagnose_output_journal_and_selinux_collect_or_say_why_not() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let dir = tempfile::tempdir()?;
    let bundle = dir.path().join("bundle.tar");
    let out = trident_cli(
        daemon.socket_path(),
        &[
            "diagnose",
            "--output",
            bundle.to_str().unwrap_or_default(),
            "--journal",
            "--selinux",
            "--state-dir",
            daemon.state_dir().to_str().unwrap_or_default(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = Command::new("tar").arg("-tf").arg(&bundle).output()?;
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    let report = Command::new("tar")
        .arg("-xOf")
        .arg(&bundle)
        .arg("report.json")
        .output()?;
    let report: serde_json::Value = serde_json::from_slice(&report.stdout)?;
    let not_collected = report["not_collected"].to_string();
    for (file, why) in [
        ("system/journal.txt", "journal.txt"),
        ("system/dmesg.txt", "dmesg.txt"),
        ("system/selinux-audit.log", "SELinux audit log"),
    ] {
        assert!(
            listing.contains(file) || not_collected.contains(why),
            "{file}: neither in the bundle nor in not_collected: {listing} {not_collected}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_configuration_names_the_datastore_and_an_unloadable_one_exits_4()
-> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let datastore = dir.path().join("from-trident-conf.sqlite");
    let conf = dir.path().join("trident.conf");
    std::fs::write(
        &conf,
        format!(
            "# agent configuration\nDatastorePath={}\n",
            datastore.display()
        ),
    )?;
    let daemon = Daemon::builder()
        .arg("--agent-config")
        .arg(&conf)
        .spawn()
        .await?;
    let out = trident_cli(daemon.socket_path(), &["get", "status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(datastore.exists(), "{}", daemon.stderr());
    assert!(!daemon.state_dir().join("datastore.sqlite").exists());
    drop(daemon);

    // A directory cannot be read as the file: upstream's exit 4.
    let mut broken = Daemon::builder()
        .arg("--agent-config")
        .arg(dir.path())
        .no_wait()
        .spawn()
        .await?;
    let status = broken.wait_exit(Duration::from_secs(15)).await?;
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(4),
        "{}",
        broken.stderr()
    );
    assert!(
        broken.stderr().contains("agent configuration"),
        "{}",
        broken.stderr()
    );
    Ok(())
}
