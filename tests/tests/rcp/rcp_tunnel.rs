//! The reverse-connect proxy end to end: a real tridentd, a real agent
//! (`trident-rcp`) and a real listener (`trident rcp-listen`) on loopback.
//! The host connects, its socket appears, the event is printed and the hook
//! runs; through the socket an orchestrator streams a disk image onto a
//! disk-image file while a second client follows progress and logs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use tokio_stream::StreamExt;
use trident_e2e::fixture::CosiImage;
use trident_e2e::rcp_support::{AgentProc, ListenerProc, ORCHESTRATOR, Pki, WAIT, wait_path};
use trident_e2e::{bin_path, disk_daemon, uds_channel};
use trident_proto::v1::streaming_service_client::StreamingServiceClient;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    OperationEvent, StatusCode, StreamDiskRequest, WatchOptions, WatchRequest, record,
    servicing_response, stream_event,
};
use trident_rcp::pki::LeafSpec;

const DISK: u64 = 12 << 20;

/// A COSI image and a blank disk-image file it fits.
fn image_and_disk(dir: &Path) -> (PathBuf, PathBuf) {
    let cosi = CosiImage::new(DISK, 7)
        .esp_bytes(2 << 20)
        .write(&dir.join("image.cosi"));
    let disk = dir.join("disk.img");
    fs::write(&disk, vec![0u8; DISK as usize]).unwrap();
    (cosi.path, disk)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_connects_and_is_serviced_through_its_socket_while_another_client_follows() {
    let pki = Pki::new();
    let (image, disk) = image_and_disk(pki.dir.path());
    let daemon = disk_daemon(&disk).await;
    let hook_out = pki.dir.path().join("hook.out");
    let hook = format!(
        "echo \"$TRIDENT_HOST_ID $TRIDENT_HOST_ADDR $TRIDENT_HOST_SOCKET\" > {}",
        hook_out.display()
    );
    let listener = ListenerProc::start(&pki, &["--on-connect", &hook]);
    let files = pki.host("host-1", &LeafSpec::dns("host-1"));
    let agent = AgentProc::start(listener.addr, ORCHESTRATOR, &files, daemon.socket_path());

    // The "host is up" signal: event, socket (0600), hook.
    let connected = listener.event("connected", |e| e["host"] == "host-1");
    let socket = pki.sockets_dir().join("host-1.sock");
    assert_eq!(connected["socket"], socket.display().to_string());
    let addr = connected["addr"].as_str().unwrap().to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{connected}");
    let mode = fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    wait_path(&hook_out, true).await;
    let deadline = std::time::Instant::now() + WAIT;
    let hook_line = loop {
        let text = fs::read_to_string(&hook_out).unwrap();
        if text.ends_with('\n') || std::time::Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(
        hook_line.trim(),
        format!("host-1 {addr} {}", socket.display())
    );
    agent.stderr.wait_for("agent's connected log", |l| {
        l.contains("connected") && l.contains("host-1")
    });

    // A standard client works unchanged through the socket.
    let version = Command::new(bin_path("trident"))
        .arg("--socket")
        .arg(&socket)
        .arg("version")
        .output()
        .unwrap();
    assert!(version.status.success(), "{version:?}");

    // A follower attaches first, through the same socket.
    let mut telemetry = TelemetryServiceClient::new(uds_channel(&socket).await.unwrap());
    let mut follow = telemetry
        .watch(WatchRequest {
            options: Some(WatchOptions::default()),
            kinds: vec![],
        })
        .await
        .unwrap()
        .into_inner();
    let follower = tokio::spawn(async move {
        let (mut progress, mut logs) = (0usize, 0usize);
        loop {
            let batch = tokio::time::timeout(WAIT, follow.next())
                .await
                .expect("follower stalled")
                .expect("follower stream ended")
                .unwrap();
            for event in batch.events {
                let Some(stream_event::Event::Record(r)) = event.event else {
                    continue;
                };
                match r.record {
                    Some(record::Record::Progress(_)) => progress += 1,
                    Some(record::Record::Log(_)) => logs += 1,
                    Some(record::Record::Operation(op))
                        if op.event() == OperationEvent::Completed =>
                    {
                        return (progress, logs, op.result());
                    }
                    _ => {}
                }
            }
        }
    });

    // The orchestrator services the host through the tunnel.
    let mut streaming = StreamingServiceClient::new(uds_channel(&socket).await.unwrap());
    let mut stream = streaming
        .stream_disk(StreamDiskRequest {
            image_url: format!("file://{}", image.display()),
            image_hash: None,
            reboot: None,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut completed = None;
    while let Some(message) = tokio::time::timeout(WAIT, stream.next()).await.unwrap() {
        if let Some(servicing_response::Response::Completed(c)) = message.unwrap().response {
            completed = Some(c);
        }
    }
    let completed = completed.expect("Completed");
    assert_eq!(completed.status(), StatusCode::Success, "{completed:?}");
    assert!(
        fs::read(&disk).unwrap().iter().any(|&b| b != 0),
        "disk untouched"
    );

    let (progress, logs, result) = tokio::time::timeout(WAIT, follower).await.unwrap().unwrap();
    assert_eq!(result, StatusCode::Success);
    assert!(
        progress > 0 && logs > 0,
        "follower saw {progress} progress, {logs} logs"
    );
    drop(agent);
    drop(daemon);
}
