//! A StreamDisk target that changes under the writer (issue 28, case 1):
//! `trident stream-disk` from a throttled `http://` server on loopback
//! onto a disk-image file that another process truncates, renames over or
//! overwrites while the stream runs. Each ends in a structured error
//! (`target-changed` or `write-verification-failed` naming the region),
//! exit 2, and no valid partition table on the target.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use trident_cosi::writer::{FixtureOutput, FixtureRegion};
use trident_e2e::disk_daemon;
use trident_e2e::fixture::{CosiImage, StreamDiskFixture};
use trident_e2e::throttled_http::ThrottledServer;

const DISK: u64 = 48 << 20;
/// The stream takes about this long at the server's rate.
const STREAM_SECONDS: u64 = 6;

struct Fixture {
    dir: tempfile::TempDir,
    cosi: FixtureOutput,
    target: PathBuf,
    server: ThrottledServer,
}

fn fixture() -> Fixture {
    let StreamDiskFixture { dir, cosi, target } =
        StreamDiskFixture::new(&CosiImage::new(DISK, 28).esp_bytes(8 << 20));
    let size = fs::metadata(&cosi.path).unwrap().len();
    let server = ThrottledServer::start(&cosi.path, size / STREAM_SECONDS).unwrap();
    Fixture {
        dir,
        cosi,
        target,
        server,
    }
}

fn partition(fx: &Fixture, number: u32) -> &FixtureRegion {
    fx.cosi
        .regions
        .iter()
        .find(|r| r.number == Some(number))
        .unwrap()
}

/// Waits until the 4 KiB at `offset` of the target are no longer zero:
/// the stream has written there.
fn wait_written(target: &Path, offset: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut block = [0u8; 4096];
    loop {
        if let Ok(f) = fs::File::open(target)
            && f.read_exact_at(&mut block, offset).is_ok()
            && block.iter().any(|&b| b != 0)
        {
            return;
        }
        assert!(Instant::now() < deadline, "nothing written at {offset}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `trident stream-disk` in the background; `interfere` runs meanwhile.
/// Returns the CLI's output and the error file it wrote (`-e`).
async fn stream_disk_with(
    fx: &Fixture,
    extra: &[&str],
    interfere: impl FnOnce() + Send + 'static,
) -> (Output, String) {
    let daemon = disk_daemon(&fx.target).await;
    let error_file = fx.dir.path().join("error.yaml");
    let mut command = trident_e2e::trident_command(daemon.socket_path());
    command
        .args(["stream-disk", &fx.server.url(), "--progress", "plain", "-e"])
        .arg(&error_file)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = tokio::task::spawn_blocking(move || {
        let child = command.spawn().unwrap();
        interfere();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let error = fs::read_to_string(&error_file).unwrap_or_default();
    (output, error)
}

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program).args(args).status().unwrap();
    assert!(status.success(), "{program} {args:?}: {status}");
}

/// Neither GPT header is on the target (as its size was when written).
fn assert_no_partition_table(target: &Path) {
    let bytes = fs::read(target).unwrap();
    let at = |offset: usize| bytes.get(offset..offset + 8) == Some(b"EFI PART".as_slice());
    assert!(!at(512), "primary GPT header present");
    assert!(!at(DISK as usize - 512), "backup GPT header present");
}

fn assert_failed(output: &Output, error: &str, subkind: &str, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(error.contains(&format!("error: {subkind}")), "{error}");
    assert!(error.contains("category: servicing"), "{error}");
    for needle in needles {
        assert!(error.contains(needle), "{needle:?} not in {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_truncated_mid_stream_fails_as_target_changed_with_no_partition_table() {
    let fx = fixture();
    let (target, esp) = (fx.target.clone(), partition(&fx, 1).offset);
    let (output, error) = stream_disk_with(&fx, &[], move || {
        wait_written(&target, esp);
        run("truncate", &["-s", "0", target.to_str().unwrap()]);
    })
    .await;
    assert_failed(&output, &error, "target-changed", &["shrank from"]);
    assert_no_partition_table(&fx.target);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_renamed_over_mid_stream_fails_as_target_changed_and_the_new_file_is_untouched() {
    let fx = fixture();
    let (target, esp) = (fx.target.clone(), partition(&fx, 1).offset);
    let other = fx.dir.path().join("other.img");
    fs::write(&other, vec![0x5A; DISK as usize]).unwrap();
    let (output, error) = stream_disk_with(&fx, &[], move || {
        wait_written(&target, esp);
        run("mv", &[other.to_str().unwrap(), target.to_str().unwrap()]);
    })
    .await;
    assert_failed(&output, &error, "target-changed", &["was replaced"]);
    let now = fs::read(&fx.target).unwrap();
    assert!(now.iter().all(|&b| b == 0x5A), "the new file was written");
}

/// Another writer puts random bytes over the 4 KiB at `offset` of the
/// target once the stream has written the region starting at `after`.
fn second_writer(target: PathBuf, after: u64, offset: u64) -> impl FnOnce() + Send + 'static {
    move || {
        wait_written(&target, after);
        run(
            "dd",
            &[
                "if=/dev/urandom",
                &format!("of={}", target.display()),
                "bs=4096",
                "count=1",
                &format!("seek={}", offset / 4096),
                "conv=notrunc",
                "status=none",
            ],
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_block_overwritten_after_it_was_written_is_caught_by_the_read_back() {
    let fx = fixture();
    let esp = partition(&fx, 1).offset;
    let (output, error) =
        stream_disk_with(&fx, &[], second_writer(fx.target.clone(), esp, esp)).await;
    assert_failed(
        &output,
        &error,
        "write-verification-failed",
        &["partition-1", "first block", &format!("byte offset {esp}")],
    );
    assert_no_partition_table(&fx.target);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_changed_in_the_middle_of_a_region_is_caught_by_full_verification() {
    let fx = fixture();
    let esp = partition(&fx, 1);
    let middle = esp.offset + (esp.uncompressed_size / 2) / 4096 * 4096;
    // Once the next region has data, the ESP's middle is written.
    let root = partition(&fx, 2).offset;
    let writer = second_writer(fx.target.clone(), root, middle);
    let (output, error) = stream_disk_with(&fx, &["--verify-writes", "full"], writer).await;
    assert_failed(
        &output,
        &error,
        "write-verification-failed",
        &["partition-1", "chunk of"],
    );
    assert_no_partition_table(&fx.target);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undisturbed_stream_with_full_verification_succeeds_byte_for_byte() {
    let fx = fixture();
    let (output, _) = stream_disk_with(&fx, &["--verify-writes", "full"], || {}).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("Read back what was written"), "{stderr}");
    let expected = fx.dir.path().join("expected.img");
    CosiImage::new(DISK, 28)
        .esp_bytes(8 << 20)
        .write_disk_image(&expected);
    let (got, want) = (fs::read(&fx.target).unwrap(), fs::read(&expected).unwrap());
    for r in &fx.cosi.regions {
        let range = r.offset as usize..(r.offset + r.uncompressed_size) as usize;
        assert!(got[range.clone()] == want[range], "{} differs", r.path);
    }
}
