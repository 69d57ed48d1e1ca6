//! Bad input over the daemon's socket, against a real tridentd: garbage
//! bytes, a half-open HTTP/2 connection, 500 idle connections, Host
//! Configurations of many megabytes and deeply nested YAML sent straight
//! to ValidateHostConfiguration and Install (no CLI in between). Each is
//! refused with a clear error, and the daemon keeps serving other clients
//! while (and after) it happens.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::io::Read;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use trident_e2e::servicing_support::{Clients, Fixture, hc};
use trident_e2e::upstream_sample::host_config_fixture;
use trident_e2e::{Daemon, daemon};
use trident_proto::v1::{self, TridentErrorKind};
use trident_proto::v1preview::{
    self, ValidateHostConfigurationRequest, validation_service_client::ValidationServiceClient,
};

/// The HTTP/2 client connection preface.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// HTTP/2 frame type of GOAWAY.
const GOAWAY: u8 = 0x7;
/// Generous bound for anything the daemon must do on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// Another client works: Version and a small validation both answer.
async fn still_serving(daemon: &Daemon) {
    let version = tokio::time::timeout(PATIENCE, trident_e2e::version(daemon.socket_path()))
        .await
        .expect("Version answers in time")
        .unwrap();
    assert!(!version.version.is_empty());
    let mut validation = ValidationServiceClient::new(daemon.channel().await.unwrap());
    let reply = validation
        .validate_host_configuration(ValidateHostConfigurationRequest {
            config: Some(hc("storage:\n  disks: []\n")),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(reply.ok || reply.error.is_some(), "{reply:?}");
}

/// Reads what the daemon sends until it closes the connection.
async fn read_until_closed(stream: &mut UnixStream) -> Vec<u8> {
    let mut got = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut got))
        .await
        .expect("the daemon closes a connection that sent garbage")
        .ok();
    got
}

/// The error code of the first GOAWAY frame in `bytes`, if any.
fn goaway_code(mut bytes: &[u8]) -> Option<u32> {
    while bytes.len() >= 9 {
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        let kind = bytes[3];
        let payload = bytes.get(9..9 + len)?;
        if kind == GOAWAY && payload.len() >= 8 {
            return Some(u32::from_be_bytes(payload[4..8].try_into().unwrap()));
        }
        bytes = &bytes[9 + len..];
    }
    None
}

