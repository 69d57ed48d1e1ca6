//! Runtime updates on a real running guest (the VM matrix's
//! `runtime-update` scenario; `#[ignore]`d: it boots a UEFI VM under TCG).
//!
//! The test OS v1 is written with StreamDisk onto a disk and given a
//! datastore that says it is provisioned with v1's configuration (written
//! into its root filesystem with debugfs before the boot: what an install
//! would have left). Booted, its tridentd (from the `trident.raw` system
//! extension) is reached through the reverse-connect proxy, and:
//!
//! 1. `GetRequiredServicingType` of v1's configuration plus a system
//!    extension and a configuration extension (served over HTTP by the
//!    test) says RUNTIME_UPDATE;
//! 2. `Update` applies it with live progress (`extensions`, `apply`,
//!    `scripts/postConfigure`) and no reboot (same boot id,
//!    REBOOT_NOT_REQUIRED); the guest's `systemd-sysext refresh` and
//!    `systemd-confext refresh` merge them over `/usr` and `/etc`, and a
//!    `runOn: runtime-update` postConfigure script reading each
//!    extension's file on the running guest prints its content to the
//!    servicing stream;
//! 3. a second `Update` without the extensions removes them: the same
//!    script finds both files gone;
//! 4. a third `Update` adds `os.netplan` (DHCP as before, plus a static
//!    address): tridentd writes `/etc/netplan/99-trident.yaml` on the
//!    running guest and runs `netplan apply`; a script run after it
//!    shows the address on the guest's interface, then runs the guest's
//!    `trident start-network` (the CLI alone, as upstream's installer
//!    media run it) with a `managementOs.netplan` of another address,
//!    which then shows; still no reboot.
//!
//! The test OS takes systemd 254 from bookworm-backports
//! (`build-image.sh --systemd-backports`): bookworm's own 252 has
//! `systemd-sysext` but not `systemd-confext`; and it has netplan
//! (`--netplan`).

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use trident_cosi::gpt::Gpt;
use trident_e2e::fixture::AbHostConfig;
use trident_e2e::test_os::{self, TestBootloader, TestOs};
use trident_e2e::vm::{self, READY_MARKER, Vm, VmSpec};
use trident_e2e::vm_orchestrator::{
    Followed, HttpServer, follow_logging, start_servicing, stream_disk,
};
use trident_host::datastore::Datastore;
use trident_host::status::{AbVolume, HostStatus, ServicingState};
use trident_proto::v1::{
    FinalizeUpdateRequest, HostConfiguration, RebootStatus, ServicingKind, StageUpdateRequest,
    UpdateRequest, update_service_client::UpdateServiceClient,
};
use trident_proto::v1preview;

/// Generous: TCG on a loaded 2-core machine.
const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);
/// The system extension's file and what it holds.
const SYSEXT_FILE: &str = "usr/share/trident-test/hello";
const SYSEXT_TEXT: &str = "hello from the runtime system extension";
/// The configuration extension's file and what it holds.
const CONFEXT_FILE: &str = "etc/trident-test/confext";
const CONFEXT_TEXT: &str = "hello from the runtime configuration extension";
/// What the postConfigure script prints when a file is not there.
const ABSENT: &str = "extension file absent";
/// The static address the netplan step adds (QEMU's user network is
/// 10.0.2.0/24; DHCP gives 10.0.2.15).
const STATIC_ADDRESS: &str = "10.0.2.50/24";
/// The address `trident start-network` gives instead, and what the script
/// prints when it succeeded.
const START_NETWORK_ADDRESS: &str = "10.0.2.51/24";
const START_NETWORK_OK: &str = "start-network succeeded";

/// v1's configuration as the guest's datastore records it, plus `extra`.
fn guest_config(os: &TestOs, http: &HttpServer, extra: &str) -> String {
    let cosi = os.cosi.path.file_name().unwrap().to_string_lossy();
    AbHostConfig::new(format!("http://10.0.2.2:{}/{cosi}", http.port), "/dev/vda")
        .sha384(&os.cosi.metadata_sha384)
        .sizes("160M", "700M")
        .extra(extra)
        .yaml()
}

