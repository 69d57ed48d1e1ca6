//! Upstream Trident's reverse-connect protocol with the real binaries: a
//! real tridentd, `trident-rcp --protocol upstream` and `trident rcp-listen
//! --protocol upstream` on loopback. Each connection carries one raw byte
//! stream, so every CLI call through the host's socket is a fresh dial of
//! the agent; a host certificate from another CA is refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use trident_e2e::rcp_support::{AgentProc, ListenerProc, ORCHESTRATOR, Pki};
use trident_e2e::{bin_path, daemon};
use trident_rcp::pki::{LeafSpec, TestCa};

const UPSTREAM: [&str; 2] = ["--protocol", "upstream"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_reaches_tridentd_through_upstream_protocol_tunnels_and_a_foreign_host_is_refused()
{
    let pki = Pki::new();
    let daemon = daemon().await;
    let listener = ListenerProc::start(&pki, &UPSTREAM);
    let files = pki.host("host-1", &LeafSpec::dns("host-1"));
    let state = pki.dir.path().join("host-1.state.json");
    let agent = AgentProc::start_with_args(
        listener.addr,
        ORCHESTRATOR,
        &files,
        daemon.socket_path(),
        &state,
        &UPSTREAM,
    );
    let connected = listener.event("connected", |e| e["host"] == "host-1");
    let socket = connected["socket"].as_str().unwrap().to_owned();

    // Each CLI run opens its own connections: each one is a new dial.
    for round in 0..3 {
        let out = Command::new(bin_path("trident"))
            .args(["--socket", &socket, "get", "status"])
            .env_remove("TRIDENT_SOCKET")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("servicingState: not-provisioned"),
            "round {round}: {stdout}{}\nlistener events:\n{}\nlistener stderr:\n{}\nagent stderr:\n{}",
            String::from_utf8_lossy(&out.stderr),
            listener.events.text(),
            listener.stderr.text(),
            agent.stderr.text()
        );
    }

    // A host certificate of another CA (the agent trusts the right one):
    // refused by the listener, no socket for it.
    let other_ca = TestCa::new("another CA").unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let mut foreign = other_ca
        .write_files(other_dir.path(), "foreign", &LeafSpec::dns("foreign-host"))
        .unwrap();
    foreign.ca = pki.orchestrator.ca.clone();
    let foreign_state = other_dir.path().join("foreign.state.json");
    let _foreign = AgentProc::start_with_args(
        listener.addr,
        ORCHESTRATOR,
        &foreign,
        daemon.socket_path(),
        &foreign_state,
        &UPSTREAM,
    );
    listener.event("refused", |e| {
        e["reason"].as_str().unwrap().contains("UnknownIssuer")
    });
    assert!(!pki.sockets_dir().join("foreign-host.sock").exists());
}
