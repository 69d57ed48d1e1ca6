//! `oci://` image sources against a real registry (Debian's
//! `docker-registry`, TLS with a throw-away CA handed to tridentd as
//! SSL_CERT_FILE): the COSI pushed as a one-layer artifact streams onto a
//! disk-image file by tag, by manifest digest and by layer digest
//! (upstream's reading of `@sha256:`); a missing tag, an unknown digest, a
//! registry that wants credentials the daemon lacks and a wrong metadata
//! hash each end in a structured error with the disk untouched; a registry
//! that stalls mid-layer ends in one within the read timeout; credentials from `--registry-auth-file` pull
//! from the registry that wanted them.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha384};
use trident_cosi::writer::FixtureOutput;
use trident_e2e::fixture::CosiImage;
use trident_e2e::oci_registry::{Pushed, Registry, StallingRelay};
use trident_e2e::trusted_stream_disk::stream_disk_trusting;
use trident_proto::v1::{Completed, StatusCode, TridentErrorKind};

const DISK: u64 = 12 << 20;
const USER: (&str, &str) = ("puller", "pull-s3cret-9f2e");

fn sha384_file(path: &Path) -> String {
    hex::encode(Sha384::digest(fs::read(path).unwrap()))
}

/// A zeroed disk-image file of the fixture's size.
fn blank_disk(path: &Path) -> &Path {
    fs::write(path, vec![0u8; DISK as usize]).unwrap();
    path
}

fn untouched(disk: &Path) -> bool {
    fs::read(disk).unwrap().iter().all(|&b| b == 0)
}

async fn stream_disk(
    ca: &Path,
    disk: &Path,
    url: &str,
    image_hash: Option<String>,
    extra: &[&str],
) -> Completed {
    stream_disk_trusting(ca, disk, url, image_hash, extra)
        .await
        .unwrap()
}

/// A registry (with `user` only, when given) holding a fixture COSI of
/// `seed` at `repository:tag`.
async fn registry_with_image(
    dir: &Path,
    seed: u64,
    user: Option<(&str, &str)>,
    repository: &str,
    tag: &str,
) -> (Registry, CosiImage, FixtureOutput, Pushed) {
    let image = CosiImage::new(DISK, seed).esp_bytes(2 << 20);
    let fixture = image.write(&dir.join("image.cosi"));
    let registry = Registry::start(dir, user).unwrap();
    let pushed = registry
        .push_cosi(&fixture.path, repository, tag, user)
        .await
        .unwrap();
    (registry, image, fixture, pushed)
}

