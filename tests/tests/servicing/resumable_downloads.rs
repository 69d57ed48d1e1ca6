//! Image downloads that survive the network (issue 38, part 1): a real
//! tridentd streams a COSI onto a disk-image file from a faulty HTTP
//! server (`trident_e2e::faulty_http`) that drops the connection once or
//! at five random offsets, ignores `Range`, or replaces the file between
//! requests, and from the real registry behind a relay that drops the
//! connection once. A drop costs no more than the bytes it lost (the
//! server's counters: at most 1.1 × the file); a server without ranges
//! gets a bounded re-read or a structured error; a changed file is never
//! mixed; every retry is a warning in `trident logs` and `trident watch`.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use trident_cosi::writer::FixtureOutput;
use trident_e2e::faulty_http::{Faults, FaultyServer};
use trident_e2e::fixture::CosiImage;
use trident_e2e::oci_registry::{DroppingRelay, Registry};
use trident_e2e::trusted_stream_disk::stream_disk_trusting;
use trident_e2e::{Daemon, list_operations, trident_cli_ok};
use trident_proto::v1::{
    Completed, StatusCode, StreamDiskRequest, TridentErrorKind, servicing_response,
    streaming_service_client::StreamingServiceClient,
};

const DISK: u64 = 12 << 20;
const FILL: u8 = 0xEE;

/// Quick retries, so a test waits milliseconds, not the defaults' seconds.
const FAST_RETRIES: [&str; 6] = [
    "--download-retry-backoff",
    "20ms",
    "--download-retry-backoff-max",
    "100ms",
    "--http-read-timeout",
    "2s",
];

struct Setup {
    dir: tempfile::TempDir,
    cosi: FixtureOutput,
    expected: PathBuf,
    disk: PathBuf,
}

impl Setup {
    fn new(seed: u64) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let image = CosiImage::new(DISK, seed).esp_bytes(2 << 20);
        let expected = dir.path().join("expected.img");
        image.write_disk_image(&expected);
        let cosi = image.write(&dir.path().join("image.cosi"));
        let disk = dir.path().join("disk.img");
        fs::write(&disk, vec![FILL; DISK as usize]).unwrap();
        Setup {
            dir,
            cosi,
            expected,
            disk,
        }
    }

    fn cosi_len(&self) -> u64 {
        fs::metadata(&self.cosi.path).unwrap().len()
    }

    /// Every region and the backup GPT as the plain disk image has them.
    fn assert_written(&self) {
        let got = fs::read(&self.disk).unwrap();
        let expected = fs::read(&self.expected).unwrap();
        for r in &self.cosi.regions {
            let range = r.offset as usize..(r.offset + r.uncompressed_size) as usize;
            assert!(got[range.clone()] == expected[range], "{} differs", r.path);
        }
        let tail = expected.len() - 33 * 512;
        assert!(got[tail..] == expected[tail..], "backup GPT differs");
    }

    /// No partition table: a failed stream leaves nothing that looks
    /// installed (the tables are written last).
    fn assert_no_partition_table(&self) {
        let got = fs::read(&self.disk).unwrap();
        assert_ne!(&got[512..520], b"EFI PART", "a primary GPT was written");
        let backup = got.len() - 512;
        assert_ne!(
            &got[backup..backup + 8],
            b"EFI PART",
            "a backup GPT was written"
        );
    }
}

/// StreamDisk of `url` onto `disk` by a private tridentd started with
/// `extra` flags; the daemon (still running) and the `Completed`.
async fn stream_disk(disk: &Path, url: &str, extra: &[&str]) -> (Daemon, Completed) {
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0"])
        .args(FAST_RETRIES)
        .args(extra)
        .arg("--disk")
        .arg(disk)
        .spawn()
        .await
        .unwrap();
    let mut client = StreamingServiceClient::new(daemon.channel().await.unwrap());
    let request = StreamDiskRequest {
        image_url: url.to_owned(),
        ..Default::default()
    };
    let mut stream = client.stream_disk(request).await.unwrap().into_inner();
    while let Some(item) = stream.next().await {
        if let Some(servicing_response::Response::Completed(done)) = item.unwrap().response {
            return (daemon, done);
        }
    }
    panic!("no Completed:\n{}", daemon.stderr());
}

