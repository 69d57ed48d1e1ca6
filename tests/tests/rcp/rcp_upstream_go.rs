//! Interoperability with upstream Trident's own Go reverse-connect proxy,
//! built from its source (`tests/upstream-rcp/`, by
//! `scripts/build-upstream-rcp.sh`), in both directions, each ending in
//! gRPC calls answered by a real tridentd:
//!
//! - upstream's `rcp-agent` dials `trident rcp-listen --protocol upstream`;
//! - `trident-rcp --protocol upstream` dials upstream's
//!   `client.ListenAndAccept` (our `rcp-listen` main, which does what
//!   netlaunch does with it and offers the connection on a Unix socket).
//!
//! Both directions use one certificate pair, which upstream's binaries
//! embed (or take base64 in the agent's YAML) and our side reads as files:
//! made by upstream's `go:generate` openssl commands, so self-signed and
//! `CA:TRUE`, each side trusting the other's certificate itself, which
//! our upstream mode accepts as Go does (`rcp/README.md`). A certificate
//! that is not the one in our `--ca` is refused. Without
//! `UPSTREAM_RCP_DIR` (the script's output; `scripts/test.sh` sets it) the
//! tests print SKIPPED and pass.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use trident_e2e::rcp_support::{AgentProc, Lines, ListenerProc, WAIT, host_daemon};
use trident_e2e::{bin_path, uds_channel, version};
use trident_proto::v1::host_status_service_client::HostStatusServiceClient;
use trident_proto::v1::version_service_client::VersionServiceClient;
use trident_proto::v1::{GetHostStatusRequest, VersionRequest};
use trident_rcp::TlsFiles;
use trident_rcp::pki::{LeafSpec, self_signed};

const UPSTREAM: [&str; 2] = ["--protocol", "upstream"];
/// The server certificate's name in upstream's `tlscerts` (its `--san`).
const UPSTREAM_SERVER_NAME: &str = "reverseconnectproxy";
/// The identity of upstream's client certificate (`-subj /CN=localhost`,
/// no subject alternative name): the name of its socket on our listener.
const UPSTREAM_CLIENT_ID: &str = "localhost";

/// The build script's output: `bin/` and `certs/`.
struct UpstreamRcp(PathBuf);

impl UpstreamRcp {
    fn from_env(test: &str) -> Option<Self> {
        let Some(dir) = std::env::var_os("UPSTREAM_RCP_DIR") else {
            println!(
                "SKIPPED: {test}: UPSTREAM_RCP_DIR is not set \
                 (UPSTREAM_RCP_DIR=\"$(bash scripts/build-upstream-rcp.sh)\")"
            );
            return None;
        };
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("bin/rcp-agent").is_file() && dir.join("bin/rcp-listen").is_file(),
            "UPSTREAM_RCP_DIR={} holds no bin/rcp-agent and bin/rcp-listen",
            dir.display()
        );
        Some(UpstreamRcp(dir))
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.0.join("bin").join(name)
    }

    fn cert(&self, name: &str) -> PathBuf {
        self.0.join("certs").join(name)
    }

    /// What our listener presents and trusts to stand in for upstream's
    /// own: upstream's server certificate, its client certificate trusted.
    fn listener_files(&self) -> TlsFiles {
        TlsFiles {
            ca: self.cert("client.crt"),
            cert: self.cert("server.crt"),
            key: self.cert("server.key"),
        }
    }

    /// Upstream's agent's config: `rcpClientTls` carries the client's
    /// certificate and key and the server certificate it trusts, base64.
    fn agent_config(&self, listener: SocketAddr, tridentd: &Path) -> String {
        let read = |name: &str| std::fs::read(self.cert(name)).unwrap();
        self.agent_config_with(listener, tridentd, &read("client.crt"), &read("client.key"))
    }

    /// The same with another client certificate and key (PEM).
    fn agent_config_with(
        &self,
        listener: SocketAddr,
        tridentd: &Path,
        cert: &[u8],
        key: &[u8],
    ) -> String {
        format!(
            "clientAddress: \"{listener}\"\nserverAddress: \"{}\"\nrcpClientTls:\n  \
             certData: \"{}\"\n  keyData: \"{}\"\n  serverCert: \"{}\"\n",
            tridentd.display(),
            base64(cert),
            base64(key),
            base64(&std::fs::read(self.cert("server.crt")).unwrap()),
        )
    }
}

