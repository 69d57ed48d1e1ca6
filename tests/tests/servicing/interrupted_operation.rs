//! An operation cut short by SIGKILL leaves a structured `interrupted`
//! error in every view after the restart: TelemetryService (GetLastError,
//! ListOperations: failed, with an end time), the StatusService, `trident
//! get last-error` and a diagnose bundle. The operation is a StreamDisk
//! from a throttled local http:// server, killed after a few progress
//! records.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use futures::StreamExt;
use nix::sys::signal::Signal;
use trident_e2e::fixture::CosiImage;
use trident_e2e::{Daemon, trident_cli};
use trident_proto::v1::{
    GetLastErrorRequest, ListOperationsRequest, StatusCode, StreamDiskRequest, servicing_response,
    streaming_service_client::StreamingServiceClient,
    telemetry_service_client::TelemetryServiceClient,
};
use trident_proto::v1preview::{
    GetLastErrorRequest as StatusLastErrorRequest, status_service_client::StatusServiceClient,
};

const DISK: u64 = 12 << 20;
const WAIT: Duration = Duration::from_secs(120);

/// Serves `body` over HTTP/1.1 on a loopback port, 4 KiB every 20 ms, so
/// a download takes long enough to be killed in the middle.
fn throttled_server(body: Vec<u8>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let body = body.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\n\r\n",
                    body.len()
                );
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                for chunk in body.chunks(4096) {
                    if stream.write_all(chunk).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
        }
    });
    port
}

/// Starts StreamDisk and returns its operation id once a few progress
/// records of the download arrived; the stream is left open.
async fn stream_disk_until_progress(daemon: &Daemon, url: String) -> String {
    let mut client = StreamingServiceClient::new(daemon.channel().await.unwrap());
    let request = StreamDiskRequest {
        image_url: url,
        image_hash: None,
        reboot: None,
        ..Default::default()
    };
    let mut stream = client.stream_disk(request).await.unwrap().into_inner();
    let (mut operation_id, mut progress) = (String::new(), 0);
    while progress < 5 {
        let item = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("stream stalled")
            .expect("stream ended before enough progress")
            .unwrap();
        match item.response {
            Some(servicing_response::Response::Started(s)) => operation_id = s.operation_id,
            Some(servicing_response::Response::Progress(p)) if p.current > 0 => progress += 1,
            Some(servicing_response::Response::Completed(c)) => panic!("completed: {c:?}"),
            _ => {}
        }
    }
    assert!(!operation_id.is_empty());
    operation_id
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_mid_stream_disk_leaves_an_interrupted_error_in_every_view() {
    let dir = tempfile::tempdir().unwrap();
    let cosi = CosiImage::new(DISK, 11).write(&dir.path().join("i.cosi"));
    let port = throttled_server(std::fs::read(&cosi.path).unwrap());
    let target = dir.path().join("target.img");
    std::fs::write(&target, vec![0u8; DISK as usize]).unwrap();
    let state = dir.path().join("state");
    let start = || {
        Daemon::builder()
            .state_dir(&state)
            .args(["--inactivity-timeout", "0", "--disk"])
            .arg(&target)
            .spawn()
    };

    let mut first = start().await.unwrap();
    let operation_id =
        stream_disk_until_progress(&first, format!("http://127.0.0.1:{port}/i.cosi")).await;
    first.signal(Signal::SIGKILL).unwrap();
    first.wait_exit(WAIT).await.unwrap();
    drop(first);

    let daemon = start().await.unwrap();
    let mut telemetry = TelemetryServiceClient::new(daemon.channel().await.unwrap());
    let error = telemetry
        .get_last_error(GetLastErrorRequest {})
        .await
        .unwrap()
        .into_inner()
        .error
        .expect("TelemetryService.GetLastError returned no error");
    assert_eq!(error.subkind, "interrupted", "{error:?}");
    assert_eq!(error.operation_id, operation_id, "{error:?}");
    assert!(error.message.contains("StreamDisk"), "{error:?}");
    assert!(error.message.contains("started 20"), "{error:?}");
    assert!(
        !error.message.contains("last phase reached: none"),
        "{error:?}"
    );

    every_view_says_interrupted(&daemon, &state, &operation_id).await;
}

/// The SIGKILL test's twin: SIGTERM mid-write. The grace period bounds the
/// work: when it is over the write is cancelled, the operation records
/// itself as interrupted (datastore, journal, last error) and the daemon
/// exits; nothing writes the target after that. After a restart every view
/// names this operation, not an older failure (one is made first).
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_mid_stream_disk_stops_the_write_within_the_grace_and_every_view_says_interrupted()
{
    let dir = tempfile::tempdir().unwrap();
    let cosi = CosiImage::new(DISK, 12).write(&dir.path().join("i.cosi"));
    let port = throttled_server(std::fs::read(&cosi.path).unwrap());
    let target = dir.path().join("target.img");
    std::fs::write(&target, vec![0u8; DISK as usize]).unwrap();
    let state = dir.path().join("state");
    let start = || {
        Daemon::builder()
            .state_dir(&state)
            .args([
                "--inactivity-timeout",
                "0",
                "--shutdown-grace",
                "1s",
                "--disk",
            ])
            .arg(&target)
            .spawn()
    };

    let mut first = start().await.unwrap();
    // An older failure: a download from a closed port.
    let older = trident_cli(
        first.socket_path(),
        &["stream-disk", "http://127.0.0.1:9/none.cosi"],
    );
    assert!(!older.status.success(), "{older:?}");
    let operation_id =
        stream_disk_until_progress(&first, format!("http://127.0.0.1:{port}/i.cosi")).await;
    let signalled = std::time::Instant::now();
    first.signal(Signal::SIGTERM).unwrap();
    let exit = first.wait_exit(WAIT).await.unwrap();
    let took = signalled.elapsed();
    assert!(exit.is_some(), "the daemon did not exit");
    // Grace (1 s) + the interrupt wait (5 s) + the runtime stop (1 s), with
    // room for a loaded machine.
    assert!(took < Duration::from_secs(12), "exited after {took:?}");
    let stderr = first.stderr();
    drop(first);
    // Nothing writes the target once the daemon is gone.
    let after_exit = std::fs::read(&target).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        std::fs::read(&target).unwrap() == after_exit,
        "the target was written after the daemon exited; its log:\n{stderr}"
    );

    let daemon = start().await.unwrap();
    let error = TelemetryServiceClient::new(daemon.channel().await.unwrap())
        .get_last_error(GetLastErrorRequest {})
        .await
        .unwrap()
        .into_inner()
        .error
        .expect("TelemetryService.GetLastError returned no error");
    assert_eq!(error.subkind, "interrupted", "{error:?}");
    assert_eq!(error.operation_id, operation_id, "{error:?}");
    every_view_says_interrupted(&daemon, &state, &operation_id).await;
}