fn assert_succeeded(done: &Completed) {
    assert_eq!(done.status(), StatusCode::Success, "{:?}", done.error);
}

/// A structured download failure whose message names `cosi_subkind`.
fn assert_download_failed(done: &Completed, cosi_subkind: &str) -> String {
    assert_eq!(done.status(), StatusCode::Failure, "{done:?}");
    let error = done.error.clone().unwrap();
    assert_eq!(error.kind(), TridentErrorKind::ServicingError, "{error:?}");
    assert_eq!(error.subkind, "download-image", "{error:?}");
    assert!(error.message.contains(cosi_subkind), "{error:?}");
    format!("{} / {}", error.message, error.causes.join(" / "))
}

/// Bytes served over the file's size, printed for the report.
fn ratio(what: &str, served: u64, file: u64) -> f64 {
    let ratio = served as f64 / file as f64;
    eprintln!("{what}: served {served} bytes for a {file}-byte file: {ratio:.4}x");
    ratio
}

#[tokio::test(flavor = "multi_thread")]
async fn a_download_that_drops_once_resumes_without_starting_over() {
    let s = Setup::new(3801);
    let len = s.cosi_len();
    let cut = len * 2 / 5;
    let server = FaultyServer::start(&s.cosi.path, Faults::default().drop_at(cut));
    let (_daemon, done) = stream_disk(&s.disk, &server.url(), &[]).await;
    assert_succeeded(&done);
    s.assert_written();
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[1].range_from, Some(cut), "{requests:?}");
    assert_eq!(requests[1].status, 206, "{requests:?}");
    assert_eq!(requests[1].if_range.as_deref(), Some("\"image-1\""));
    assert!(ratio("one drop", server.bytes_served(), len) <= 1.1);
}

