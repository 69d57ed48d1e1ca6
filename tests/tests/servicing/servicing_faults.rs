//! Faults around an A/B update, each against a real part written here: an
//! image server (std `TcpListener` threads) that refuses, stalls before or
//! in the middle of the body, or lies in `Content-Length`; a target disk
//! on a small tmpfs that fills up or is remounted read-only. Each fails
//! with a structured error in bounded time (the daemon runs with short
//! `--http-*-timeout`s), nothing is switched (servicing state and active
//! volume unchanged) and the active volume's bytes are untouched.

#![allow(clippy::unwrap_used)]

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use trident_e2e::crash_support::{Tmpfs, partition_sha384};
use trident_e2e::daemon_on;
use trident_e2e::image_server::{ImageServer, ServerFault};
use trident_e2e::servicing_support::{self, Clients, Collected, Fixture};
use trident_proto::v1::TridentErrorKind;
use trident_proto::v1preview::{AbVolumeState, ServicingState};

/// Generous bound on one failing operation: the faults must end it through
/// the daemon's own timeouts (2 s here), never hang it.
const OPERATION_BOUND: Duration = Duration::from_secs(90);

/// Short timeouts so stalls fail fast (defaults: 30 s connect, 2 min read),
/// and one quick retry (defaults: 10, from 500 ms to 30 s apart): each
/// fault here is for good, so the retry meets it again and the operation
/// fails with it.
const SHORT_TIMEOUTS: [&str; 8] = [
    "--http-connect-timeout",
    "2s",
    "--http-read-timeout",
    "2s",
    "--download-retries",
    "1",
    "--download-retry-backoff",
    "50ms",
];

/// Runs an update stage that must fail, and checks nothing was switched.
async fn failing_stage(c: &mut Clients, disk: &Path, config: &str, what: &str) -> Collected {
    let before = partition_sha384(disk, "root-a");
    let out = tokio::time::timeout(OPERATION_BOUND, c.update_stage(config))
        .await
        .unwrap_or_else(|_| panic!("{what}: the operation did not end"));
    assert!(!out.succeeded(), "{what}: succeeded");
    let error = out.error();
    eprintln!(
        "{what}: {} / {}: {}",
        error.kind().as_str_name(),
        error.subkind,
        error.error_message
    );
    assert_eq!(c.state().await, ServicingState::Provisioned, "{what}");
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA, "{what}");
    assert_eq!(
        partition_sha384(disk, "root-a"),
        before,
        "{what}: active volume changed"
    );
    let last = c.last_error().await.expect("the failure is the last error");
    assert_eq!(last.subkind, error.subkind, "{what}");
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn image_server_faults_fail_in_bounded_time_and_switch_nothing() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 601, None);
    let v2 = fx.image("v2", 602, None);
    let state = fx.dir.path().join("state");
    let args: Vec<&OsStr> = SHORT_TIMEOUTS.iter().map(OsStr::new).collect();
    let d = daemon_on(&state, &args).await;
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;

    let faults = [
        (ServerFault::Refuse, "download-image", "Connection refused"),
        (ServerFault::SilentAfterAccept, "download-image", "imeout"),
        (ServerFault::StallMidBody, "download-image", "imeout"),
        (
            ServerFault::ShortBody,
            "download-image",
            "Content-Length announced",
        ),
        // What the server announced is all the client can know of: the
        // image it got is short, which the archive reader reports.
        (
            ServerFault::ContentLengthTooSmall,
            "invalid-image",
            "archive ends",
        ),
    ];
    for (fault, subkind, reason) in faults {
        let server = ImageServer::start(&v2.path, fault);
        let config = fx
            .config(&v2, "")
            .replace(&format!("file://{}", v2.path.display()), &server.url());
        let what = format!("{fault:?}");
        let out = failing_stage(&mut c, &fx.disk, &config, &what).await;
        let error = out.error();
        let kind = if subkind == "invalid-image" {
            TridentErrorKind::InvalidInputError
        } else {
            TridentErrorKind::ServicingError
        };
        assert_eq!(error.kind(), kind, "{what}: {error:?}");
        assert_eq!(error.subkind, subkind, "{what}: {error:?}");
        let report = format!("{error:?}");
        assert!(
            report.contains(reason),
            "{what}: the error says why: {report}"
        );
    }
    // The host is still serviceable from a good source.
    c.update_stage(&fx.config(&v2, "")).await.assert_success();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_or_read_only_target_disk_fails_cleanly_and_switches_nothing() {
    let mut fx = Fixture::new();
    let v1 = fx.image("v1", 611, None);
    let v2 = fx.image("v2", 612, None);
    // The target disk-image file (sparse, 128 MiB) on a tmpfs that holds
    // the install (ESP + volume A) but not a second root volume.
    let mount = Tmpfs::mount(&fx.dir.path().join("target-fs"), "30m");
    fx.disk = mount.0.join("disk.img");
    std::fs::File::create(&fx.disk)
        .unwrap()
        .set_len(servicing_support::TARGET_DISK_BYTES)
        .unwrap();
    let state = fx.dir.path().join("state");
    let d = daemon_on(&state, &[]).await;
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;

    mount.remount("ro");
    let out = failing_stage(&mut c, &fx.disk, &fx.config(&v2, ""), "read-only target").await;
    assert_eq!(out.error().subkind, "write-image", "{:?}", out.error());
    mount.remount("rw");
    let out = failing_stage(&mut c, &fx.disk, &fx.config(&v2, ""), "full target").await;
    assert_eq!(out.error().subkind, "write-image", "{:?}", out.error());
    let report = format!("{:?}", out.error());
    assert!(report.contains("No space left"), "{report}");
    drop(d);
}
