//! StreamDisk over gRPC against a real tridentd writing disk-image files.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use trident_cosi::writer::{Corruption, FixtureOutput};
use trident_e2e::Daemon;
use trident_e2e::fixture::CosiImage;
use trident_proto::v1::{
    Completed, PhaseState, StatusCode, StreamDiskRequest, TridentErrorKind, servicing_response,
    streaming_service_client::StreamingServiceClient,
};

const DISK: u64 = 12 << 20;
const FILL: u8 = 0xEE;

struct Setup {
    dir: tempfile::TempDir,
    cosi: FixtureOutput,
    expected: PathBuf,
}

fn setup(corruption: Option<Corruption>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let expected = dir.path().join("expected.img");
    let image = CosiImage::new(DISK, 7)
        .esp_bytes(2 << 20)
        .corruption(corruption);
    image.write_disk_image(&expected);
    let cosi = image.write(&dir.path().join("image.cosi"));
    Setup {
        dir,
        cosi,
        expected,
    }
}

fn disk_file(dir: &Path, name: &str, size: u64) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, vec![FILL; size as usize]).unwrap();
    p
}

fn untouched(p: &Path) -> bool {
    fs::read(p).unwrap().iter().all(|&b| b == FILL)
}

/// Final state of each progress phase, and the Completed message.
#[derive(Debug)]
struct Outcome {
    completed: Completed,
    phases: BTreeMap<String, (u64, Option<u64>, PhaseState)>,
}

async fn stream_disk(disks: &[&Path], url: String, hash: Option<String>) -> Outcome {
    let mut builder = Daemon::builder().args(["--inactivity-timeout", "0"]);
    for d in disks {
        builder = builder.arg("--disk").arg(d);
    }
    let daemon = builder.spawn().await.unwrap();
    let mut client = StreamingServiceClient::new(daemon.channel().await.unwrap());
    let request = StreamDiskRequest {
        image_url: url,
        image_hash: hash,
        reboot: None,
        ..Default::default()
    };
    let mut stream = client.stream_disk(request).await.unwrap().into_inner();
    let mut phases = BTreeMap::new();
    let mut completed = None;
    while let Some(item) = stream.next().await {
        match item.unwrap().response {
            Some(servicing_response::Response::Progress(p)) => {
                let state = p.state();
                phases.insert(p.phase_id, (p.current, p.total, state));
            }
            Some(servicing_response::Response::Completed(c)) => completed = Some(c),
            _ => {}
        }
    }
    Outcome {
        completed: completed.expect("stream ended without Completed"),
        phases,
    }
}

fn url(p: &Path) -> String {
    format!("file://{}", p.display())
}

fn assert_regions_equal(s: &Setup, target: &Path) {
    let got = fs::read(target).unwrap();
    let expected = fs::read(&s.expected).unwrap();
    for r in &s.cosi.regions {
        let range = r.offset as usize..(r.offset + r.uncompressed_size) as usize;
        assert!(got[range.clone()] == expected[range], "{} differs", r.path);
    }
    // Backup GPT: the last 33 LBAs.
    let tail = expected.len() - 33 * 512;
    assert!(got[tail..] == expected[tail..], "backup GPT differs");
}

fn assert_failed(o: &Outcome, kind: TridentErrorKind, subkind: &str) {
    assert_eq!(
        o.completed.status(),
        StatusCode::Failure,
        "{:?}",
        o.completed
    );
    let err = o.completed.error.as_ref().unwrap();
    assert_eq!(err.kind(), kind, "{err:?}");
    assert_eq!(err.subkind, subkind, "{err:?}");
    assert_located_in_this_repository(err);
}

/// Every location of the error (its own and each context's) names a source
/// file of this repository, never the standard library (`/rustc/...`) or a
/// dependency: a `#[track_caller]` helper passed by name to `map_err` would
/// locate the error inside `core`.
fn assert_located_in_this_repository(err: &trident_proto::v1::TridentError) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let locations = std::iter::once(err.location.as_ref())
        .chain(err.context.iter().map(|c| c.location.as_ref()));
    for location in locations {
        let path = &location
            .expect("every error and context has a location")
            .path;
        assert!(
            Path::new(path).is_relative() && repo.join(path).is_file(),
            "location {path} is not a file of this repository: {err:?}"
        );
    }
}

