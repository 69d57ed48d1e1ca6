//! Adaptive A/B updates (issue 38, part 2) through the real tridentd on a
//! disk-image file: v1 installed and committed, then an update to v2
//! (one 1 MiB chunk of the root changed), both indexed by the real
//! `mkcosi index` and v2 served by `trident_e2e::faulty_http`, which logs
//! every request and counts the bytes it sends. The update fetches the
//! changed chunk and copies the rest from the active volume (staged again
//! with v3, keeps all but one chunk in place); a range request that drops
//! is asked again (a warning); a server without ranges gets the whole
//! image and a warning; a chunk that is not
//! its hash, or an index that is not the one the metadata pins, fails
//! structured with nothing switched.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::ffi::OsStr;
use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use trident_cosi::gpt::Gpt;
use trident_cosi::writer::{self, ImagesSpec};
use trident_e2e::faulty_http::{Faults, FaultyServer};
use trident_e2e::fixture::AbHostConfig;
use trident_e2e::servicing_support::{Clients, Collected, TARGET_DISK_BYTES};
use trident_e2e::{bin_path, daemon};
use trident_proto::v1preview::{AbVolumeState, ServicingState};

const ESP_BYTES: usize = 1 << 20;
const ROOT_BYTES: usize = 24 << 20;
const CHUNK: usize = 1 << 20;
/// Chunk 9 of the root is the one v2 changes (100 KiB of it).
const CHANGED_CHUNK: usize = 9;
const ROOT_UUID: &str = "5d2a8a55-1c1e-4c47-9a53-5a0d6b0d3801";

/// An indexed COSI and the metadata SHA-384 `mkcosi index` printed.
#[derive(Debug)]
struct Image {
    path: PathBuf,
    sha384: String,
}

struct Setup {
    dir: tempfile::TempDir,
    esp: Vec<u8>,
    v1: Image,
    v2: Image,
    root_v2: Vec<u8>,
    disk: PathBuf,
}

/// `root` with 100 KiB of other bytes (from `seed`) inside chunk `chunk`.
fn changed(root: &[u8], chunk: usize, seed: u64) -> Vec<u8> {
    let mut out = root.to_vec();
    let at = chunk * CHUNK + 4096;
    out[at..at + (100 << 10)].copy_from_slice(&content(seed, 2, 100 << 10));
    out
}

fn content(seed: u64, number: u32, len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    writer::fill_content(seed, number, 0, &mut bytes);
    bytes
}