#[tokio::test(flavor = "multi_thread")]
async fn five_drops_at_random_offsets_each_resume_without_starting_over() {
    let s = Setup::new(3802);
    let len = s.cosi_len();
    let faults = Faults::default().drop_at_random(5, 38, len);
    let drops = faults.drops();
    let server = FaultyServer::start(&s.cosi.path, faults);
    let (_daemon, done) = stream_disk(&s.disk, &server.url(), &[]).await;
    assert_succeeded(&done);
    s.assert_written();
    let resumed: Vec<Option<u64>> = server.requests()[1..]
        .iter()
        .map(|r| r.range_from)
        .collect();
    assert_eq!(resumed, drops.into_iter().map(Some).collect::<Vec<_>>());
    assert!(server.requests()[1..].iter().all(|r| r.status == 206));
    assert!(ratio("five drops", server.bytes_served(), len) <= 1.1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_ignores_range_is_reread_within_the_bound_and_refused_beyond_it() {
    let s = Setup::new(3803);
    let len = s.cosi_len();
    let server = FaultyServer::start(
        &s.cosi.path,
        Faults::default().ignore_range().drop_at(len / 2),
    );
    let (_daemon, done) = stream_disk(&s.disk, &server.url(), &[]).await;
    assert_succeeded(&done);
    s.assert_written();
    assert!(server.requests().iter().all(|r| r.status == 200));
    // Re-read from byte 0: the half before the drop is downloaded twice.
    assert_eq!(server.bytes_served(), len + len / 2);
    ratio("ignored range, one drop", server.bytes_served(), len);

    let s = Setup::new(3804);
    let len = s.cosi_len();
    let server = FaultyServer::start(
        &s.cosi.path,
        Faults::default()
            .ignore_range()
            .drop_at(len / 3)
            .drop_at(len * 2 / 3),
    );
    let flags = ["--download-restarts-without-ranges", "1"];
    let (_daemon, done) = stream_disk(&s.disk, &server.url(), &flags).await;
    let text = assert_download_failed(&done, "image-server-no-ranges");
    assert!(text.contains("does not serve byte ranges"), "{text}");
    s.assert_no_partition_table();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_replaced_between_requests_is_never_mixed() {
    let s = Setup::new(3805);
    let other = CosiImage::new(DISK, 3806)
        .esp_bytes(2 << 20)
        .write(&s.dir.path().join("other.cosi"));
    let len = s.cosi_len();
    let server = FaultyServer::start(
        &s.cosi.path,
        Faults::default()
            .drop_at(len / 2)
            .replace_at_first_drop(fs::read(&other.path).unwrap()),
    );
    let (_daemon, done) = stream_disk(&s.disk, &server.url(), &[]).await;
    let text = assert_download_failed(&done, "image-changed-during-download");
    assert!(text.contains("ETag"), "{text}");
    // The If-Range request got the new file whole, and not a byte of it
    // was taken: the download stopped there.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[1].status, 200, "{requests:?}");
    s.assert_no_partition_table();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oci_pull_that_drops_once_resumes_without_starting_over() {
    let s = Setup::new(3807);
    let len = s.cosi_len();
    let registry = Registry::start(s.dir.path(), None).unwrap();
    registry
        .push_cosi(&s.cosi.path, "os/azl", "3.0", None)
        .await
        .unwrap();
    let relay = DroppingRelay::start(registry.port(), len / 2).unwrap();
    let url = format!("oci://127.0.0.1:{}/os/azl:3.0", relay.port());
    let done = stream_disk_trusting(registry.ca_pem(), &s.disk, &url, None, &FAST_RETRIES)
        .await
        .unwrap();
    assert_succeeded(&done);
    s.assert_written();
    // TLS records, handshakes and the manifest included.
    assert!(ratio("oci, one drop", relay.relayed(), len) <= 1.1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_is_a_warning_in_trident_logs_and_in_trident_watch() {
    let s = Setup::new(3808);
    let len = s.cosi_len();
    let cut = len / 3;
    let server = FaultyServer::start(&s.cosi.path, Faults::default().drop_at(cut));
    let (daemon, done) = stream_disk(&s.disk, &server.url(), &[]).await;
    assert_succeeded(&done);
    let operation = list_operations(daemon.socket_path())
        .await
        .unwrap()
        .pop()
        .unwrap()
        .operation_id;
    let line = format!("download of {} broke at byte {cut} of {len}", server.url());
    let resumed = format!("resuming at byte {cut}");
    let logs = trident_cli_ok(
        daemon.socket_path(),
        &["logs", "--operation", &operation, "--level", "warn"],
    );
    eprintln!("trident logs:\n{logs}");
    assert!(logs.contains(&line) && logs.contains(&resumed), "{logs}");
    let json = trident_cli_ok(
        daemon.socket_path(),
        &["logs", "--operation", &operation, "-o", "json"],
    );
    let record = json
        .lines()
        .find(|l| l.contains(&resumed))
        .unwrap_or_else(|| panic!("no retry record: {json}"));
    for field in ["\"attempt\"", "\"offset\"", "\"reason\"", "\"url\""] {
        assert!(record.contains(field), "{field} missing: {record}");
    }
    let watched = trident_e2e::trident_cli(
        daemon.socket_path(),
        &["watch", "--operation", &operation, "--progress", "plain"],
    );
    let text = String::from_utf8_lossy(&watched.stdout).into_owned()
        + &String::from_utf8_lossy(&watched.stderr);
    eprintln!("trident watch:\n{text}");
    assert!(watched.status.success(), "{text}");
    assert!(text.contains(&line) && text.contains(&resumed), "{text}");
}