#[tokio::test]
async fn stream_disk_writes_every_region_to_the_smallest_disk_that_fits() {
    let s = setup(None);
    let small = disk_file(s.dir.path(), "small.img", DISK - (1 << 20));
    let fits = disk_file(s.dir.path(), "fits.img", DISK);
    let big = disk_file(s.dir.path(), "big.img", DISK + (16 << 20));
    let o = stream_disk(
        &[&big, &small, &fits],
        url(&s.cosi.path),
        Some(s.cosi.metadata_sha384.clone()),
    )
    .await;
    assert_eq!(
        o.completed.status(),
        StatusCode::Success,
        "{:?}",
        o.completed
    );
    assert_eq!(
        o.completed.image_hash.as_deref(),
        Some(format!("sha384:{}", s.cosi.metadata_sha384).as_str())
    );
    assert_regions_equal(&s, &fits);
    assert!(untouched(&small) && untouched(&big));

    let total: u64 = s.cosi.regions.iter().map(|r| r.uncompressed_size).sum();
    assert_eq!(o.phases["download"], (total, Some(total), PhaseState::Done));
    for r in &s.cosi.regions {
        let id = match r.number {
            None => "write/primary-gpt".to_owned(),
            Some(n) => format!("write/partition-{n}"),
        };
        let size = r.uncompressed_size;
        assert_eq!(o.phases[&id], (size, Some(size), PhaseState::Done), "{id}");
    }
    assert_eq!(o.phases["validate"].2, PhaseState::Done);
    assert_eq!(o.phases["verify"].2, PhaseState::Done);
}

#[tokio::test]
async fn wrong_metadata_hash_fails_as_invalid_input_and_leaves_the_disk_unchanged() {
    let s = setup(None);
    let target = disk_file(s.dir.path(), "t.img", DISK);
    let o = stream_disk(&[&target], url(&s.cosi.path), Some("ab".repeat(48))).await;
    assert_failed(
        &o,
        TridentErrorKind::InvalidInputError,
        "image-hash-mismatch",
    );
    assert!(untouched(&target));
}

#[tokio::test]
async fn malformed_expected_hash_is_invalid_input_located_in_the_daemon() {
    let s = setup(None);
    let target = disk_file(s.dir.path(), "t.img", DISK);
    let o = stream_disk(&[&target], url(&s.cosi.path), Some("not-hex".into())).await;
    assert_failed(
        &o,
        TridentErrorKind::InvalidInputError,
        "invalid-image-hash",
    );
    assert!(untouched(&target));
}

#[tokio::test]
async fn corrupt_region_fails_as_image_hash_mismatch() {
    let s = setup(Some(Corruption::FlipByte { region: 2 }));
    let target = disk_file(s.dir.path(), "t.img", DISK);
    let o = stream_disk(&[&target], url(&s.cosi.path), None).await;
    assert_failed(
        &o,
        TridentErrorKind::InvalidInputError,
        "image-hash-mismatch",
    );
    assert_eq!(o.phases["write/partition-2"].2, PhaseState::Failed);
}

#[tokio::test]
async fn truncated_image_fails_as_invalid_image() {
    let s = setup(Some(Corruption::Truncate { region: 1 }));
    let target = disk_file(s.dir.path(), "t.img", DISK);
    let o = stream_disk(&[&target], url(&s.cosi.path), None).await;
    assert_failed(&o, TridentErrorKind::InvalidInputError, "invalid-image");
    let msg = &o.completed.error.as_ref().unwrap().message;
    assert!(msg.contains("images/partition-1.raw.zst"), "{msg}");
}

#[tokio::test]
async fn region_larger_than_its_partition_fails_before_writing() {
    let s = setup(Some(Corruption::RegionLargerThanPartition { region: 2 }));
    let target = disk_file(s.dir.path(), "t.img", DISK);
    let o = stream_disk(&[&target], url(&s.cosi.path), None).await;
    assert_failed(
        &o,
        TridentErrorKind::InvalidInputError,
        "image-does-not-match-configuration",
    );
    assert!(untouched(&target));
}

#[tokio::test]
async fn no_candidate_disk_large_enough_is_reported_and_nothing_written() {
    let s = setup(None);
    let target = disk_file(s.dir.path(), "t.img", DISK / 2);
    let o = stream_disk(&[&target], url(&s.cosi.path), None).await;
    assert_failed(
        &o,
        TridentErrorKind::ExecutionEnvironmentMisconfigurationError,
        "target-disk-too-small",
    );
    assert!(untouched(&target));
}

#[tokio::test]
async fn unreachable_image_server_is_a_servicing_error() {
    let s = setup(None);
    let target = disk_file(s.dir.path(), "t.img", DISK);
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = stream_disk(
        &[&target],
        format!("http://127.0.0.1:{port}/image.cosi"),
        None,
    )
    .await;
    assert_failed(&o, TridentErrorKind::ServicingError, "download-image");
    assert!(untouched(&target));
}

