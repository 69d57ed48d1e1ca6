//! The listener library with a real agent over loopback: the Rust API an
//! orchestrator uses (events, a tonic channel per host), replacement of a
//! reconnecting host, and refusal of an agent whose certificate is wrong.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::UnixListener;
use tokio_stream::wrappers::UnixListenerStream;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use trident_rcp::agent::{Agent, AgentConfig};
use trident_rcp::pki::{LeafSpec, TestCa};
use trident_rcp::{Event, Keepalive, Listener, ListenerConfig, Protocol, TlsFiles};

const WAIT: Duration = Duration::from_secs(60);

/// A gRPC health server on a Unix socket, standing in for tridentd.
async fn fake_daemon(dir: &Path) -> PathBuf {
    let socket = dir.join("tridentd.sock");
    let incoming = UnixListenerStream::new(UnixListener::bind(&socket).unwrap());
    let (_reporter, service) = tonic_health::server::health_reporter();
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming)
            .await
            .unwrap();
    });
    socket
}

fn agent_config(
    addr: std::net::SocketAddr,
    server_name: &str,
    tls: TlsFiles,
    socket: PathBuf,
) -> AgentConfig {
    AgentConfig {
        connect: addr.to_string(),
        server_name: server_name.to_owned(),
        tls,
        socket,
        backoff_initial: Duration::from_millis(50),
        backoff_max: Duration::from_millis(500),
        keepalive: Keepalive::default(),
        connect_timeout: Duration::from_secs(10),
        protocol: Protocol::Trident,
    }
}

async fn next(listener: &mut Listener) -> Event {
    tokio::time::timeout(WAIT, listener.next_event())
        .await
        .unwrap()
        .unwrap()
}

struct Setup {
    dir: tempfile::TempDir,
    ca: TestCa,
    listener: Listener,
    socket: PathBuf,
}

async fn setup() -> Setup {
    setup_with(Protocol::Trident).await
}

async fn setup_with(protocol: Protocol) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("rcp test CA").unwrap();
    let files = ca
        .write_files(
            dir.path(),
            "orchestrator",
            &LeafSpec::dns("orchestrator.test"),
        )
        .unwrap();
    let listener = Listener::bind(ListenerConfig {
        protocol,
        ..ListenerConfig::new("127.0.0.1:0".parse().unwrap(), files)
    })
    .await
    .unwrap();
    let socket = fake_daemon(dir.path()).await;
    Setup {
        dir,
        ca,
        listener,
        socket,
    }
}

fn spawn_agent(
    s: &Setup,
    name: &str,
    spec: &LeafSpec,
    server_name: &str,
) -> tokio::task::JoinHandle<()> {
    let files = s.ca.write_files(s.dir.path(), name, spec).unwrap();
    let agent = Agent::new(agent_config(
        s.listener.local_addr(),
        server_name,
        files,
        s.socket.clone(),
    ))
    .unwrap();
    tokio::spawn(async move { agent.run().await })
}

#[tokio::test]
async fn a_host_connects_serves_grpc_through_its_channel_and_a_reconnect_replaces_it() {
    let mut s = setup().await;
    let first = spawn_agent(&s, "host-a", &LeafSpec::dns("host-1"), "orchestrator.test");
    let Event::Connected(host) = next(&mut s.listener).await else {
        panic!("expected connected")
    };
    assert_eq!(host.id(), "host-1");
    let mut health = HealthClient::new(host.channel().await.unwrap());
    let answer = health
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap();
    assert_eq!(answer.into_inner().status, 1, "SERVING");

    // The same identity from a second agent replaces the first tunnel:
    // the old one is reported gone before the new one is announced.
    let second = spawn_agent(&s, "host-b", &LeafSpec::dns("host-1"), "orchestrator.test");
    let Event::Disconnected {
        host: gone,
        generation,
        reason,
        ..
    } = next(&mut s.listener).await
    else {
        panic!("expected disconnected")
    };
    assert_eq!((gone.as_str(), generation), ("host-1", host.generation()));
    assert!(reason.contains("replaced"), "{reason}");
    let Event::Connected(newer) = next(&mut s.listener).await else {
        panic!("expected connected")
    };
    assert!(newer.generation() > host.generation());
    tokio::time::timeout(WAIT, host.closed()).await.unwrap();

    // The first agent redials and replaces again; stop it first.
    first.abort();
    let mut health = HealthClient::new(newer.channel().await.unwrap());
    health
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap();
    second.abort();
}

