//! What the VM scenario's orchestrator does, through public interfaces
//! only: serves the COSIs over HTTP (the guest reaches the host at
//! 10.0.2.2), writes Host Configurations, runs servicing RPCs while
//! following their live progress, and asks the real `trident` CLI.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use futures::StreamExt;
use trident_proto::v1::{
    ServicingResponse, StatusCode, StreamDiskRequest, servicing_response,
    streaming_service_client::StreamingServiceClient,
};

use crate::bin_path;
use crate::fixture::AbHostConfig;
use crate::test_os::TestOs;

pub use crate::dir_http::HttpServer;

pub mod advanced;
pub mod boot_marker;
pub mod esp_tree;

/// StreamDisk `os` onto `disk` through a private tridentd on the host.
pub async fn stream_disk(os: &TestOs, disk: &Path) {
    let daemon = crate::disk_daemon(disk).await;
    let mut client = StreamingServiceClient::new(daemon.channel().await.unwrap());
    let request = StreamDiskRequest {
        image_url: format!("file://{}", os.cosi.path.display()),
        image_hash: Some(os.cosi.metadata_sha384.clone()),
        reboot: None,
        ..Default::default()
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

/// GPT unique GUID of partition `name` on a disk-image file.
pub fn part_uuid(disk: &Path, name: &str) -> String {
    use std::os::unix::fs::FileExt;
    let file = fs::File::open(disk).unwrap();
    let mut head = vec![0u8; 34 * 512];
    file.read_exact_at(&mut head, 0).unwrap();
    let gpt = trident_cosi::gpt::Gpt::parse_primary(&head, 512).unwrap();
    let entry = gpt.partitions().iter().find(|e| e.name == name).unwrap();
    entry.unique_guid.to_string()
}

/// A fresh ed25519 key pair in `dir` (ssh-keygen); returns the public
/// key line, whose comment is `comment`.
pub fn ssh_key(dir: &Path, comment: &str) -> String {
    let private = dir.join("id_ed25519");
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(&private)
        .output()
        .expect("ssh-keygen (package openssh-client)");
    assert!(out.status.success(), "{out:?}");
    let mut public = PathBuf::from(&private);
    public.set_extension("pub");
    fs::read_to_string(public).unwrap().trim().to_owned()
}

/// The scenario's Host Configuration: ESP, root-a and root-b (an A/B
/// pair) on `/dev/vda`, `os` (a user with an SSH key, a hostname) and
/// one systemd health check on `units`, within `timeout_s`.
#[derive(Debug)]
pub struct GuestConfig<'a> {
    pub http_port: u16,
    pub os: &'a TestOs,
    pub hostname: &'a str,
    pub user: &'a str,
    pub ssh_key: &'a str,
    pub health_units: &'a [&'a str],
    pub health_timeout_s: u64,
}

impl GuestConfig<'_> {
    pub fn yaml(&self) -> String {
        let cosi = self.os.cosi.path.file_name().unwrap().to_string_lossy();
        let os_and_health = format!(
            r#"os:
  hostname: {hostname}
  users:
  - name: {user}
    sshPublicKeys: ["{key}"]
health:
  checks:
  - name: units-up
    systemdServices: [{units}]
    timeoutSeconds: {timeout}
"#,
            hostname = self.hostname,
            user = self.user,
            key = self.ssh_key,
            units = self.health_units.join(", "),
            timeout = self.health_timeout_s,
        );
        AbHostConfig::new(
            format!("http://10.0.2.2:{}/{cosi}", self.http_port),
            "/dev/vda",
        )
        .sha384(&self.os.cosi.metadata_sha384)
        .sizes("160M", "700M")
        .extra(&os_and_health)
        .yaml()
    }
}

