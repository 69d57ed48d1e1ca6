//! The operator's view of a StreamDisk from a slow `http://` source: the
//! daemon's overall progress (bytes, steps, smoothed rate, ETA) on
//! TelemetryService, an honest ETA, and a plain CLI view without the HTTP
//! client's internals. The source is a local server in the test that sends
//! the image at a fixed rate.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use trident_cosi::writer::{self, FixtureOutput, FixtureSpec};
use trident_e2e::{Daemon, bin_path};
use trident_proto::v1::{
    OverallProgress, RecordKind, StreamDiskRequest, WatchOptions, WatchRequest, record,
    stream_event, streaming_service_client::StreamingServiceClient,
    telemetry_service_client::TelemetryServiceClient,
};

/// Serves one file over HTTP/1.1 at a fixed rate (bytes per second), paced
/// against an absolute schedule so the rate does not drift on a busy
/// machine. Every request gets the whole file.
struct ThrottledServer {
    port: u16,
}

impl ThrottledServer {
    fn start(file: &Path, bytes_per_second: u64) -> ThrottledServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let body: Arc<Vec<u8>> = Arc::new(std::fs::read(file).unwrap());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let body = body.clone();
                std::thread::spawn(move || serve(conn, &body, bytes_per_second));
            }
        });
        ThrottledServer { port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/image.cosi", self.port)
    }
}

fn serve(mut conn: TcpStream, body: &[u8], bytes_per_second: u64) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if conn.write_all(head.as_bytes()).is_err() {
        return;
    }
    const TICK: Duration = Duration::from_millis(50);
    let chunk = (bytes_per_second / 20).max(1) as usize;
    let start = Instant::now();
    for (i, part) in body.chunks(chunk).enumerate() {
        let due = start + TICK * i as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        if conn.write_all(part).is_err() {
            return;
        }
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    cosi: FixtureOutput,
    target: PathBuf,
}

fn fixture(disk: u64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let spec = FixtureSpec {
        esp_size: 2 << 20,
        ..FixtureSpec::new(disk, 11)
    };
    let cosi = writer::write_cosi(&spec, &dir.path().join("image.cosi")).unwrap();
    let target = dir.path().join("target.img");
    std::fs::File::create(&target)
        .unwrap()
        .set_len(disk)
        .unwrap();
    Fixture { dir, cosi, target }
}

async fn daemon(target: &Path) -> Daemon {
    Daemon::builder()
        .args(["--inactivity-timeout", "0", "--disk"])
        .arg(target)
        .spawn()
        .await
        .unwrap()
}

/// Every overall record of the operation, with its timestamp, and the time
/// of its completion.
async fn overall_records(
    daemon: &Daemon,
    operation_id: &str,
) -> (Vec<(SystemTime, OverallProgress)>, SystemTime) {
    let mut client = TelemetryServiceClient::new(daemon.channel().await.unwrap());
    let mut stream = client
        .watch(WatchRequest {
            options: Some(WatchOptions {
                operation_id: operation_id.to_owned(),
                ..WatchOptions::default()
            }),
            kinds: vec![RecordKind::Progress as i32, RecordKind::Operation as i32],
        })
        .await
        .unwrap()
        .into_inner();
    let mut overall = Vec::new();
    loop {
        let response = tokio::time::timeout(Duration::from_secs(120), stream.next())
            .await
            .expect("the watch stalled")
            .expect("the watch ended before the completion")
            .unwrap();
        for event in response.events {
            let Some(stream_event::Event::Record(rec)) = event.event else {
                continue;
            };
            let at = SystemTime::try_from(rec.timestamp.unwrap()).unwrap();
            match rec.record {
                Some(record::Record::OverallProgress(o)) => overall.push((at, o)),
                Some(record::Record::Operation(op)) if op.result != 0 => return (overall, at),
                _ => {}
            }
        }
    }
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
    let server = ThrottledServer::start(&fx.cosi.path, rate);
    let daemon = daemon(&fx.target).await;
    let id = start_stream_disk(&daemon, server.url(), &fx.cosi.metadata_sha384).await;
    let (overall, completed) = overall_records(&daemon, &id).await;

    let total = overall
        .iter()
        .find_map(|(_, o)| o.bytes_total)
        .expect("the plan's byte total is on the wire");
    let last = &overall.last().unwrap().1;
    assert!(last.finished && last.bytes_done == total, "{last:?}");
    assert_eq!((last.steps_done, last.steps_planned), (3, 3), "{last:?}");

    let mut checked = 0;
    let mut worst: f64 = 0.0;
    for (at, o) in &overall {
        if (o.bytes_done as f64) < total as f64 * 0.10 {
            continue;
        }
        let Some(eta) = o.eta else { continue };
        let eta = Duration::try_from(eta).unwrap().as_secs_f64();
        let actual = completed.duration_since(*at).unwrap().as_secs_f64();
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
    let server = ThrottledServer::start(&fx.cosi.path, size / 2);
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
    assert!(err.contains("operation succeeded in"), "{err}");
    // Asked for (the daemon's bus filter), the HTTP client's records do
    // reach the view: the default above is the filter, not a quiet client.
    let asked = plain_stream_disk(&[("TRIDENTD_BUS_LOG", "debug")]).await;
    assert!(asked.contains("ureq"), "{asked}");
}
