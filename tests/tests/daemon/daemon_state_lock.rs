//! One daemon per state directory and datastore: a second `tridentd` on
//! the same state directory (or the same datastore from another state
//! directory) refuses to start, names the first one's pid, takes no socket
//! and leaves the first one's running operation alone.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::process::Command;
use std::time::Duration;

use futures::StreamExt;
use trident_e2e::fixture::CosiImage;
use trident_e2e::throttled_http::ThrottledServer;
use trident_e2e::{Daemon, bin_path, list_operations};
use trident_proto::v1::{
    StatusCode, StreamDiskRequest, servicing_response,
    streaming_service_client::StreamingServiceClient,
};

/// Runs a second `tridentd` with `args` for at most 20 s; returns whether
/// it exited by itself, its exit status and its stderr (one still serving
/// after 20 s is killed: before the state lock, it served).
fn second_daemon(args: &[&std::ffi::OsStr]) -> (bool, std::process::ExitStatus, String) {
    let mut child = Command::new(bin_path("tridentd"))
        .args(args)
        .env_remove("LISTEN_FDS")
        .env_remove("LISTEN_PID")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut exited = true;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            exited = false;
            child.kill().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    (
        exited,
        output.status,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_second_daemon_on_the_same_state_directory_or_datastore_is_refused_and_the_first_operation_completes()
 {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("image.cosi");
    CosiImage::new(12 << 20, 11).write(&image);
    let disk = dir.path().join("disk.img");
    std::fs::File::create(&disk)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    // About 4 s of download: the second daemons start in the middle of it.
    let size = std::fs::metadata(&image).unwrap().len();
    let server = ThrottledServer::start(&image, size / 4).unwrap();
    let daemon = Daemon::builder()
        .arg("--disk")
        .arg(&disk)
        .spawn()
        .await
        .unwrap();
    let first_pid = daemon.pid().unwrap();

    let mut client = StreamingServiceClient::new(daemon.channel().await.unwrap());
    let mut stream = client
        .stream_disk(StreamDiskRequest {
            image_url: server.url(),
            ..StreamDiskRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    // The operation is running once its Started message arrived.
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(
        first.response,
        Some(servicing_response::Response::Started(_))
    ));

    // Same state directory, another socket.
    let other_socket = dir.path().join("other.sock");
    let (exited, status, stderr) = second_daemon(&[
        "--socket".as_ref(),
        other_socket.as_os_str(),
        "--state-dir".as_ref(),
        daemon.state_dir().as_os_str(),
    ]);
    assert!(exited && !status.success(), "{stderr}");
    assert!(
        stderr.contains("is in use by another tridentd")
            && stderr.contains(&format!("(pid {first_pid})")),
        "{stderr}"
    );
    assert!(!other_socket.exists(), "the refused daemon took no socket");

    // Another state directory, the first one's datastore.
    let datastore = daemon.state_dir().join("datastore.sqlite");
    let (exited, status, stderr) = second_daemon(&[
        "--socket".as_ref(),
        other_socket.as_os_str(),
        "--state-dir".as_ref(),
        dir.path().join("other-state").as_os_str(),
        "--datastore".as_ref(),
        datastore.as_os_str(),
    ]);
    assert!(exited && !status.success(), "{stderr}");
    assert!(
        stderr.contains("datastore") && stderr.contains(&format!("(pid {first_pid})")),
        "{stderr}"
    );

    // The first daemon's operation was neither marked interrupted nor
    // disturbed: it completes.
    let mut completed = None;
    while let Some(message) = tokio::time::timeout(Duration::from_secs(120), stream.next())
        .await
        .unwrap()
    {
        if let Some(servicing_response::Response::Completed(done)) = message.unwrap().response {
            completed = Some(done);
        }
    }
    let completed = completed.expect("a Completed message");
    assert_eq!(completed.status(), StatusCode::Success, "{completed:?}");
    let operations = list_operations(daemon.socket_path()).await.unwrap();
    assert_eq!(operations.len(), 1, "{operations:?}");
    assert_eq!(
        operations[0].result(),
        StatusCode::Success,
        "not marked interrupted: {operations:?}"
    );
}

/// As sshd's StrictModes: a state directory others can write (here a
/// symlink to a 1777 directory), or one under a directory another user
/// owns, stops the daemon before it writes anything there.
#[test]
fn a_state_directory_others_can_write_or_own_is_refused_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let link = dir.path().join("state-link");
    std::os::unix::fs::symlink(&open, &link).unwrap();
    let socket = dir.path().join("d.sock");
    let (exited, status, stderr) = second_daemon(&[
        "--socket".as_ref(),
        socket.as_os_str(),
        "--state-dir".as_ref(),
        link.as_os_str(),
    ]);
    assert!(exited && !status.success(), "{stderr}");
    assert!(
        stderr.contains("refusing state directory") && stderr.contains("mode 1777"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(&open).unwrap().count(),
        0,
        "nothing written there"
    );
    assert!(!socket.exists());

    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let (exited, status, stderr) = second_daemon(&[
        "--socket".as_ref(),
        socket.as_os_str(),
        "--state-dir".as_ref(),
        theirs.join("state").as_os_str(),
    ]);
    assert!(exited && !status.success(), "{stderr}");
    assert!(stderr.contains("owned by uid 65534"), "{stderr}");
    assert!(!theirs.join("state").exists());
}