/// Runs the real `mkcosi` with `args`; its JSON summary (it must succeed).
fn mkcosi(args: &[&OsStr]) -> serde_json::Value {
    let run = Command::new(bin_path("mkcosi"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "mkcosi {args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap()
}

/// A plain COSI of the ESP `esp` and the root `root`, then indexed by the
/// real `mkcosi index` (1 MiB chunks, its default).
fn image(dir: &Path, name: &str, esp: &[u8], root: &[u8]) -> Image {
    let esp_path = dir.join(format!("{name}-esp.img"));
    let root_path = dir.join(format!("{name}-root.img"));
    fs::write(&esp_path, esp).unwrap();
    fs::write(&root_path, root).unwrap();
    let os_release = format!("ID=azurelinux\nVERSION_ID=\"3.0\"\nBUILD_ID={name}\n");
    let spec = ImagesSpec::esp_and_root(esp_path, root_path, ROOT_UUID, &os_release);
    let plain = dir.join(format!("{name}-plain.cosi"));
    writer::pack_images(&spec, &plain).unwrap();
    let path = dir.join(format!("{name}.cosi"));
    let summary = mkcosi(&[
        "index".as_ref(),
        plain.as_ref(),
        "--out".as_ref(),
        path.as_ref(),
    ]);
    assert_eq!(summary["chunk_size"], CHUNK as u64);
    Image {
        path,
        sha384: summary["metadata_sha384"].as_str().unwrap().to_owned(),
    }
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let esp = content(3801, 1, ESP_BYTES);
        let root_v1 = content(3801, 2, ROOT_BYTES);
        let root_v2 = changed(&root_v1, CHANGED_CHUNK, 3802);
        let v1 = image(dir.path(), "v1", &esp, &root_v1);
        let v2 = image(dir.path(), "v2", &esp, &root_v2);
        let disk = dir.path().join("disk.img");
        File::create(&disk)
            .unwrap()
            .set_len(TARGET_DISK_BYTES)
            .unwrap();
        Setup {
            dir,
            esp,
            v1,
            v2,
            root_v2,
            disk,
        }
    }

    fn config(&self, url: &str, sha384: &str) -> String {
        AbHostConfig::new(url, &self.disk).sha384(sha384).yaml()
    }

    /// The first `len` bytes of partition `name` of the disk.
    fn partition(&self, name: &str, len: usize) -> Vec<u8> {
        let file = File::open(&self.disk).unwrap();
        let mut head = vec![0u8; 34 * 512];
        file.read_exact_at(&mut head, 0).unwrap();
        let gpt = Gpt::parse_primary(&head, 512).unwrap();
        let entry = gpt.partitions().iter().find(|e| e.name == name).unwrap();
        let mut bytes = vec![0u8; len];
        file.read_exact_at(&mut bytes, entry.start_offset(512))
            .unwrap();
        bytes
    }

    /// v1 installed from its file and committed: provisioned on volume A.
    async fn provisioned(&self, c: &mut Clients) {
        let url = format!("file://{}", self.v1.path.display());
        c.provision(&self.config(&url, &self.v1.sha384)).await;
        assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    }
}

fn cosi_len(image: &Image) -> u64 {
    fs::metadata(&image.path).unwrap().len()
}

/// The largest value phase `id` reported.
fn phase_max(run: &Collected, id: &str) -> u64 {
    run.progress
        .iter()
        .filter(|p| p.phase_id == id)
        .map(|p| p.current)
        .max()
        .unwrap_or_else(|| panic!("no phase {id} in {:?}", run.phases()))
}

fn logged(run: &Collected, part: &str) -> bool {
    run.logs.iter().any(|l| l.message.contains(part))
}

#[tokio::test(flavor = "multi_thread")]
async fn one_changed_chunk_is_fetched_the_rest_copied_from_the_active_volume_or_kept_in_place() {
    let s = Setup::new();
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    s.provisioned(&mut c).await;

    let server = FaultyServer::start(&s.v2.path, Faults::default());
    let stage = c.update_stage(&s.config(&server.url(), &s.v2.sha384)).await;
    stage.assert_success();
    assert_eq!(c.state().await, ServicingState::UpdateAbStaged);
    assert_eq!(
        s.partition("root-b", ROOT_BYTES),
        s.root_v2,
        "volume B is v2"
    );

    // Progress: the chunk fetched, the rest reused.
    assert_eq!(phase_max(&stage, "download/fetched"), CHUNK as u64);
    assert_eq!(
        phase_max(&stage, "download/reused"),
        (ROOT_BYTES - CHUNK) as u64
    );
    assert_eq!(phase_max(&stage, "write/root-b"), ROOT_BYTES as u64);
    assert!(logged(&stage, "adaptive update:"), "{:#?}", stage.logs);

    // The server's own count: every request a bounded range, and a small
    // fraction of the image (its head twice: preflight and write; one frame).
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.status == 206 && r.range_to.is_some()),
        "{requests:?}"
    );
    let served = server.bytes_served();
    let len = cosi_len(&s.v2);
    let ratio = served as f64 / len as f64;
    eprintln!(
        "adaptive update, one chunk changed: served {served} bytes of a {len}-byte COSI \
         ({ratio:.4}) in {} requests",
        requests.len()
    );
    assert!(ratio < 0.10, "served {served} of {len}: {requests:?}");

    // Staged again, v3 (v2 with chunk 15 changed too) onto the v2 now in
    // volume B: all but that chunk are already in place there.
    let root_v3 = changed(&s.root_v2, 15, 3803);
    let v3 = image(s.dir.path(), "v3", &s.esp, &root_v3);
    let server = FaultyServer::start(&v3.path, Faults::default());
    let again = c.update_stage(&s.config(&server.url(), &v3.sha384)).await;
    again.assert_success();
    assert_eq!(s.partition("root-b", ROOT_BYTES), root_v3, "volume B is v3");
    assert_eq!(phase_max(&again, "download/fetched"), CHUNK as u64);
    assert_eq!(
        phase_max(&again, "download/reused"),
        (ROOT_BYTES - CHUNK) as u64
    );
    let in_place = format!("partition-2: {} bytes in place", ROOT_BYTES - CHUNK);
    assert!(logged(&again, &in_place), "{:#?}", again.logs);
    let copied = format!("{} copied from local volumes", ROOT_BYTES - CHUNK);
    assert!(logged(&stage, &copied), "{:#?}", stage.logs);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_ignores_ranges_gets_the_whole_image_and_a_warning() {
    let s = Setup::new();
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    s.provisioned(&mut c).await;

    let server = FaultyServer::start(&s.v2.path, Faults::default().ignore_range());
    let stage = c.update_stage(&s.config(&server.url(), &s.v2.sha384)).await;
    stage.assert_success();
    assert!(
        logged(&stage, "does not serve byte ranges"),
        "{:#?}",
        stage.logs
    );
    assert!(!stage.phases().iter().any(|p| p == "download/fetched"));
    assert_eq!(
        s.partition("root-b", ROOT_BYTES),
        s.root_v2,
        "volume B is v2"
    );
    assert!(server.bytes_served() >= cosi_len(&s.v2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chunk_that_is_not_its_hash_fails_naming_region_and_chunk_and_nothing_is_switched() {
    let s = Setup::new();
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    s.provisioned(&mut c).await;

    // A consistent image (the metadata pins the edited index) whose index
    // lies about the changed chunk of the root (region 2, partition-2).
    let lying = s.dir.path().join("lying.cosi");
    let sha384 = writer::edit_chunk_index(
        &s.v2.path,
        &lying,
        |index| {
            let hash = &mut index.regions[2].chunks[CHANGED_CHUNK].sha256;
            let first = if hash.starts_with('0') { "1" } else { "0" };
            hash.replace_range(0..1, first);
        },
        true,
    )
    .unwrap();
    let server = FaultyServer::start(&lying, Faults::default());
    let stage = c.update_stage(&s.config(&server.url(), &sha384)).await;
    assert!(!stage.succeeded());
    let error = stage.error();
    assert_eq!(error.subkind, "image-hash-mismatch", "{error:?}");
    assert!(error.message.contains("chunk-hash-mismatch"), "{error:?}");
    assert!(error.message.contains("partition-2"), "{error:?}");
    assert!(
        error.message.contains(&format!("chunk {CHANGED_CHUNK} ")),
        "{error:?}"
    );
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_index_that_is_not_the_one_the_metadata_pins_is_refused_before_anything_is_written() {
    let s = Setup::new();
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    s.provisioned(&mut c).await;
    let before = s.partition("root-b", ROOT_BYTES);

    // The index edited, the metadata's pin (and so its hash) kept.
    let tampered = s.dir.path().join("tampered.cosi");
    writer::edit_chunk_index(
        &s.v2.path,
        &tampered,
        |index| {
            let hash = &mut index.regions[2].chunks[0].sha256;
            let first = if hash.starts_with('0') { "1" } else { "0" };
            hash.replace_range(0..1, first);
        },
        false,
    )
    .unwrap();
    let server = FaultyServer::start(&tampered, Faults::default());
    let stage = c.update_stage(&s.config(&server.url(), &s.v2.sha384)).await;
    assert!(!stage.succeeded());
    let error = stage.error();
    assert_eq!(error.subkind, "image-hash-mismatch", "{error:?}");
    assert!(
        error.message.contains("chunk-index-hash-mismatch"),
        "{error:?}"
    );
    assert_eq!(
        s.partition("root-b", ROOT_BYTES),
        before,
        "volume B untouched"
    );
    assert_eq!(c.state().await, ServicingState::Provisioned);
}

#[test]
fn mkcosi_writes_an_indexed_fixture_that_reads_as_the_plain_one() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = |args: &[&str], out: &Path| {
        let mut all: Vec<&OsStr> = ["--size", "12MiB", "--esp-size", "2MiB", "--seed", "38"]
            .iter()
            .chain(args)
            .map(OsStr::new)
            .collect();
        all.extend([OsStr::new("--out"), out.as_os_str()]);
        mkcosi(&all)
    };
    let plain = dir.path().join("plain.cosi");
    let indexed = dir.path().join("indexed.cosi");
    fixture(&[], &plain);
    let summary = fixture(&["--chunk-size", "256KiB"], &indexed);
    let open = |path: &Path| {
        trident_cosi::CosiSource::open(
            &format!("file://{}", path.display()),
            &trident_cosi::ExpectedHash::Ignored,
            &trident_cosi::SourceOptions::default(),
        )
        .unwrap()
    };
    let source = open(&indexed);
    assert_eq!(
        source.metadata_sha384(),
        summary["metadata_sha384"].as_str().unwrap()
    );
    assert_eq!(source.chunk_index().unwrap().chunk_size, 256 << 10);
    assert!(!dir.path().join("indexed.cosi.unindexed").exists());
    // The same regions, byte for byte, as the plain fixture.
    let regions = |path: &Path| {
        let mut source = open(path);
        let mut all = Vec::new();
        while let Some(mut region) = source.next_region().unwrap() {
            std::io::Read::read_to_end(&mut region, &mut all).unwrap();
        }
        all
    };
    assert!(regions(&indexed) == regions(&plain));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_range_request_that_drops_is_asked_again_and_the_retry_is_a_warning() {
    let s = Setup::new();
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    s.provisioned(&mut c).await;

    // Where the changed chunk's frame sits in v2: the connection drops
    // half way through it, once.
    let source = trident_cosi::CosiSource::open(
        &format!("file://{}", s.v2.path.display()),
        &trident_cosi::ExpectedHash::Ignored,
        &trident_cosi::SourceOptions::default(),
    )
    .unwrap();
    let index = source.chunk_index().unwrap();
    let region = &index.regions[2];
    let frame = &region.chunks[CHANGED_CHUNK];
    let at = source.region_data_offset(&region.path).unwrap() + frame.offset + frame.size / 2;
    let server = FaultyServer::start(&s.v2.path, Faults::default().drop_at(at));
    let stage = c.update_stage(&s.config(&server.url(), &s.v2.sha384)).await;
    stage.assert_success();
    assert_eq!(
        s.partition("root-b", ROOT_BYTES),
        s.root_v2,
        "volume B is v2"
    );
    let requests = server.requests();
    let frame_start = at - frame.size / 2;
    let asked: Vec<&trident_e2e::faulty_http::Request> = requests
        .iter()
        .filter(|r| r.range_from == Some(frame_start))
        .collect();
    assert_eq!(asked.len(), 2, "the frame asked for twice: {requests:?}");
    assert!(
        asked
            .iter()
            .all(|r| r.if_range.as_deref() == Some("\"image-1\"")),
        "{requests:?}"
    );
    assert!(logged(&stage, "broke at byte"), "{:#?}", stage.logs);
}