/// Asserts a failure with `kind`/`subkind`, a message naming `mentions`,
/// and no byte written to `disk`.
fn assert_refused(
    done: &Completed,
    disk: &Path,
    kind: TridentErrorKind,
    subkind: &str,
    mentions: &str,
) {
    assert_eq!(done.status(), StatusCode::Failure, "{subkind}: {done:?}");
    let error = done.error.clone().unwrap();
    eprintln!("{subkind}: {}", error.message);
    assert_eq!(error.kind(), kind, "{error:?}");
    assert_eq!(error.subkind, subkind, "{error:?}");
    assert!(error.message.contains(mentions), "{error:?}");
    assert!(
        !error.message.contains(USER.1),
        "password in message: {error:?}"
    );
    assert!(untouched(disk), "{subkind}: disk written");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cosi_artifact_streams_by_tag_by_manifest_digest_and_by_layer_digest() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, image, fixture, pushed) =
        registry_with_image(dir.path(), 31, None, "os/azl", "3.0").await;
    let expected = dir.path().join("expected.img");
    image.write_disk_image(&expected);
    let repo = format!("oci://{}/os/azl", registry.host());
    let hash = Some(fixture.metadata_sha384.clone());

    for (name, url) in [
        ("tag", format!("{repo}:3.0")),
        (
            "manifest-digest",
            format!("{repo}@{}", pushed.manifest_digest),
        ),
        ("layer-digest", format!("{repo}@{}", pushed.layer_digest)),
    ] {
        let disk = blank_disk(&dir.path().join(format!("{name}.img"))).to_owned();
        let done = stream_disk(registry.ca_pem(), &disk, &url, hash.clone(), &[]).await;
        assert_eq!(
            done.status(),
            StatusCode::Success,
            "{name}: {:?}",
            done.error
        );
        assert_eq!(
            done.image_hash.as_deref(),
            Some(format!("sha384:{}", fixture.metadata_sha384).as_str()),
            "{name}"
        );
        assert_eq!(sha384_file(&disk), sha384_file(&expected), "{name}");
    }

    // The metadata hash is still checked on a registry image.
    let disk = blank_disk(&dir.path().join("wrong-hash.img")).to_owned();
    let wrong = Some("0".repeat(96));
    let done = stream_disk(registry.ca_pem(), &disk, &format!("{repo}:3.0"), wrong, &[]).await;
    assert_refused(
        &done,
        &disk,
        TridentErrorKind::InvalidInputError,
        "image-hash-mismatch",
        "metadata-hash-mismatch",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_tag_or_unknown_digest_is_image_not_in_registry() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, ..) = registry_with_image(dir.path(), 32, None, "os/azl", "3.0").await;
    let repo = format!("oci://{}/os/azl", registry.host());
    let unknown = format!("sha256:{}", "0123456789abcdef".repeat(4));
    for (name, url, mentions) in [
        ("missing-tag", format!("{repo}:9.9"), "9.9"),
        (
            "unknown-digest",
            format!("{repo}@{unknown}"),
            unknown.as_str(),
        ),
        (
            "unknown-repository",
            format!("oci://{}/os/nothing:3.0", registry.host()),
            "os/nothing",
        ),
    ] {
        let disk = blank_disk(&dir.path().join(format!("{name}.img"))).to_owned();
        let done = stream_disk(registry.ca_pem(), &disk, &url, None, &[]).await;
        assert_refused(
            &done,
            &disk,
            TridentErrorKind::InvalidInputError,
            "image-not-in-registry",
            mentions,
        );
    }
    // Not a reference at all: refused before any request.
    let disk = blank_disk(&dir.path().join("bad-ref.img")).to_owned();
    let done = stream_disk(registry.ca_pem(), &disk, "oci://Bad Reference", None, &[]).await;
    assert_refused(
        &done,
        &disk,
        TridentErrorKind::InvalidInputError,
        "invalid-image-url",
        "invalid-oci-reference",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_that_wants_credentials_is_pulled_from_with_the_auth_file_only() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, ..) = registry_with_image(dir.path(), 33, Some(USER), "private/os", "1").await;
    let url = format!("oci://{}/private/os:1", registry.host());

    let auth_file = dir.path().join("config.json");
    let entry = |password: &str| {
        let token = base64_encode(format!("{}:{password}", USER.0).as_bytes());
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{token}"}}}}}}"#,
            registry.host()
        )
    };
    let flag = ["--registry-auth-file", auth_file.to_str().unwrap()];
    // No credentials, then a wrong password in the auth file: refused,
    // saying so, no secret shown.
    for (name, flags) in [("anonymous", &[][..]), ("wrong-password", &flag[..])] {
        fs::write(&auth_file, entry("not-the-password")).unwrap();
        let disk = blank_disk(&dir.path().join(format!("{name}.img"))).to_owned();
        let done = stream_disk(registry.ca_pem(), &disk, &url, None, flags).await;
        assert_refused(
            &done,
            &disk,
            TridentErrorKind::ExecutionEnvironmentMisconfigurationError,
            "registry-access-denied",
            "registry-unauthorized",
        );
        assert!(!done.error.unwrap().message.contains("not-the-password"));
    }

    // The right credentials: the image streams.
    fs::write(&auth_file, entry(USER.1)).unwrap();
    let disk = blank_disk(&dir.path().join("with-auth.img")).to_owned();
    let done = stream_disk(registry.ca_pem(), &disk, &url, None, &flag).await;
    assert_eq!(done.status(), StatusCode::Success, "{:?}", done.error);
    assert!(!untouched(&disk));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_that_stalls_mid_layer_fails_within_the_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _, fixture, _) =
        registry_with_image(dir.path(), 34, None, "os/azl", "3.0").await;
    let cosi_bytes = fs::metadata(&fixture.path).unwrap().len();
    // Enough for the handshakes and the manifest, not for the layer.
    let budget = 256 << 10;
    assert!(cosi_bytes > 4 * budget, "fixture too small: {cosi_bytes}");
    let relay = StallingRelay::start(registry.port(), budget).unwrap();
    let url = format!("oci://127.0.0.1:{}/os/azl:3.0", relay.port());
    let disk = blank_disk(&dir.path().join("stalled.img")).to_owned();
    let started = Instant::now();
    // One quick retry, which meets the stall again.
    let flags = [
        "--http-connect-timeout",
        "2s",
        "--http-read-timeout",
        "2s",
        "--download-retries",
        "1",
        "--download-retry-backoff",
        "50ms",
    ];
    let done = tokio::time::timeout(
        Duration::from_secs(60),
        stream_disk(registry.ca_pem(), &disk, &url, None, &flags),
    )
    .await
    .expect("the stalled pull did not end");
    eprintln!("stalled pull ended after {:?}", started.elapsed());
    // StreamDisk writes regions as they arrive (as for http(s)://), so the
    // bytes before the stall may be on the disk: only the error is checked.
    assert_eq!(done.status(), StatusCode::Failure, "{done:?}");
    let error = done.error.unwrap();
    eprintln!("stalled: {}", error.message);
    assert_eq!(error.kind(), TridentErrorKind::ServicingError, "{error:?}");
    assert_eq!(error.subkind, "download-image", "{error:?}");
    // Failed while reading the layer (not when opening it), for the stall.
    assert!(error.message.contains("read-image"), "{error:?}");
    let causes = error.causes.join(" / ").to_lowercase();
    assert!(
        causes.contains("timed out") || causes.contains("timeout"),
        "{causes}"
    );
}

/// Standard base64 (the Docker config's `auth` field), written here to keep
/// the test crate free of a dependency for four lines.
fn base64_encode(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
