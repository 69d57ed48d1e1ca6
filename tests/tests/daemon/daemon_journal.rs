//! Under systemd (`JOURNAL_STREAM` set) tridentd logs to the journal
//! natively, with structured fields, so `journalctl -u tridentd
//! OPERATION_ID=<id>` selects one operation. journald does not run here, so
//! the daemon runs in a private mount namespace whose
//! /run/systemd/journal/socket is a datagram socket this test binds; the
//! test decodes journald's native protocol from it.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::collections::HashMap;
use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use futures::StreamExt;
use trident_e2e::Daemon;
use trident_proto::v1::{
    StreamDiskRequest, servicing_response, streaming_service_client::StreamingServiceClient,
};

/// One journal entry: field name -> value.
type Entry = HashMap<String, String>;

/// Decodes one datagram of journald's native protocol: `NAME=value\n`, or
/// `NAME\n` + little-endian u64 length + value + `\n` for binary-safe values.
fn decode(mut data: &[u8]) -> Entry {
    let mut entry = Entry::new();
    while !data.is_empty() {
        let line_end = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
        let line = &data[..line_end];
        if let Some(eq) = line.iter().position(|&b| b == b'=') {
            let name = String::from_utf8_lossy(&line[..eq]).into_owned();
            entry.insert(name, String::from_utf8_lossy(&line[eq + 1..]).into_owned());
            data = data.get(line_end + 1..).unwrap_or_default();
        } else {
            let name = String::from_utf8_lossy(line).into_owned();
            let rest = &data[line_end + 1..];
            let len = u64::from_le_bytes(rest[..8].try_into().unwrap()) as usize;
            let value = String::from_utf8_lossy(&rest[8..8 + len]).into_owned();
            entry.insert(name, value);
            data = rest.get(8 + len + 1..).unwrap_or_default();
        }
    }
    entry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_journal_stream_the_daemon_logs_natively_with_the_operation_id() {
    let journal_dir = tempfile::tempdir().unwrap();
    let socket = UnixDatagram::bind(journal_dir.path().join("socket")).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    // A private /run with the test's socket at journald's path.
    let script = "mount -t tmpfs none /run && mkdir -p /run/systemd/journal && \
                  mount --bind \"$0\" /run/systemd/journal && exec \"$@\"";
    let journal = journal_dir.path().to_str().unwrap().to_owned();
    let mut daemon = Daemon::builder()
        .wrapper(["unshare", "--mount", "sh", "-c", script, journal.as_str()])
        .args(["--inactivity-timeout", "0"])
        .env("JOURNAL_STREAM", "8:12345")
        .spawn()
        .await
        .unwrap();

    // An operation that fails at once (no such image).
    let mut client = StreamingServiceClient::new(daemon.channel().await.unwrap());
    let mut stream = client
        .stream_disk(StreamDiskRequest {
            image_url: "file:///nonexistent/image.cosi".into(),
            image_hash: None,
            reboot: None,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut operation_id = String::new();
    while let Some(message) = stream.next().await {
        if let Some(servicing_response::Response::Started(s)) = message.unwrap().response {
            operation_id = s.operation_id;
        }
    }
    assert!(!operation_id.is_empty());

    let entries = tokio::task::spawn_blocking(move || {
        let mut entries = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut buf = vec![0u8; 1 << 16];
        while Instant::now() < deadline {
            if let Ok(n) = socket.recv(&mut buf) {
                let entry = decode(&buf[..n]);
                let done = entry
                    .get("MESSAGE")
                    .is_some_and(|m| m.starts_with("servicing operation failed"));
                entries.push(entry);
                if done {
                    break;
                }
            }
        }
        entries
    })
    .await
    .unwrap();

    let of_op: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.get("OPERATION_ID") == Some(&operation_id))
        .collect();
    let failed = of_op
        .iter()
        .find(|e| {
            e.get("MESSAGE")
                .is_some_and(|m| m.starts_with("servicing operation failed"))
        })
        .unwrap_or_else(|| panic!("no failure entry of {operation_id} in {entries:#?}"));
    assert_eq!(
        failed.get("SYSLOG_IDENTIFIER").map(String::as_str),
        Some("tridentd")
    );
    assert_eq!(
        failed.get("PRIORITY").map(String::as_str),
        Some("3"),
        "error"
    );
    assert_eq!(
        failed.get("TARGET").map(String::as_str),
        Some("trident::operation")
    );
    assert_eq!(failed.get("RPC").map(String::as_str), Some("StreamDisk"));
    assert!(
        failed.get("TRACE_ID").is_some_and(|t| t.len() == 32),
        "{failed:#?}"
    );
    assert!(of_op.len() >= 2, "started and failed entries: {of_op:#?}");
    // The journal replaced the text lines: stderr carries no log line.
    daemon.stop();
    let stderr = daemon.stderr();
    assert!(!stderr.contains("servicing operation"), "{stderr}");
}