/// The script that shows, on the servicing stream, what the running guest
/// has at each extension's path after the runtime update's merge.
fn show_script() -> String {
    format!(
        "scripts:\n  postConfigure:\n  - name: show-extension-file\n    runOn: [runtime-update]\n    \
         content: 'for f in /{SYSEXT_FILE} /{CONFEXT_FILE}; do cat $f 2>/dev/null || echo \"{ABSENT}\"; done'\n"
    )
}

/// An extension image of `kind` ("sysext" or "confext") for the test OS
/// (its os-release's ID and VERSION_ID, as systemd wants) named `name`,
/// holding `file` with `text`, in `dir` as `NAME.raw`; returns its SHA-384.
fn build_extension(
    os: &TestOs,
    dir: &Path,
    kind: &str,
    name: &str,
    file: &str,
    text: &str,
) -> String {
    let tree = dir.join(format!("{name}-tree"));
    let field = |key: &str| {
        os.os_release
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(|v| v.trim_matches('"').to_owned())
    };
    let mut release = format!("ID={}\n", field("ID").unwrap());
    if let Some(version) = field("VERSION_ID") {
        release.push_str(&format!("VERSION_ID={version}\n"));
    }
    let release_dir = tree.join(match kind {
        "sysext" => "usr/lib/extension-release.d",
        _ => "etc/extension-release.d",
    });
    fs::create_dir_all(&release_dir).unwrap();
    fs::write(
        release_dir.join(format!("extension-release.{name}")),
        release,
    )
    .unwrap();
    let path = tree.join(file);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, format!("{text}\n")).unwrap();
    let image = dir.join(format!("{name}.raw"));
    let status = Command::new("mksquashfs")
        .arg(&tree)
        .arg(&image)
        .args(["-quiet", "-no-progress", "-all-root", "-noappend"])
        .status()
        .unwrap();
    assert!(status.success(), "mksquashfs");
    trident_cosi::hash::sha384_hex(&fs::read(&image).unwrap())
}

/// Writes a datastore saying the host is provisioned with `config` on
/// volume A into the root filesystem of the StreamDisk'd `disk`.
fn provision_datastore(disk: &Path, config: &str, work: &Path) {
    let status = HostStatus {
        spec: Some(trident_host::config::parse(config).unwrap()),
        servicing_state: ServicingState::Provisioned,
        ab_active_volume: Some(AbVolume::VolumeA),
        ..HostStatus::default()
    };
    let file = work.join("guest-datastore.sqlite");
    {
        let mut ds = Datastore::open(&file).unwrap();
        ds.save_status(&status, None).unwrap();
    }
    let size = fs::metadata(disk).unwrap().len();
    let gpt = Gpt::read_and_verify(&fs::File::open(disk).unwrap(), 512, size - size % 512).unwrap();
    let root = gpt.partitions().iter().find(|e| e.name == "root").unwrap();
    let target = format!("{}?offset={}", disk.display(), root.start_offset(512));
    for request in [
        "mkdir /var/lib/trident".to_owned(),
        format!("write {} /var/lib/trident/datastore.sqlite", file.display()),
    ] {
        let out = Command::new("debugfs")
            .args(["-w", "-R", &request, &target])
            .output()
            .unwrap();
        assert!(out.status.success(), "debugfs {request}: {out:?}");
    }
}

/// The log target of [`show_script`]'s output lines.
const SCRIPT_TARGET: &str = "script::show-extension-file";
/// The log target of [`netplan_step`]'s script.
const ADDRESSES_TARGET: &str = "script::show-addresses";

