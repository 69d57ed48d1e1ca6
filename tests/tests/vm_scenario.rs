//! The real test OS in a UEFI VM (issue 11), driven through public
//! interfaces only. Boots VMs under TCG, so it takes minutes and is
//! `#[ignore]`d in the plain test run; `scripts/test.sh` runs it in its VM
//! section (`--run-ignored`). Serial logs stay in `target/vm-artifacts/`.
//!
//! Today's step: a disk written by StreamDisk boots. A private tridentd on
//! the host StreamDisks the v1 COSI onto a disk-image file; the VM boots it
//! with OVMF + systemd-boot; v1 runs, and its tridentd, which only the
//! `trident.raw` system extension provides, answers through the forwarded
//! socket, to the real `trident` CLI too.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use futures::StreamExt;
use trident_e2e::test_os::{self, TestOs};
use trident_e2e::vm::{self, READY_MARKER, Vm, VmSpec};
use trident_e2e::{Daemon, bin_path};
use trident_proto::v1::{
    StatusCode, StreamDiskRequest, servicing_response,
    streaming_service_client::StreamingServiceClient,
};

/// Generous: TCG on a loaded 2-core machine.
const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);

/// StreamDisk `os` onto `disk` through a private tridentd on the host.
async fn stream_disk(os: &TestOs, disk: &Path) {
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0", "--disk"])
        .arg(disk)
        .spawn()
        .await
        .unwrap();
    let mut client = StreamingServiceClient::new(daemon.channel().await.unwrap());
    let request = StreamDiskRequest {
        image_url: format!("file://{}", os.cosi.path.display()),
        image_hash: Some(os.cosi.metadata_sha384.clone()),
        reboot: None,
    };
    let started = std::time::Instant::now();
    let mut stream = client.stream_disk(request).await.unwrap().into_inner();
    let mut completed = None;
    while let Some(item) = stream.next().await {
        if let Some(servicing_response::Response::Completed(c)) = item.unwrap().response {
            completed = Some(c);
        }
    }
    let completed = completed.expect("StreamDisk ended without Completed");
    assert_eq!(completed.status(), StatusCode::Success, "{completed:?}");
    println!(
        "timing: StreamDisk {} bytes {:.1}s",
        os.cosi.disk_size,
        started.elapsed().as_secs_f64()
    );
}

/// True if the ext4 image has `path` (debugfs reads it without mounting).
fn ext4_has(image: &Path, path: &str) -> bool {
    let out = Command::new("debugfs")
        .arg("-R")
        .arg(format!("stat {path}"))
        .arg(image)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    !text.contains("File not found")
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/test.sh's VM section"]
async fn a_disk_written_by_stream_disk_boots_v1_with_tridentd_from_the_sysext() {
    let artifacts = vm::artifacts_dir("stream_disk_boots").unwrap();
    let work = tempfile::Builder::new()
        .prefix("trident-vm-scenario-")
        .tempdir()
        .unwrap();
    let sysext = test_os::build_sysext(work.path()).unwrap();
    let v1 = test_os::build_test_os("v1", &sysext, work.path()).unwrap();
    assert!(
        v1.os_release.contains("IMAGE_VERSION=v1"),
        "{}",
        v1.os_release
    );
    // The OS itself has no tridentd: only the system extension brings it.
    assert!(!ext4_has(&v1.root_image, "/usr/bin/tridentd"));
    assert!(ext4_has(&v1.root_image, "/var/lib/extensions/trident.raw"));

    // A disk larger than the image's, like a real one: the backup GPT moves.
    let disk = work.path().join("disk.img");
    fs::File::create(&disk)
        .unwrap()
        .set_len(v1.cosi.disk_size + (256 << 20))
        .unwrap();
    stream_disk(&v1, &disk).await;

    let mut vm = Vm::start(VmSpec::new("stream-disk", &artifacts).disk(&disk)).unwrap();
    let boot = vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT).await.unwrap();
    assert!(boot.line.contains("version=v1"), "{}", boot.line);
    assert!(boot.line.contains("sysext=trident,"), "{}", boot.line);
    assert!(
        boot.line.contains("tridentd=/usr/bin/tridentd"),
        "{}",
        boot.line
    );
    assert!(boot.line.contains("socket=active"), "{}", boot.line);
    // systemd-boot started the image's own entry (LoaderEntrySelected).
    assert!(boot.line.contains("entry=trident-v1.conf"), "{}", boot.line);

    let guest = vm.forward_tridentd().unwrap();
    let version = guest.wait_until_answering(ANSWER_TIMEOUT).await.unwrap();
    let host = trident_e2e::version(Daemon::start().await.unwrap().socket_path())
        .await
        .unwrap();
    assert_eq!(version, host, "the guest runs the tridentd built here");

    // The real CLI, unchanged, through the forwarded socket.
    let socket = guest.path().to_owned();
    let status = tokio::task::spawn_blocking(move || {
        Command::new(bin_path("trident"))
            .arg("--socket")
            .arg(&socket)
            .args(["get", "status"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(
        stdout.contains("servicingState: not-provisioned"),
        "{stdout}"
    );
    vm.stop();
    println!("serial log kept at {}", vm.serial_log().display());
}
