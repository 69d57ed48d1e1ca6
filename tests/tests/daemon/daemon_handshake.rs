//! A connection that never sends a request (only the HTTP/2 preface, or
//! nothing) is closed after the handshake timeout, and until then it does
//! not count as active: it cannot keep the daemon from exiting as idle.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use trident_e2e::{Daemon, daemon};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Far above the daemon's 10 s handshake timeout: only a hang fails.
const CLOSE_WAIT: Duration = Duration::from_secs(120);
const CLOSED_LOG: &str = "closing a connection that sent no request within the handshake timeout";

/// Reads (and discards the server's SETTINGS) until the daemon closes.
async fn wait_closed(mut stream: UnixStream) {
    let mut buf = [0u8; 1024];
    tokio::time::timeout(CLOSE_WAIT, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await
    .expect("the daemon kept a connection without a request open");
}

#[tokio::test]
async fn preface_only_and_silent_connections_are_closed_and_the_daemon_keeps_serving() {
    let daemon = daemon().await;
    let mut preface_only = UnixStream::connect(daemon.socket_path()).await.unwrap();
    preface_only.write_all(PREFACE).await.unwrap();
    let silent = UnixStream::connect(daemon.socket_path()).await.unwrap();
    wait_closed(preface_only).await;
    wait_closed(silent).await;
    trident_e2e::version(daemon.socket_path()).await.unwrap();
    // Read from the daemon's stderr pipe, which may lag the close.
    daemon
        .wait_for_stderr(CLOSED_LOG, Duration::from_secs(30))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_connection_without_a_request_does_not_keep_the_daemon_from_exiting_idle() {
    let mut daemon = Daemon::builder()
        .args(["--inactivity-timeout", "1s"])
        .spawn()
        .await
        .unwrap();
    let mut held = UnixStream::connect(daemon.socket_path()).await.unwrap();
    held.write_all(PREFACE).await.unwrap();
    let status = daemon.wait_exit(CLOSE_WAIT).await.unwrap();
    assert!(status.is_some_and(|s| s.success()), "{}", daemon.stderr());
    // It exited as idle with the connection still open, not after
    // closing it on the handshake timeout.
    assert!(!daemon.stderr().contains(CLOSED_LOG), "{}", daemon.stderr());
    drop(held);
}