/// `os.netplan` with DHCP as the test OS has it plus [`STATIC_ADDRESS`],
/// and a script that, after the apply, prints the guest's IPv4 addresses,
/// then runs the guest's own `trident start-network` on a configuration
/// whose `managementOs.netplan` has [`START_NETWORK_ADDRESS`] instead
/// (upstream's provisioning network: the CLI, no daemon), and prints them
/// again.
fn netplan_step() -> String {
    const ADDRESSES: &str = "ip -4 -o addr show scope global | tr -s ' ' | cut -d ' ' -f 4";
    format!(
        r#"scripts:
  postConfigure:
  - name: show-addresses
    runOn: [runtime-update]
    content: |
      {ADDRESSES}
      cat > /run/start-network.yaml <<'END'
      image: {{ url: 'file:///unused.cosi', sha384: ignored }}
      storage:
        disks:
        - {{ id: os, device: /dev/vda, partitions: [{{ id: root, type: root, size: 1G }}] }}
        filesystems:
        - {{ deviceId: root, mountPoint: / }}
      managementOs:
        netplan:
          version: 2
          ethernets:
            wired: {{ match: {{ name: "en*" }}, dhcp4: true, addresses: [{START_NETWORK_ADDRESS}] }}
      END
      trident start-network /run/start-network.yaml && echo "{START_NETWORK_OK}"
      {ADDRESSES}
os:
  netplan:
    version: 2
    ethernets:
      wired:
        match: {{ name: "en*" }}
        dhcp4: true
        addresses: [{STATIC_ADDRESS}]
"#
    )
}

/// Update to `config` through `guest` (following the live progress and
/// the log lines of `target`).
async fn runtime_update(guest: &Path, what: &str, config: String, target: &str) -> Followed {
    let channel = trident_e2e::uds_channel(guest).await.unwrap();
    let client = UpdateServiceClient::new(channel);
    let request = UpdateRequest {
        stage: Some(StageUpdateRequest {
            config: Some(HostConfiguration { config }),
        }),
        finalize: Some(FinalizeUpdateRequest { reboot: None }),
    };
    let stream = start_servicing(|| {
        let (mut client, request) = (client.clone(), request.clone());
        async move { client.update(request).await }
    })
    .await;
    follow_logging(what, stream, Some(target)).await
}