/// A Go binary with both pipes followed; killed on drop.
struct GoProc {
    child: Child,
    stdout: Lines,
    stderr: Lines,
}

impl GoProc {
    fn start(program: &Path, args: &[&OsStr]) -> Self {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
        let stdout = Lines::follow(child.stdout.take().unwrap());
        let stderr = Lines::follow(child.stderr.take().unwrap());
        GoProc {
            child,
            stdout,
            stderr,
        }
    }
}

impl Drop for GoProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_go_agent_tunnels_grpc_calls_to_tridentd_through_our_listener() {
    let Some(upstream) = UpstreamRcp::from_env("upstream's rcp-agent -> trident rcp-listen") else {
        return;
    };
    let daemon = host_daemon().await;
    let dir = tempfile::tempdir().unwrap();
    // Our listener presents upstream's server certificate and trusts its
    // client certificate, as upstream's own listener does.
    let server = upstream.listener_files();
    let listener = ListenerProc::start_with(&server, &dir.path().join("hosts"), &UPSTREAM);
    let config = dir.path().join("rcp-agent.yaml");
    std::fs::write(
        &config,
        upstream.agent_config(listener.addr, daemon.socket_path()),
    )
    .unwrap();
    let agent = GoProc::start(
        &upstream.bin("rcp-agent"),
        &[OsStr::new("--config"), config.as_os_str()],
    );
    let context = || {
        format!(
            "listener events:\n{}\nlistener stderr:\n{}\nupstream's agent stderr:\n{}",
            listener.events.text(),
            listener.stderr.text(),
            agent.stderr.text()
        )
    };
    let connected = listener.event("connected", |e| e["host"] == UPSTREAM_CLIENT_ID);
    let socket = PathBuf::from(connected["socket"].as_str().unwrap());

    // gRPC through the tunnel: the same daemon answers as on its own socket.
    let direct = version(daemon.socket_path()).await.unwrap();
    let tunnelled = tokio::time::timeout(WAIT, version(&socket))
        .await
        .unwrap_or_else(|_| panic!("Version through the tunnel timed out\n{}", context()))
        .unwrap_or_else(|e| panic!("Version through the tunnel: {e:#}\n{}", context()));
    assert_eq!(tunnelled, direct);

    // Upstream's agent carries one connection per dial and dials again
    // after each close: every CLI run below is a new connection.
    for round in 0..2 {
        let out = Command::new(bin_path("trident"))
            .arg("--socket")
            .arg(&socket)
            .args(["get", "status"])
            .env_remove("TRIDENT_SOCKET")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("servicingState: not-provisioned"),
            "round {round}: {stdout}{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            context()
        );
    }
}