/// `ListOperations` (failed, ended), the StatusService's last error, `trident
/// get last-error` and a diagnose bundle's report all name `operation_id`
/// as interrupted.
async fn every_view_says_interrupted(daemon: &Daemon, state: &Path, operation_id: &str) {
    let mut telemetry = TelemetryServiceClient::new(daemon.channel().await.unwrap());
    let operations = telemetry
        .list_operations(ListOperationsRequest {})
        .await
        .unwrap()
        .into_inner()
        .operations;
    let op = operations
        .iter()
        .find(|o| o.operation_id == operation_id)
        .expect("interrupted operation not listed");
    assert!(!op.running, "{op:?}");
    assert_eq!(op.result(), StatusCode::Failure, "{op:?}");
    assert!(op.completed.is_some(), "{op:?}");

    let mut status = StatusServiceClient::new(daemon.channel().await.unwrap());
    let stored = status
        .get_last_error(StatusLastErrorRequest {})
        .await
        .unwrap()
        .into_inner()
        .error
        .expect("StatusService.GetLastError returned no error");
    assert_eq!(stored.subkind, "interrupted", "{stored:?}");
    assert_eq!(stored.operation_id, operation_id, "{stored:?}");

    let cli = trident_cli(daemon.socket_path(), &["get", "last-error"]);
    let printed = String::from_utf8_lossy(&cli.stdout);
    assert!(cli.status.success(), "{cli:?}");
    assert!(
        printed.contains("interrupted") && printed.contains(operation_id),
        "{printed}"
    );

    let bundle = state.with_extension("bundle.tar");
    let out = trident_cli(
        daemon.socket_path(),
        &[
            "diagnose",
            "-o",
            bundle.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let report = Command::new("tar")
        .arg("-xOf")
        .arg(&bundle)
        .arg("report.json")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&report.stdout);
    assert!(
        report.contains("interrupted") && report.contains(operation_id),
        "{report}"
    );
}
