//! `trident rcp-listen` stops cleanly: SIGINT (Ctrl-C) and SIGTERM (systemd
//! stop) are its normal end, exit status 0, every host socket removed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use nix::sys::signal::Signal;
use trident_e2e::rcp_support::{AgentProc, ListenerProc, ORCHESTRATOR, Pki, wait_path};
use trident_rcp::pki::LeafSpec;

async fn stops_cleanly_on(signal: Signal) {
    let pki = Pki::new();
    let mut listener = ListenerProc::start(&pki, &[]);
    let files = pki.host("host-1", &LeafSpec::dns("host-1"));
    // No tridentd is needed: the tunnel comes up without one.
    let absent = pki.dir.path().join("no-daemon.sock");
    let _agent = AgentProc::start(listener.addr, ORCHESTRATOR, &files, &absent);
    listener.event("connected", |e| e["host"] == "host-1");
    let socket = pki.sockets_dir().join("host-1.sock");
    wait_path(&socket, true).await;

    listener.signal(signal);
    let status = listener.wait_exit();
    assert_eq!(
        status.code(),
        Some(0),
        "{signal}: {status}; stderr:\n{}",
        listener.stderr.text()
    );
    assert!(!socket.exists(), "{signal} left {}", socket.display());
    let stderr = listener.stderr.text();
    assert!(!stderr.contains("interrupted"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_exits_zero_and_removes_host_sockets() {
    stops_cleanly_on(Signal::SIGINT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_zero_and_removes_host_sockets() {
    stops_cleanly_on(Signal::SIGTERM).await;
}