async fn boot_id(guest: &Path) -> String {
    trident_e2e::version(guest).await.unwrap().boot_id
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/vm-matrix.sh runtime-update"]
async fn matrix_a_runtime_update_merges_a_sysext_and_a_confext_on_the_running_guest_and_another_removes_them()
 {
    let artifacts = vm::artifacts_dir("runtime_update").unwrap();
    let work = tempfile::Builder::new()
        .prefix("trident-vm-runtime-")
        .tempdir()
        .unwrap();
    let sysext = test_os::build_sysext(work.path()).unwrap();
    // The image's own systemd-boot entry boots the StreamDisk'd disk, as
    // when this scenario was written; a runtime update does not touch boot.
    let v1 = test_os::build_test_os_with(
        "v1",
        TestBootloader::SystemdBoot,
        &sysext,
        work.path(),
        &["--systemd-backports", "--netplan"],
    )
    .unwrap();
    let served: PathBuf = work.path().join("served");
    fs::create_dir_all(&served).unwrap();
    let hello_sha = build_extension(&v1, &served, "sysext", "hello", SYSEXT_FILE, SYSEXT_TEXT);
    let motd_sha = build_extension(&v1, &served, "confext", "motd", CONFEXT_FILE, CONFEXT_TEXT);
    let http = HttpServer::start(&served);

    let disk = work.path().join("disk.img");
    fs::File::create(&disk)
        .unwrap()
        .set_len(v1.cosi.disk_size + (256 << 20))
        .unwrap();
    stream_disk(&v1, &disk).await;
    let provisioned = guest_config(&v1, &http, "");
    provision_datastore(&disk, &provisioned, work.path());

    let mut vm = Vm::start(
        VmSpec::new("runtime-update", &artifacts)
            .disk(&disk)
            .orchestrator(&v1.rcp),
    )
    .unwrap();
    vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT).await.unwrap();
    let guest = vm.forward_tridentd().unwrap();
    guest.wait_until_answering(ANSWER_TIMEOUT).await.unwrap();
    let boot = boot_id(guest.path()).await;

    let with_hello = guest_config(
        &v1,
        &http,
        &format!(
            "{}os:\n  sysexts:\n  - url: http://10.0.2.2:{port}/hello.raw\n    sha384: {hello_sha}\n  \
             confexts:\n  - url: http://10.0.2.2:{port}/motd.raw\n    sha384: {motd_sha}\n",
            show_script(),
            port = http.port
        ),
    );
    assert_eq!(
        trident_e2e::required_servicing_type(guest.path(), &with_hello)
            .await
            .unwrap(),
        v1preview::ServicingType::RuntimeUpdate
    );

    let added = runtime_update(
        guest.path(),
        "runtime update (add)",
        with_hello,
        SCRIPT_TARGET,
    )
    .await;
    assert_eq!(
        added.completed.servicing_kind,
        Some(ServicingKind::RuntimeUpdate as i32)
    );
    assert_eq!(
        added.completed.reboot_status(),
        RebootStatus::RebootNotRequired
    );
    for phase in ["extensions", "apply", "scripts/postConfigure"] {
        assert!(
            added.phases.iter().any(|p| p == phase),
            "{phase} in {:?}",
            added.phases
        );
    }
    assert_eq!(
        added.logs,
        [SYSEXT_TEXT, CONFEXT_TEXT],
        "both merged on the running guest"
    );
    assert_eq!(boot_id(guest.path()).await, boot, "no reboot");

    let without = guest_config(&v1, &http, &show_script());
    let removed = runtime_update(
        guest.path(),
        "runtime update (remove)",
        without,
        SCRIPT_TARGET,
    )
    .await;
    assert_eq!(
        removed.completed.servicing_kind,
        Some(ServicingKind::RuntimeUpdate as i32)
    );
    assert_eq!(
        removed.logs,
        [ABSENT, ABSENT],
        "both unmerged on the running guest"
    );
    assert_eq!(boot_id(guest.path()).await, boot, "no reboot");

    let networked = runtime_update(
        guest.path(),
        "runtime update (netplan)",
        guest_config(&v1, &http, &netplan_step()),
        ADDRESSES_TARGET,
    )
    .await;
    assert_eq!(
        networked.completed.servicing_kind,
        Some(ServicingKind::RuntimeUpdate as i32)
    );
    // The runtime update's netplan, then start-network's, each applied.
    let logs = &networked.logs;
    let ok = logs.iter().position(|l| l == START_NETWORK_OK);
    let before = logs.iter().position(|l| l == STATIC_ADDRESS);
    let after = logs.iter().rposition(|l| l == START_NETWORK_ADDRESS);
    assert!(
        matches!((before, ok, after), (Some(b), Some(o), Some(a)) if b < o && o < a),
        "os.netplan applied by the runtime update, then managementOs.netplan by trident \
         start-network, on the running guest: {logs:?}"
    );
    assert_eq!(boot_id(guest.path()).await, boot, "no reboot");
    vm.stop();
    println!("serial log kept at {}", vm.serial_log().display());
}

/// The netplan step's configuration (and the one its script hands to
/// `trident start-network`) parse, before a VM is spent on them.
#[test]
fn the_netplan_steps_configurations_parse() {
    let config = AbHostConfig::new("http://10.0.2.2:1/v1.cosi".to_owned(), "/dev/vda")
        .sha384("0".repeat(96))
        .sizes("160M", "700M")
        .extra(&netplan_step())
        .yaml();
    let hc = trident_host::config::parse(&config).unwrap();
    let netplan = hc.os.netplan.as_ref().unwrap();
    assert!(
        trident_host::config::netplan_file_text(netplan)
            .unwrap()
            .contains(STATIC_ADDRESS)
    );
    let script = hc.scripts.post_configure[0].content.as_deref().unwrap();
    let inner = script
        .split("<<'END'\n")
        .nth(1)
        .and_then(|rest| rest.split("\nEND\n").next())
        .unwrap();
    let start_network = trident_host::config::parse(inner).unwrap();
    let netplan = start_network.management_os.netplan.as_ref().unwrap();
    assert!(
        trident_host::config::netplan_file_text(netplan)
            .unwrap()
            .contains(START_NETWORK_ADDRESS)
    );
}
