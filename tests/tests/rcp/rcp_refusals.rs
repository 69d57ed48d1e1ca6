//! Every way a tunnel must NOT come up, each refused with the reason logged
//! by the side that refused, and no host socket appearing: a host
//! certificate from another CA, no host certificate, an expired host
//! certificate and one not valid yet (refused by the listener; the agent
//! tells which from its own certificate), and a listener whose certificate
//! is not valid for the name the agent expects (refused by the agent).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use rustls_pki_types::ServerName;
use tokio::io::AsyncReadExt;
use trident_e2e::rcp_support::{AgentProc, ListenerProc, ORCHESTRATOR, Pki, tls_args};
use trident_rcp::pki::{LeafSpec, TestCa};
use trident_rcp::tls::{ALPN, load_certs};

fn no_host_sockets(pki: &Pki, listener: &ListenerProc) {
    let sockets: Vec<_> = std::fs::read_dir(pki.sockets_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(sockets.is_empty(), "sockets appeared: {sockets:?}");
    assert!(
        !listener
            .all_events()
            .iter()
            .any(|e| e["event"] == "connected"),
        "{}",
        listener.events.text()
    );
}

/// A TLS client that trusts the CA but presents no certificate.
async fn connect_without_certificate(pki: &Pki, addr: std::net::SocketAddr) {
    let mut roots = rustls::RootCertStore::empty();
    for cert in load_certs("CA", &pki.orchestrator.ca).unwrap() {
        roots.add(cert).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![ALPN.to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from(ORCHESTRATOR).unwrap();
    // TLS 1.3: our side finishes, then the server refuses; reading shows it.
    if let Ok(mut tls) = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
    {
        let mut buf = [0u8; 64];
        let _ = tls.read(&mut buf).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_ca_missing_expired_or_not_yet_valid_certificate_and_wrong_server_name_are_refused() {
    let pki = Pki::new();
    let listener = ListenerProc::start(&pki, &[]);
    // Nothing behind the agents: they must never get that far.
    let socket = pki.dir.path().join("no-tridentd.sock");

    // 1. A host certificate signed by another CA (the agent itself trusts
    //    the right CA, so only the listener can refuse).
    let other_ca = TestCa::new("another CA").unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let mut foreign = other_ca
        .write_files(other_dir.path(), "foreign", &LeafSpec::dns("foreign-host"))
        .unwrap();
    foreign.ca = pki.orchestrator.ca.clone();
    let agent = AgentProc::start(listener.addr, ORCHESTRATOR, &foreign, &socket);
    let refused = listener.event("refused", |e| {
        e["reason"].as_str().unwrap().contains("UnknownIssuer")
    });
    assert!(
        refused["addr"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{refused}"
    );
    listener
        .stderr
        .wait_for("listener log of the refusal", |l| {
            l.contains("refused") && l.contains("UnknownIssuer")
        });
    agent.stderr.wait_for("agent log of being refused", |l| {
        l.contains("refused by the orchestrator")
    });
    drop(agent);

    // 2. No certificate at all.
    connect_without_certificate(&pki, listener.addr).await;
    listener.event("refused", |e| {
        e["reason"].as_str().unwrap().contains("no certificates")
    });

    // 3. An expired certificate from the right CA.
    let expired = pki.host(
        "expired",
        &LeafSpec {
            expired: true,
            ..LeafSpec::dns("expired-host")
        },
    );
    let agent = AgentProc::start(listener.addr, ORCHESTRATOR, &expired, &socket);
    listener.event("refused", |e| {
        e["reason"].as_str().unwrap().contains("expired")
    });
    drop(agent);

    // 4. A certificate from the right CA that is not valid yet: TLS has
    //    one alert for both (`certificate_expired`), so the agent must
    //    tell which from its own certificate, not repeat the alert.
    let early = pki.host(
        "early",
        &LeafSpec {
            not_yet_valid: true,
            ..LeafSpec::dns("early-host")
        },
    );
    let agent = AgentProc::start(listener.addr, ORCHESTRATOR, &early, &socket);
    listener.event("refused", |e| {
        e["reason"].as_str().unwrap().contains("not valid yet")
    });
    let line = agent
        .stderr
        .wait_for("agent log of its not-yet-valid certificate", |l| {
            l.contains("refused") && l.contains("not valid yet")
        });
    assert!(
        !line.contains("CertificateExpired") && !line.contains("expired"),
        "a certificate that is not valid yet is not an expired one: {line}"
    );
    assert!(
        line.contains("2090-01-01"),
        "names the start of validity: {line}"
    );
    drop(agent);

    // 5. The listener's certificate is not valid for the expected name: the
    //    agent refuses, and says why.
    let good = pki.host("good", &LeafSpec::dns("good-host"));
    let agent = AgentProc::start(listener.addr, "other-orchestrator.test", &good, &socket);
    let line = agent
        .stderr
        .wait_for("agent log of the wrong server name", |l| {
            l.contains("not valid for name")
        });
    assert!(
        line.contains("refused") && line.contains("other-orchestrator.test"),
        "{line}"
    );
    drop(agent);

    no_host_sockets(&pki, &listener);
}

#[tokio::test]
async fn an_agent_refuses_to_start_with_a_key_readable_by_others() {
    use std::os::unix::fs::PermissionsExt;
    let pki = Pki::new();
    let files = pki.host("loose", &LeafSpec::dns("loose-host"));
    std::fs::set_permissions(&files.key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = std::process::Command::new(trident_e2e::bin_path("trident-rcp"))
        .args([
            "--config",
            "/dev/null",
            "--connect",
            "127.0.0.1:1",
            "--server-name",
            ORCHESTRATOR,
        ])
        .args(tls_args(&files))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("mode 0644") && stderr.contains("chmod 600"),
        "{stderr}"
    );
}