/// `python3 -m http.server` on a free loopback port, killed on drop.
#[derive(Debug)]
struct HttpServer(std::process::Child, u16);

impl HttpServer {
    fn serve(dir: &Path) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
            ])
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "http.server did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        HttpServer(child, port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn stream_disk_from_an_http_url_writes_the_same_disk() {
    let s = setup(None);
    let server = HttpServer::serve(s.dir.path());
    let target = disk_file(s.dir.path(), "t.img", DISK);
    let o = stream_disk(
        &[&target],
        format!("http://127.0.0.1:{}/image.cosi", server.1),
        Some(format!("sha384:{}", s.cosi.metadata_sha384)),
    )
    .await;
    assert_eq!(
        o.completed.status(),
        StatusCode::Success,
        "{:?}",
        o.completed
    );
    assert_regions_equal(&s, &target);
}

/// Byte offsets in the COSI archive where a region's tar entry starts and
/// where its data ends: the region boundaries a truncated download can stop at.
fn region_boundaries(cosi: &Path) -> Vec<u64> {
    let bytes = fs::read(cosi).unwrap();
    let mut offset = 0usize;
    let mut cuts = Vec::new();
    while offset + 512 <= bytes.len() {
        let header = &bytes[offset..offset + 512];
        if header.iter().all(|&b| b == 0) {
            break;
        }
        let name = String::from_utf8_lossy(&header[..100])
            .trim_end_matches('\0')
            .to_owned();
        let size_field = String::from_utf8_lossy(&header[124..136]);
        let size = u64::from_str_radix(size_field.trim_matches(|c: char| c == '\0' || c == ' '), 8)
            .unwrap();
        let data_end = offset as u64 + 512 + size;
        if name.starts_with("images/") {
            cuts.push(offset as u64);
            cuts.push(data_end);
        }
        offset = (data_end as usize).div_ceil(512) * 512;
    }
    cuts.dedup();
    cuts
}

/// "EFI PART" at the start of LBA 1 (primary header) or of the last LBA
/// (backup header).
fn gpt_headers_present(disk: &Path) -> (bool, bool) {
    let bytes = fs::read(disk).unwrap();
    let signature = b"EFI PART";
    let primary = &bytes[512..520] == signature;
    let backup = &bytes[bytes.len() - 512..bytes.len() - 504] == signature;
    (primary, backup)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_cut_at_any_region_boundary_leaves_no_valid_partition_table() {
    let s = setup(None);
    let full = fs::read(&s.cosi.path).unwrap();
    let cuts = region_boundaries(&s.cosi.path);
    assert!(cuts.len() >= 4, "{cuts:?}");
    for (i, cut) in cuts.iter().enumerate() {
        fs::write(
            s.dir.path().join(format!("cut-{i}.cosi")),
            &full[..*cut as usize],
        )
        .unwrap();
    }
    let server = HttpServer::serve(s.dir.path());
    for (i, cut) in cuts.iter().enumerate() {
        let target = s.dir.path().join(format!("target-{i}.img"));
        fs::write(&target, vec![0u8; DISK as usize]).unwrap();
        let o = stream_disk(
            &[&target],
            format!("http://127.0.0.1:{}/cut-{i}.cosi", server.1),
            None,
        )
        .await;
        // Cut after the last region's data only the tar's end blocks are
        // missing: the image may still be complete and verified.
        let last = i + 1 == cuts.len();
        if last && o.completed.status() == StatusCode::Success {
            assert_eq!(gpt_headers_present(&target), (true, true));
            continue;
        }
        assert_eq!(
            o.completed.status(),
            StatusCode::Failure,
            "cut at {cut}: {:?}",
            o.completed
        );
        assert_eq!(
            gpt_headers_present(&target),
            (false, false),
            "cut at byte {cut} of {} left a GPT header",
            full.len()
        );
    }
    // The whole image over the same server still writes both tables.
    let target = s.dir.path().join("target-full.img");
    fs::write(&target, vec![0u8; DISK as usize]).unwrap();
    let o = stream_disk(
        &[&target],
        format!("http://127.0.0.1:{}/image.cosi", server.1),
        None,
    )
    .await;
    assert_eq!(
        o.completed.status(),
        StatusCode::Success,
        "{:?}",
        o.completed
    );
    assert_eq!(gpt_headers_present(&target), (true, true));
}
