//! The operator's view of a StreamDisk from a slow `http://` source: the
//! daemon's overall progress (bytes, steps, smoothed rate, ETA) on
//! TelemetryService, an honest ETA, and a plain CLI view without the HTTP
//! client's internals. The source is a local server in the test that sends
//! the image at a fixed rate.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::process::Command;
use std::time::Duration;

use futures::StreamExt;
use trident_e2e::fixture::{AbHostConfig, CosiImage, InstallFixture, StreamDiskFixture};
use trident_e2e::throttled_http::ThrottledServer;
use trident_e2e::tmux::Tmux;
use trident_e2e::{Daemon, bin_path, disk_daemon};
use trident_proto::v1::{StreamDiskRequest, streaming_service_client::StreamingServiceClient};

/// A COSI of `disk` bytes and a blank target of that size.
fn fixture(disk: u64) -> StreamDiskFixture {
    StreamDiskFixture::new(&CosiImage::new(disk, 11).esp_bytes(2 << 20))
}

/// Starts a StreamDisk and returns its operation id (the stream is drained
/// in the background).
async fn start_stream_disk(daemon: &Daemon, url: String, hash: &str) -> String {
    let mut client = StreamingServiceClient::new(daemon.channel().await.unwrap());
    let mut stream = client
        .stream_disk(StreamDiskRequest {
            image_url: url,
            image_hash: Some(format!("sha384:{hash}")),
            reboot: None,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let first = stream.next().await.unwrap().unwrap();
    let Some(trident_proto::v1::servicing_response::Response::Started(started)) = first.response
    else {
        panic!("the stream did not start with Started: {first:?}");
    };
    tokio::spawn(async move { while stream.next().await.is_some() {} });
    started.operation_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overall_eta_of_a_throttled_stream_disk_stays_within_20_percent() {
    let fx = fixture(64 << 20);
    let size = std::fs::metadata(&fx.cosi.path).unwrap().len();
    // About 20 s of transfer at a fixed rate; the daemon reports written
    // bytes per 4 MiB write, so some 20 ETAs fall after the first 10%.
    let rate = size / 20;
    let server = ThrottledServer::start(&fx.cosi.path, rate).unwrap();
    let daemon = disk_daemon(&fx.target).await;
    let id = start_stream_disk(&daemon, server.url(), &fx.cosi.metadata_sha384).await;
    let (overall, completed) = trident_e2e::overall::overall_records(daemon.socket_path(), &id)
        .await
        .unwrap();

    let total = overall
        .iter()
        .find_map(|(_, o)| o.bytes_total)
        .expect("the plan's byte total is on the wire");
    let last = &overall.last().unwrap().1;
    assert!(last.finished && last.bytes_done == total, "{last:?}");
    assert_eq!((last.steps_done, last.steps_planned), (3, 3), "{last:?}");

    // The ETA is the time until the last byte is done (the steps after it,
    // a partition-table check and the completion, are not bytes): measure
    // against the first record that has every byte.
    let bytes_done_at = overall
        .iter()
        .find(|(_, o)| o.bytes_done == total)
        .map_or(completed, |(at, _)| *at);
    let mut checked = 0;
    let mut worst: f64 = 0.0;
    for (at, o) in &overall {
        if (o.bytes_done as f64) < total as f64 * 0.10 {
            continue;
        }
        let Some(eta) = o.eta else { continue };
        let eta = Duration::try_from(eta).unwrap().as_secs_f64();
        let actual = bytes_done_at
            .duration_since(*at)
            .unwrap_or_default()
            .as_secs_f64();
        // Near the end a few tenths of a second of scheduling are a large
        // fraction; the promise is about the remaining time of the work.
        if actual < 1.0 {
            continue;
        }
        let error = (eta - actual).abs() / actual;
        worst = worst.max(error);
        checked += 1;
        assert!(
            error <= 0.20,
            "ETA {eta:.1}s vs actual {actual:.1}s remaining at {}/{} bytes",
            o.bytes_done,
            total
        );
    }
    assert!(checked >= 10, "only {checked} ETAs after the first 10%");
    eprintln!(
        "checked {checked} overall ETAs; worst error {:.1}%",
        worst * 100.0
    );
}

/// `trident stream-disk URL --progress plain` against a daemon started
/// with `env`; returns the CLI's stderr (it must exit 0).
async fn plain_stream_disk(env: &[(&str, &str)]) -> String {
    let fx = fixture(12 << 20);
    let size = std::fs::metadata(&fx.cosi.path).unwrap().len();
    let server = ThrottledServer::start(&fx.cosi.path, size / 2).unwrap();
    let mut builder = Daemon::builder()
        .args(["--inactivity-timeout", "0", "--disk"])
        .arg(&fx.target);
    for (key, value) in env {
        builder = builder.env(key, value);
    }
    let daemon = builder.spawn().await.unwrap();
    let socket = daemon.socket_path().to_path_buf();
    let url = server.url();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(bin_path("trident"))
            .arg("--socket")
            .arg(&socket)
            .args(["stream-disk", &url, "--progress", "plain"])
            .env_remove("TRIDENT_SOCKET")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{err}");
    drop(fx.dir);
    err
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_stream_disk_over_http_shows_our_records_and_a_summary_not_ureq() {
    let err = plain_stream_disk(&[]).await;
    assert!(!err.contains("ureq"), "HTTP client internals shown:\n{err}");
    assert!(
        err.contains("phase Download and write image: started"),
        "{err}"
    );
    // The overall figures come on the servicing stream (the CLI opts in)
    // and end in the summary: bytes, average rate, steps.
    assert!(err.contains("] overall: "), "{err}");
    let summary = err
        .lines()
        .find(|l| l.contains("operation succeeded in"))
        .unwrap_or_else(|| panic!("no summary:\n{err}"));
    assert!(
        summary.contains("average, 3 of 3 steps; reboot recorded (not performed)"),
        "{summary}"
    );
    // Asked for (the daemon's bus filter), the HTTP client's records do
    // reach the view: the default above is the filter, not a quiet client.
    let asked = plain_stream_disk(&[("TRIDENTD_BUS_LOG", "debug")]).await;
    assert!(asked.contains("ureq"), "{asked}");
}

/// Environment variable naming a file the tmux test writes its mid-install
/// screen to (how cli/README.md's captured screen is made).
const ENV_SCREEN_CAPTURE: &str = "TRIDENT_SCREEN_CAPTURE";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_install_in_a_real_terminal_shows_the_overall_line_and_a_summary() {
    let fx = InstallFixture::new(&CosiImage::new(96 << 20, 1).esp_bytes(4 << 20));
    let cosi = &fx.cosi.path;
    let disk = fx.disk("disk.img", 256 << 20);
    // About 12 s of transfer at a fixed rate.
    let size = std::fs::metadata(cosi).unwrap().len();
    let server = ThrottledServer::start(cosi, size / 12).unwrap();
    let config = fx.write(
        "hc",
        &AbHostConfig::new(server.url(), &disk).sizes("8M", "100M"),
    );
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await
        .unwrap();

    let tmux = Tmux::new("overall");
    // `watch` follows the install through TelemetryService (the servicing
    // stream carries overall progress only to clients that opt in).
    let command = format!(
        "env NO_COLOR=1 {} --socket {} watch --wait --progress tty; echo install-exit=$?; sleep 120",
        bin_path("trident").display(),
        daemon.socket_path().display(),
    );
    tmux.start("view", (110, 20), &command);
    tmux.wait_for("view", "watch to wait", |s| {
        s.contains("waiting for the next servicing operation")
    });
    let mut install = Command::new(bin_path("trident"))
        .arg("--socket")
        .arg(daemon.socket_path())
        .args(["install", "--progress", "plain"])
        .arg(&config)
        .env_remove("TRIDENT_SOCKET")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();

    // Mid-write: the Overall line under the operation line, with bytes,
    // the daemon's rate and an ETA; the write phase nested below it.
    let screen = tmux.wait_for("view", "an overall ETA", |s| {
        s.lines()
            .any(|l| l.trim_start().starts_with("Overall") && l.contains("ETA"))
    });
    if let Some(path) = std::env::var_os(ENV_SCREEN_CAPTURE) {
        std::fs::write(path, &screen).unwrap();
    }
    let midway = screen.clone();
    let lines: Vec<&str> = screen.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.starts_with("● Install"))
        .unwrap_or_else(|| panic!("no operation line:\n{screen}"));
    let overall = lines.get(top + 1).copied().unwrap_or_default();
    assert!(overall.starts_with("  Overall  ["), "{screen}");
    assert!(
        overall.contains("MiB/") && overall.contains("MiB/s"),
        "{screen}"
    );
    // The install's plan, declared up front: validate, partition,
    // download, verify, mount, configure, boot-files, finalize; the write
    // runs in "verify", the fourth.
    assert!(overall.ends_with("step 4 of 8"), "{screen}");
    assert!(
        screen.contains("    ▶ Write / to root-a"),
        "phases indented under Overall:\n{screen}"
    );

    let status = tokio::task::spawn_blocking(move || install.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let screen = tmux.wait_for("view", "the watch to end", |s| s.contains("install-exit="));
    assert!(screen.contains("install-exit=0"), "{screen}");
    assert!(screen.contains("✔ Install"), "{screen}");
    let summary = screen
        .lines()
        .find(|l| l.starts_with("operation succeeded in"))
        .unwrap_or_else(|| panic!("no closing summary:\n{screen}"));
    // The fixture image's root volume holds no filesystem the daemon mounts, so the
    // configure and boot files steps left the plan when the mount found no
    // root: every step of the revised plan ran.
    assert!(
        summary.contains(" average, 6 of 6 steps; reboot recorded (not performed)"),
        "every planned step ran: {summary}"
    );
    assert!(
        !screen.contains("Overall"),
        "the Overall line gives way to the summary:\n{screen}"
    );
    if let Some(path) = std::env::var_os(ENV_SCREEN_CAPTURE) {
        std::fs::write(path, format!("{midway}\n--- at the end ---\n{screen}")).unwrap();
    }
}