/// Starts a servicing RPC, retrying while the daemon says UNAVAILABLE
/// (the guest's commit service may hold it for a moment after a boot).
pub async fn start_servicing<F, Fut>(mut call: F) -> tonic::Streaming<ServicingResponse>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<
            Output = Result<tonic::Response<tonic::Streaming<ServicingResponse>>, tonic::Status>,
        >,
{
    for _ in 0..90 {
        match call().await {
            Ok(response) => return response.into_inner(),
            Err(status) if status.code() == tonic::Code::Unavailable => {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(status) => panic!("servicing refused: {status:?}"),
        }
    }
    panic!("the guest's tridentd stayed busy for 3 minutes");
}

/// Follows a servicing stream to its end, printing each new phase; returns
/// `Completed` and the phase ids in the order first seen.
pub async fn follow(
    what: &str,
    stream: tonic::Streaming<ServicingResponse>,
) -> (trident_proto::v1::Completed, Vec<String>) {
    let followed = follow_logging(what, stream, None).await;
    (followed.completed, followed.phases)
}

/// What [`follow_logging`] saw of a servicing stream.
#[derive(Debug)]
pub struct Followed {
    pub completed: trident_proto::v1::Completed,
    /// Phase ids in the order first seen.
    pub phases: Vec<String>,
    /// The messages of the log records of `target`, in order.
    pub logs: Vec<String>,
}

/// [`follow`], also keeping the log messages of `target` (a script's
/// output lines have target `script::NAME`).
pub async fn follow_logging(
    what: &str,
    mut stream: tonic::Streaming<ServicingResponse>,
    target: Option<&str>,
) -> Followed {
    let started = std::time::Instant::now();
    let (mut completed, mut phases, mut logs) = (None, Vec::new(), Vec::new());
    while let Some(item) = stream.next().await {
        match item.unwrap().response {
            Some(servicing_response::Response::Completed(c)) => completed = Some(c),
            Some(servicing_response::Response::Progress(p)) if !phases.contains(&p.phase_id) => {
                println!("{what} progress: {} ({})", p.phase_id, p.name);
                phases.push(p.phase_id.clone());
            }
            Some(servicing_response::Response::Log(log)) if Some(log.target.as_str()) == target => {
                println!("{what} log: {}", log.message);
                logs.push(log.message);
            }
            _ => {}
        }
    }
    let completed = completed.unwrap_or_else(|| panic!("{what} ended without Completed"));
    assert_eq!(completed.status(), StatusCode::Success, "{completed:?}");
    println!(
        "timing: {what} (RPC to Completed) {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Followed {
        completed,
        phases,
        logs,
    }
}

/// Asserts every phase of `wanted` was seen.
pub fn assert_phases(phases: &[String], wanted: &[&str]) {
    for phase in wanted {
        assert!(phases.iter().any(|p| p == phase), "{phase} in {phases:?}");
    }
}

/// `trident --socket SOCKET ARGS...` (the real CLI): its exit code,
/// stdout and stderr.
pub async fn trident_cli_output(socket: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let socket = socket.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(bin_path("trident"))
            .arg("--socket")
            .arg(&socket)
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `trident --socket SOCKET ARGS...` (the real CLI): its stdout, or a
/// panic with stderr if it fails.
pub async fn trident_cli(socket: &Path, args: &[&str]) -> String {
    let (code, stdout, stderr) = trident_cli_output(socket, args).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    stdout
}

/// Polls `trident get status` until it says `servicingState: provisioned`
/// (the guest's commit service commits after boot); prints every other
/// state seen on the way and returns the last status text.
pub async fn wait_provisioned(socket: &Path) -> String {
    let mut status = String::new();
    let mut seen = Vec::new();
    for _ in 0..120 {
        status = trident_cli(socket, &["get", "status"]).await;
        let state = status
            .lines()
            .find_map(|l| l.trim().strip_prefix("servicingState: "))
            .unwrap_or("?")
            .to_owned();
        if !seen.contains(&state) {
            println!("guest servicing state: {state}");
            seen.push(state.clone());
        }
        if state == "provisioned" {
            return status;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    panic!("not provisioned after 10 minutes:\n{status}");
}

/// `work/installer.img`: installer media, `os` written by StreamDisk onto
/// a disk-image file a little larger than the image.
pub async fn installer_disk(work: &Path, os: &TestOs) -> PathBuf {
    let installer = work.join("installer.img");
    fs::File::create(&installer)
        .unwrap()
        .set_len(os.cosi.disk_size + (64 << 20))
        .unwrap();
    stream_disk(os, &installer).await;
    installer
}

/// Installs `config` through the guest's tridentd (`vm`'s reverse-connect
/// socket), TRIDENT_HANDLES_REBOOT, following live progress and keeping
/// the log lines of `target`; the installer reboots itself into the
/// installed OS.
pub async fn install_following(
    vm: &mut crate::vm::Vm,
    config: String,
    target: Option<&str>,
) -> Followed {
    use trident_proto::v1::{RebootHandling, RebootManagement, RebootStatus};
    use trident_proto::v1preview::{
        FinalizeInstallRequest, InstallRequest, StageInstallRequest,
        install_service_client::InstallServiceClient,
    };
    let guest = vm.forward_tridentd().unwrap();
    guest
        .wait_until_answering(Duration::from_secs(180))
        .await
        .unwrap();
    let channel = crate::uds_channel(guest.path()).await.unwrap();
    let client = InstallServiceClient::new(channel);
    let request = InstallRequest {
        stage: Some(StageInstallRequest {
            config: Some(trident_proto::v1::HostConfiguration { config }),
        }),
        finalize: Some(FinalizeInstallRequest {
            reboot: Some(RebootManagement {
                handling: RebootHandling::TridentHandlesReboot as i32,
            }),
        }),
    };
    vm.boot_clock_restart();
    let stream = start_servicing(|| {
        let (mut client, request) = (client.clone(), request.clone());
        async move { client.install(request).await }
    })
    .await;
    let followed = follow_logging("install", stream, target).await;
    assert_eq!(
        followed.completed.reboot_status(),
        RebootStatus::RebootStarted
    );
    assert_phases(&followed.phases, &["mount", "configure", "boot-files"]);
    followed
}

/// An A/B update to `config` through the guest's tridentd (`vm`'s
/// reverse-connect socket), TRIDENT_HANDLES_REBOOT, following live
/// progress: the guest starts to reboot. The phases it went through.
pub async fn update_following(vm: &mut crate::vm::Vm, what: &str, config: String) -> Vec<String> {
    use trident_proto::v1::{
        FinalizeUpdateRequest, HostConfiguration, RebootHandling, RebootManagement, RebootStatus,
        StageUpdateRequest, UpdateRequest, update_service_client::UpdateServiceClient,
    };
    let guest = vm.forward_tridentd().unwrap();
    guest
        .wait_until_answering(Duration::from_secs(180))
        .await
        .unwrap();
    let channel = crate::uds_channel(guest.path()).await.unwrap();
    let client = UpdateServiceClient::new(channel);
    let request = UpdateRequest {
        stage: Some(StageUpdateRequest {
            config: Some(HostConfiguration { config }),
        }),
        finalize: Some(FinalizeUpdateRequest {
            reboot: Some(RebootManagement {
                handling: RebootHandling::TridentHandlesReboot as i32,
            }),
        }),
    };
    vm.boot_clock_restart();
    let stream = start_servicing(|| {
        let (mut client, request) = (client.clone(), request.clone());
        async move { client.update(request).await }
    })
    .await;
    let (completed, phases) = follow(what, stream).await;
    assert_eq!(completed.reboot_status(), RebootStatus::RebootStarted);
    phases
}

/// A VM test's work directory with the test OS versions it needs (built
/// from this tree's binaries and sysext, booting as `TRIDENT_VM_BOOTLOADER`
/// says) and an installer disk: the first version StreamDisk'd onto
/// `installer.img`.
#[derive(Debug)]
pub struct InstallerWork {
    pub dir: tempfile::TempDir,
    pub versions: Vec<TestOs>,
    pub installer: PathBuf,
}

impl InstallerWork {
    pub async fn build(prefix: &str, versions: &[&str]) -> InstallerWork {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
        let sysext = crate::test_os::build_sysext(dir.path()).unwrap();
        let bootloader = crate::test_os::TestBootloader::from_env().unwrap();
        let versions: Vec<TestOs> = versions
            .iter()
            .map(|v| crate::test_os::build_test_os(v, bootloader, &sysext, dir.path()).unwrap())
            .collect();
        let installer = installer_disk(dir.path(), &versions[0]).await;
        InstallerWork {
            dir,
            versions,
            installer,
        }
    }

    /// A blank (sparse) disk-image file `name` of `size` bytes in it.
    pub fn blank_disk(&self, name: &str, size: u64) -> PathBuf {
        blank_disk(self.dir.path(), name, size)
    }
}

/// A blank (sparse) disk-image file `name` of `size` bytes in `dir`.
pub fn blank_disk(dir: &Path, name: &str, size: u64) -> PathBuf {
    let path = dir.join(name);
    fs::File::create(&path).unwrap().set_len(size).unwrap();
    path
}