/// Upstream's agent with a certificate made as upstream makes its own
/// (self-signed, `CA:TRUE`, `CN=localhost`), but not the one in our
/// `--ca`, as another build of upstream's would embed: our listener
/// refuses it (Go's words, an unknown issuer), every time it dials, and
/// no host appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_go_agent_with_a_certificate_not_in_our_ca_is_refused() {
    let Some(upstream) = UpstreamRcp::from_env("upstream's rcp-agent, foreign certificate") else {
        return;
    };
    let daemon = host_daemon().await;
    let dir = tempfile::tempdir().unwrap();
    let server = upstream.listener_files();
    let hosts = dir.path().join("hosts");
    let listener = ListenerProc::start_with(&server, &hosts, &UPSTREAM);
    let (cert, key) = self_signed(&LeafSpec {
        common_name: Some(UPSTREAM_CLIENT_ID.into()),
        ..LeafSpec::default()
    })
    .unwrap();
    let config = dir.path().join("rcp-agent.yaml");
    let yaml = upstream.agent_config_with(
        listener.addr,
        daemon.socket_path(),
        cert.as_bytes(),
        key.as_bytes(),
    );
    std::fs::write(&config, yaml).unwrap();
    let agent = GoProc::start(
        &upstream.bin("rcp-agent"),
        &[OsStr::new("--config"), config.as_os_str()],
    );
    let unknown_issuer =
        |e: &serde_json::Value| e["reason"].as_str().unwrap().contains("UnknownIssuer");
    let refused = listener.event("refused", unknown_issuer);
    assert!(
        refused["addr"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{refused}"
    );
    listener
        .stderr
        .wait_for("listener log of the refusal", |l| {
            l.contains("refused") && l.contains("UnknownIssuer")
        });
    // Go's TLS 1.3 client learns of it from our alert, and dials again.
    agent
        .stderr
        .wait_for("upstream's agent told of the refusal", |l| {
            l.contains("unknown certificate authority")
        });
    listener.nth_event("refused", 1, unknown_issuer);

    let connected = listener
        .all_events()
        .into_iter()
        .any(|e| e["event"] == "connected");
    assert!(!connected, "{}", listener.events.text());
    let sockets: Vec<_> = std::fs::read_dir(&hosts)
        .map(|dir| dir.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(sockets.is_empty(), "sockets appeared: {sockets:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_agent_tunnels_grpc_calls_to_tridentd_through_upstreams_go_listener() {
    let Some(upstream) = UpstreamRcp::from_env("trident-rcp -> upstream's ListenAndAccept") else {
        return;
    };
    let daemon = host_daemon().await;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("tunnel.sock");
    let go_listener = GoProc::start(
        &upstream.bin("rcp-listen"),
        &[OsStr::new("--socket"), socket.as_os_str()],
    );
    let line = go_listener
        .stdout
        .wait_for("`listening PORT` from upstream's listener", |l| {
            l.starts_with("listening ")
        });
    let port: u16 = line["listening ".len()..].parse().unwrap();

    // Our agent presents upstream's client certificate and trusts its
    // server certificate, as upstream's own agent does.
    let client = TlsFiles {
        ca: upstream.cert("server.crt"),
        cert: upstream.cert("client.crt"),
        key: upstream.cert("client.key"),
    };
    let agent = AgentProc::start_with_args(
        SocketAddr::from(([127, 0, 0, 1], port)),
        UPSTREAM_SERVER_NAME,
        &client,
        daemon.socket_path(),
        &dir.path().join("agent.state.json"),
        &UPSTREAM,
    );
    let context = || {
        format!(
            "upstream's listener stderr:\n{}\nour agent stderr:\n{}",
            go_listener.stderr.text(),
            agent.stderr.text()
        )
    };

    // As netlaunch: one connection, one gRPC client with several calls.
    let calls = async {
        let channel = uds_channel(&socket).await?;
        let tunnelled = VersionServiceClient::new(channel.clone())
            .version(VersionRequest {})
            .await?
            .into_inner();
        let status = HostStatusServiceClient::new(channel)
            .get_host_status(GetHostStatusRequest {})
            .await?
            .into_inner()
            .host_status;
        anyhow::Ok((tunnelled, status))
    };
    let (tunnelled, status) = tokio::time::timeout(WAIT, calls)
        .await
        .unwrap_or_else(|_| panic!("gRPC through upstream's listener timed out\n{}", context()))
        .unwrap_or_else(|e| panic!("gRPC through upstream's listener: {e:#}\n{}", context()));
    assert_eq!(tunnelled, version(daemon.socket_path()).await.unwrap());
    assert!(
        status.contains("servicingState: not-provisioned"),
        "{status}\n{}",
        context()
    );
    // It was upstream's listener that carried them.
    go_listener
        .stderr
        .wait_for("upstream's listener accepting our agent", |l| {
            l.contains("Accepted RCP connection from 127.0.0.1:")
        });
}

/// Standard base64 with padding (Go's `base64.StdEncoding`), for the
/// agent's `rcpClientTls`.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let bytes = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn base64_matches_the_standard_encoding() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foob"), "Zm9vYg==");
    assert_eq!(base64(b"\xff\xfe\xfd\xfc"), "//79/A==");
}