#[tokio::test]
async fn a_host_certificate_from_another_ca_is_refused_with_the_reason() {
    let mut s = setup().await;
    let other = TestCa::new("another CA").unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let mut files = other
        .write_files(other_dir.path(), "host", &LeafSpec::dns("host-1"))
        .unwrap();
    // The agent trusts the right CA but presents a certificate of another.
    files.ca = s.dir.path().join("ca.pem");
    let agent = Agent::new(agent_config(
        s.listener.local_addr(),
        "orchestrator.test",
        files,
        s.socket.clone(),
    ))
    .unwrap();
    let task = tokio::spawn(async move { agent.run().await });
    let Event::Refused { reason, .. } = next(&mut s.listener).await else {
        panic!("expected refused")
    };
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    task.abort();
    let _ = &mut s;
}

/// Upstream protocol (`tools/pkg/rcp`): our agent and our listener, each
/// connection one raw byte stream to the host's socket; a gRPC client gets
/// through, and after its connection closes the agent dials again and the
/// next client gets through too.
#[tokio::test]
async fn upstream_protocol_carries_one_grpc_connection_per_dial_and_redials_after_each_close() {
    let Setup {
        dir,
        ca,
        mut listener,
        socket,
    } = setup_with(Protocol::Upstream).await;
    let host_files = ca
        .write_files(dir.path(), "host", &LeafSpec::dns("host-1"))
        .unwrap();
    let agent = Agent::new(AgentConfig {
        protocol: Protocol::Upstream,
        ..agent_config(
            listener.local_addr(),
            "orchestrator.test",
            host_files,
            socket,
        )
    })
    .unwrap();
    let task = tokio::spawn(async move { agent.run().await });
    let Event::Connected(host) = next(&mut listener).await else {
        panic!("expected connected")
    };
    assert_eq!(host.id(), "host-1");
    for round in 0..3 {
        let channel = tokio::time::timeout(WAIT, host.channel())
            .await
            .unwrap()
            .unwrap();
        let answer = HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(answer.into_inner().status, 1, "SERVING");
    }
    task.abort();
}

/// Upstream protocol: mutual TLS stays mandatory; a host certificate from
/// another CA is refused by the listener, and an agent that does not trust
/// the listener's CA never connects.
#[tokio::test]
async fn upstream_protocol_refuses_a_peer_of_another_ca_on_both_sides() {
    let Setup {
        dir,
        ca,
        mut listener,
        socket,
    } = setup_with(Protocol::Upstream).await;
    let other = TestCa::new("another CA").unwrap();
    let other_dir = tempfile::tempdir().unwrap();

    // The agent trusts the right CA but presents a certificate of another.
    let mut wrong_cert = other
        .write_files(other_dir.path(), "host", &LeafSpec::dns("host-1"))
        .unwrap();
    wrong_cert.ca = dir.path().join("ca.pem");
    let agent = Agent::new(AgentConfig {
        protocol: Protocol::Upstream,
        ..agent_config(
            listener.local_addr(),
            "orchestrator.test",
            wrong_cert,
            socket.clone(),
        )
    })
    .unwrap();
    let task = tokio::spawn(async move { agent.run().await });
    let Event::Refused { reason, .. } = next(&mut listener).await else {
        panic!("expected refused")
    };
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    task.abort();

    // The agent's certificate is right but it trusts another CA: it
    // refuses the listener, which never reports the host connected.
    let mut wrong_ca = ca
        .write_files(dir.path(), "host2", &LeafSpec::dns("host-2"))
        .unwrap();
    wrong_ca.ca = other_dir.path().join("ca.pem");
    let agent = Agent::new(AgentConfig {
        protocol: Protocol::Upstream,
        ..agent_config(listener.local_addr(), "orchestrator.test", wrong_ca, socket)
    })
    .unwrap();
    let agent = std::sync::Arc::new(agent);
    let running = std::sync::Arc::clone(&agent);
    let task = tokio::spawn(async move { running.run().await });
    let deadline = tokio::time::Instant::now() + WAIT;
    let refused = loop {
        if let Some(end) = agent.last_end() {
            break end;
        }
        assert!(tokio::time::Instant::now() < deadline, "never refused");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        matches!(refused, trident_rcp::agent::AgentState::Refused { .. }),
        "{refused:?}"
    );
    assert!(
        format!("{refused:?}").contains("UnknownIssuer"),
        "{refused:?}"
    );
    match tokio::time::timeout(Duration::from_millis(500), listener.next_event()).await {
        Err(_) => {}
        Ok(Some(Event::Refused { .. })) => {}
        Ok(other) => panic!("the listener must not accept it: {other:?}"),
    }
    task.abort();
}