/// Deterministic junk (xorshift), so a failure replays.
fn junk(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_bytes_are_refused_and_the_daemon_keeps_serving() {
    let d = daemon().await;
    for seed in 1..=5u64 {
        // Not HTTP/2 at all: the connection is closed.
        let mut raw = UnixStream::connect(d.socket_path()).await.unwrap();
        let _ = raw.write_all(&junk(64 << 10, seed)).await;
        read_until_closed(&mut raw).await;

        // A valid preface, then junk frames: HTTP/2's own structured error,
        // a GOAWAY with a non-zero error code.
        let mut raw = UnixStream::connect(d.socket_path()).await.unwrap();
        let mut bytes = PREFACE.to_vec();
        bytes.extend_from_slice(&junk(4 << 10, seed));
        let _ = raw.write_all(&bytes).await;
        let reply = read_until_closed(&mut raw).await;
        let code = goaway_code(&reply).expect("a GOAWAY frame before the close");
        assert_ne!(code, 0, "GOAWAY with NO_ERROR after garbage frames");

        still_serving(&d).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_half_open_http2_connection_does_not_block_other_clients() {
    let d = daemon().await;
    // Preface only, then silence, held open for the whole test.
    let mut half_open = UnixStream::connect(d.socket_path()).await.unwrap();
    half_open.write_all(PREFACE).await.unwrap();
    // A connection that sent nothing at all.
    let _silent = UnixStream::connect(d.socket_path()).await.unwrap();
    for _ in 0..3 {
        still_serving(&d).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn five_hundred_idle_connections_do_not_starve_a_working_client() {
    const IDLE: usize = 500;
    let d = daemon().await;
    let mut held = Vec::with_capacity(IDLE);
    for i in 0..IDLE {
        let mut conn = UnixStream::connect(d.socket_path()).await.unwrap();
        // Half of them get as far as the HTTP/2 preface.
        if i % 2 == 0 {
            conn.write_all(PREFACE).await.unwrap();
        }
        held.push(conn);
    }
    // A client works through all of it: unary calls and a servicing-style
    // validation of a real configuration.
    for _ in 0..5 {
        still_serving(&d).await;
    }
    assert_eq!(held.len(), IDLE);
    drop(held);
    still_serving(&d).await;
}

/// A Host Configuration of about `mib` MiB: `scripts` entries, each with a
/// 100-byte body, plus `tail` at the top level.
fn huge_config(mib: usize, tail: &str) -> String {
    let body = "x".repeat(100);
    let mut text = String::with_capacity((mib << 20) + 256);
    text.push_str("scripts:\n  postConfigure:\n");
    let mut i = 0;
    while text.len() < mib << 20 {
        text.push_str(&format!(
            "  - name: s{i}\n    runOn: [clean-install]\n    content: \"echo {body}\"\n"
        ));
        i += 1;
    }
    text.push_str(tail);
    text
}

/// Flow sequences nested `depth` deep under a real key.
fn nested_flow(depth: usize) -> String {
    format!(
        "storage:\n  disks: {}{}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

/// Block mappings nested `depth` deep.
fn nested_block(depth: usize) -> String {
    let mut text = String::from("storage:\n");
    for level in 1..=depth {
        text.push_str(&" ".repeat(level));
        text.push_str("a:\n");
    }
    text
}

fn assert_structured(err: &v1::TridentError, kind: TridentErrorKind, what: &str) {
    assert_eq!(err.kind(), kind, "{what}: {err:?}");
    assert!(!err.subkind.is_empty(), "{what}: no subkind: {err:?}");
    assert!(!err.message.is_empty(), "{what}: no message: {err:?}");
    let location = err
        .location
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: no location"));
    assert!(
        !location.path.is_empty() && location.line > 0,
        "{what}: {location:?}"
    );
}

async fn validate(d: &Daemon, text: String) -> v1preview::ValidateHostConfigurationResponse {
    let mut validation = ValidationServiceClient::new(d.channel().await.unwrap());
    tokio::time::timeout(
        PATIENCE,
        validation.validate_host_configuration(ValidateHostConfigurationRequest {
            config: Some(hc(&text)),
        }),
    )
    .await
    .expect("the validation answers in time")
    .unwrap()
    .into_inner()
}

#[tokio::test(flavor = "multi_thread")]
async fn host_configurations_of_many_megabytes_and_deep_nesting_get_structured_errors() {
    let d = daemon().await;
    let cases = [
        (
            "3 MiB, unknown key at its end",
            huge_config(3, "bogusKey: 1\n"),
        ),
        ("flow sequences 100000 deep", nested_flow(100_000)),
        ("block mappings 1500 deep", nested_block(1500)),
    ];
    for (what, text) in cases {
        let reply = validate(&d, text).await;
        assert!(!reply.ok, "{what}: accepted");
        let err = reply.error.unwrap_or_else(|| panic!("{what}: no error"));
        assert_structured(&err, TridentErrorKind::InvalidInputError, what);
        still_serving(&d).await;
    }
    // Many megabytes that are a well-formed configuration parse as one.
    let basic = host_config_fixture("basic");
    let reply = validate(&d, format!("{basic}\n{}", huge_config(3, ""))).await;
    assert!(reply.ok, "{:?}", reply.error);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_over_the_message_limit_is_refused_and_the_daemon_keeps_serving() {
    let d = daemon().await;
    let mut validation = ValidationServiceClient::new(d.channel().await.unwrap());
    let status = validation
        .validate_host_configuration(ValidateHostConfigurationRequest {
            config: Some(hc(&huge_config(6, ""))),
        })
        .await
        .expect_err("a 6 MiB request is over the daemon's message limit");
    // The exact code is the error mapping's business; the request is
    // refused, not served.
    assert_ne!(status.code(), tonic::Code::Ok);
    still_serving(&d).await;
}

/// SHA-384 of the whole target disk-image file.
fn disk_digest(fx: &Fixture) -> Vec<u8> {
    use sha2::Digest;
    let mut file = std::fs::File::open(&fx.disk).unwrap();
    let mut hasher = sha2::Sha384::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    hasher.finalize().to_vec()
}

#[tokio::test(flavor = "multi_thread")]
async fn install_refuses_bad_configurations_before_writing_the_target() {
    let fx = Fixture::new();
    let image = fx.image("v1", 41, None);
    let before = disk_digest(&fx);
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let good = fx.config(&image, "");
    let cases = [
        (
            "3 MiB, unknown key at its end",
            format!("{good}{}", huge_config(3, "bogusKey: 1\n")),
        ),
        (
            "flow sequences 100000 deep",
            format!(
                "{good}{}",
                nested_flow(100_000).replace("storage:\n  disks:", "bogus:")
            ),
        ),
        ("block mappings 1500 deep", nested_block(1500)),
    ];
    for (what, text) in cases {
        let done = tokio::time::timeout(PATIENCE, c.install(&text))
            .await
            .expect("Install completes in time");
        assert!(!done.succeeded(), "{what}: Install succeeded");
        assert_structured(done.error(), TridentErrorKind::InvalidInputError, what);
        assert_eq!(disk_digest(&fx), before, "{what}: the target was written");
        still_serving(&d).await;
    }
    // The daemon still installs a good configuration afterwards.
    c.install(&good).await.assert_success();
}
