//! Hosts upstream Trident serviced, taken over by the real `tridentd` on a
//! disk-image file (issue 36). Each starts from a datastore upstream's own
//! binary (v0.27.0) wrote (`host/tests/fixtures/upstream-datastores/
//! takeover-*`, for the disk `/run/trident-takeover/os.img`), and a disk
//! laid out as upstream lays it out for that Host Status: a GPT with its
//! disk GUID and partition UUIDs, partitions in the configured order and
//! sizes, named by id (systemd-repart's way). The daemon runs in a mount
//! namespace of its own where the test's folder is `/run/trident-takeover`.
//!
//! tridentd finds the partitions upstream names by UUID in that GPT, says
//! what upstream's `get status` said, finishes what upstream began
//! (finalizes a staged install or update, commits or rolls back a
//! finalized one) and services the host on (A/B update, manual rollback by
//! upstream's chain); upstream's table's newest row says what upstream's
//! reader needs, checked with our reader of its format and, with
//! `UPSTREAM_TRIDENT` set, by upstream's binary (`get status`, `get
//! rollback-chain`).

#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use serde_json::Value;
use trident_cosi::gpt::{Gpt, PartitionSpec};
use trident_e2e::fixture::CosiImage;
use trident_e2e::servicing_support::{Clients, IMAGE_DISK_BYTES, collect};
use trident_e2e::upstream_status::{self, assert_status_matches, chain_names, recorded};
use trident_e2e::{Daemon, mini_os};
use trident_host::datastore::Datastore;
use trident_host::datastore::upstream::format::{self, Decoded};
use trident_proto::v1::host_status_service_client::HostStatusServiceClient;
use trident_proto::v1::{GetHostStatusRequest, ServicingKind};
use trident_proto::v1preview::{
    self, AbVolumeState, CheckRollbackKind, ManualRollbackKind, ServicingState,
};
use uuid::Uuid;

/// Where the fixtures' Host Status puts the disk.
const DISK_DIR: &str = "/run/trident-takeover";
const DISK_BYTES: u64 = 128 << 20;
/// The GUIDs of `inputs/takeover/*.yaml`.
const DISK_GUID: &str = "c0ffee00-7a4c-4e61-8b3d-9f01a2b3c4d5";
/// `(id, GPT type, MiB)` in the configuration's order; partition `n` has
/// the UUID `d5a1e7c2-6f3b-4a8e-b1c9-2e4f6a8c0d1<n>` (from 1).
const PARTITIONS: [(&str, &str, u64); 4] = [
    ("esp", "c12a7328-f81f-11d2-ba4b-00a0c93ec93b", 8),
    ("root-a", "4f68bce3-e8cd-4db1-96e7-fbcaf984b709", 48),
    ("root-b", "4f68bce3-e8cd-4db1-96e7-fbcaf984b709", 48),
    ("trident", "0fc63daf-8483-4772-8e79-3d69d8477de4", 16),
];
/// Bytes at the start of a partition the tests fill and compare.
const MARKED_BYTES: u64 = 1 << 20;

/// The partitions upstream's Host Status names, as it names them.
fn partition_paths() -> Value {
    PARTITIONS
        .iter()
        .enumerate()
        .map(|(n, (id, _, _))| {
            (
                (*id).to_owned(),
                Value::from(format!("/dev/disk/by-partuuid/{}", partuuid(n))),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn partuuid(n: usize) -> Uuid {
    Uuid::parse_str(&format!("d5a1e7c2-6f3b-4a8e-b1c9-2e4f6a8c0d1{}", n + 1)).unwrap()
}

/// A host upstream left: its disk and tridentd's state directory holding
/// upstream's datastore.
struct UpstreamHost {
    /// Mounted at [`DISK_DIR`] in the daemon's namespace.
    dir: tempfile::TempDir,
    gpt: Gpt,
}

impl UpstreamHost {
    /// The disk laid out for fixture `name`, each volume's first MiB
    /// marked (what upstream wrote there), and its datastore.
    fn new(name: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("upstream-takeover-")
            .tempdir()
            .unwrap();
        let disk = dir.path().join("os.img");
        let file = File::create(&disk).unwrap();
        file.set_len(DISK_BYTES).unwrap();
        let specs: Vec<PartitionSpec> = PARTITIONS
            .iter()
            .enumerate()
            .map(|(n, (id, type_guid, mib))| PartitionSpec {
                type_guid: Uuid::parse_str(type_guid).unwrap(),
                unique_guid: partuuid(n),
                name: (*id).to_owned(),
                size: Some(mib << 20),
                attributes: 0,
            })
            .collect();
        let gpt = Gpt::build(DISK_BYTES, 512, Uuid::parse_str(DISK_GUID).unwrap(), &specs).unwrap();
        gpt.write_primary(&file).unwrap();
        gpt.write_backup(&file).unwrap();
        let host = UpstreamHost { dir, gpt };
        for (n, (id, _, _)) in PARTITIONS.iter().enumerate() {
            host.mark(id, n as u8 + 1);
        }
        std::fs::create_dir_all(host.state()).unwrap();
        std::fs::copy(
            upstream_status::fixtures().join(format!("{name}.sqlite")),
            host.datastore(),
        )
        .unwrap();
        host
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn datastore(&self) -> PathBuf {
        self.state().join("datastore.sqlite")
    }

    fn entry(&self, id: &str) -> (u64, u64) {
        let entry = self.gpt.partitions().iter().find(|e| e.name == id).unwrap();
        (entry.start_offset(512), entry.size_bytes(512))
    }

    fn mark(&self, id: &str, byte: u8) {
        let file = File::options()
            .write(true)
            .open(self.dir.path().join("os.img"))
            .unwrap();
        file.write_all_at(&vec![byte; MARKED_BYTES as usize], self.entry(id).0)
            .unwrap();
    }

    /// SHA-384 of the first MiB of partition `id`.
    fn hash(&self, id: &str) -> String {
        let file = File::open(self.dir.path().join("os.img")).unwrap();
        let mut buf = vec![0u8; MARKED_BYTES as usize];
        file.read_exact_at(&mut buf, self.entry(id).0).unwrap();
        trident_cosi::hash::sha384_hex(&buf)
    }

    /// Simulates the reboot upstream's finalize asked for: the host came
    /// up on `booted` (the record boot control's file).
    fn booted(&self, next: &str, booted: &str) {
        std::fs::write(
            self.state().join("boot-record.json"),
            format!(r#"{{"nextBoot": "{next}", "booted": "{booted}"}}"#),
        )
        .unwrap();
    }

    /// `tridentd` (record reboots and boot control) on this state, in a
    /// mount namespace where this host's folder is [`DISK_DIR`].
    async fn daemon(&self) -> Daemon {
        std::fs::create_dir_all(DISK_DIR).unwrap();
        Daemon::builder()
            .args(["--inactivity-timeout", "0"])
            .state_dir(self.state())
            .wrapper([
                "unshare",
                "-m",
                "sh",
                "-c",
                r#"mount --bind "$0" /run/trident-takeover && exec "$@""#,
                self.dir.path().to_str().unwrap(),
            ])
            .spawn()
            .await
            .expect("start tridentd")
    }

    /// A consistent copy of the datastore (the daemon may hold it open).
    fn snapshot(&self) -> PathBuf {
        let copy = self
            .dir
            .path()
            .join(format!("copy-{}.sqlite", Uuid::new_v4()));
        Datastore::open_read_only(self.datastore())
            .unwrap()
            .snapshot_to(&copy)
            .unwrap();
        copy
    }

    /// Upstream's table's newest row, read as upstream's format.
    fn newest_upstream_row(&self) -> Decoded {
        let rows = Datastore::open_read_only(self.snapshot())
            .unwrap()
            .upstream_rows(1)
            .unwrap();
        format::decode(&rows[0].contents).unwrap()
    }

    /// With `UPSTREAM_TRIDENT`: upstream's binary reads the datastore as
    /// ours does (`get status`) and offers the rollbacks `chain` names.
    fn upstream_agrees(&self, what: &str, chain: &[String]) {
        let Some(trident) = upstream_status::upstream_binary() else {
            eprintln!("{what}: set UPSTREAM_TRIDENT to check with upstream's binary too");
            return;
        };
        let copy = self.snapshot();
        let status = Datastore::open_read_only(&copy)
            .unwrap()
            .host_status()
            .unwrap();
        let mut ours = upstream_status::yaml(&status.to_yaml().unwrap());
        let theirs = upstream_status::upstream_get(&trident, &copy, "status");
        ours["tridentVersion"] = theirs["tridentVersion"].clone();
        assert_status_matches(&format!("{what}: upstream's get status"), &ours, &theirs);
        let theirs = upstream_status::upstream_get(&trident, &copy, "rollback-chain");
        assert_eq!(
            chain_names(&theirs),
            chain,
            "{what}: upstream's get rollback-chain"
        );
    }
}

/// `get status` from the daemon, as a value.
async fn get_status(daemon: &Daemon) -> Value {
    let text = HostStatusServiceClient::new(daemon.channel().await.unwrap())
        .get_host_status(GetHostStatusRequest {})
        .await
        .unwrap()
        .into_inner()
        .host_status;
    upstream_status::yaml(&text)
}

async fn rollback_chain(c: &mut Clients) -> Vec<String> {
    c.rollback
        .get_rollback_chain(v1preview::GetRollbackChainRequest {})
        .await
        .unwrap()
        .into_inner()
        .rollback_chain
}

async fn provisioned_config(c: &mut Clients) -> String {
    c.status
        .get_provisioned_config(v1preview::GetConfigRequest {})
        .await
        .unwrap()
        .into_inner()
        .config
        .map(|c| c.config)
        .unwrap_or_default()
}

/// Right after the takeover: `get status` says what upstream's said (plus
/// where each partition is, found by its UUID), and the rollback chain is
/// upstream's.
async fn assert_taken_over(name: &str, host: &UpstreamHost, d: &Daemon, c: &mut Clients) {
    d.wait_for_stderr(
        "upstream Trident's newest row",
        std::time::Duration::from_secs(30),
    )
    .await
    .unwrap();
    let ours = get_status(d).await;
    assert_status_matches(name, &ours, &recorded(name, "status"));
    assert_eq!(ours["partitionPaths"], partition_paths(), "{name}");
    for (n, (id, _, mib)) in PARTITIONS.iter().enumerate() {
        let layout = &ours["layout"][id];
        assert_eq!(
            layout["device"],
            format!("{DISK_DIR}/os.img"),
            "{name} {id}"
        );
        assert_eq!(layout["number"], n + 1, "{name} {id}");
        assert_eq!(layout["offset"], host.entry(id).0, "{name} {id}");
        assert_eq!(layout["size"], mib << 20, "{name} {id}");
    }
    assert_eq!(
        rollback_chain(c).await,
        chain_names(&recorded(name, "rollback-chain")),
        "{name}"
    );
}

/// Upstream's newest row after tridentd's commit: what upstream's reader
/// needs to find the host provisioned on `volume` with `image`.
fn assert_newest_row_provisioned(host: &UpstreamHost, volume: &str, image: &str) {
    let row = host.newest_upstream_row();
    let doc = &row.document;
    assert_eq!(doc["servicingState"], "provisioned", "{doc:#}");
    assert_eq!(doc["abActiveVolume"], volume, "{doc:#}");
    assert_eq!(doc["partitionPaths"], partition_paths(), "{doc:#}");
    assert_eq!(doc["diskUuids"]["os"], DISK_GUID, "{doc:#}");
    assert_eq!(doc["installIndex"], 0, "{doc:#}");
    assert!(
        doc["spec"]["image"]["url"]
            .as_str()
            .unwrap()
            .ends_with(image),
        "{doc:#}"
    );
    assert!(doc.get("layout").is_none(), "no addition of ours: {doc:#}");
    assert!(
        row.trident_version.starts_with("0.27.0+tridentd"),
        "{}",
        row.trident_version
    );
}

/// The configuration upstream provisioned with `image` in place of its
/// image: the same storage (an A/B update cannot change it).
fn update_config(image: &trident_cosi::writer::FixtureOutput) -> String {
    format!(
        r#"image:
  url: file://{url}
  sha384: {sha384}
storage:
  disks:
  - id: os
    device: {DISK_DIR}/os.img
    partitionTableType: gpt
    partitions:
    - {{ id: esp, type: esp, size: 8M }}
    - {{ id: root-a, type: root, size: 48M }}
    - {{ id: root-b, type: root, size: 48M }}
    - {{ id: trident, type: linux-generic, size: 16M }}
  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: esp, mountPoint: {{ path: /boot/efi, options: umask=0077 }} }}
  - {{ deviceId: root, mountPoint: / }}
  - {{ deviceId: trident, source: new, type: ext4, mountPoint: /var/lib/trident }}
"#,
        url = image.path.display(),
        sha384 = image.metadata_sha384,
    )
}

/// A host upstream installed: taken over, updated A/B by tridentd (stage,
/// finalize, commit), then rolled back by upstream's chain to what
/// upstream installed.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_upstream_installed_is_updated_and_rolled_back_by_tridentd() {
    if !mini_os::running_as_root() {
        eprintln!("SKIPPED: needs root (a mount namespace)");
        return;
    }
    let name = "takeover-provisioned";
    let host = UpstreamHost::new(name);
    let d = host.daemon().await;
    let mut c = Clients::new(&d).await;
    assert_taken_over(name, &host, &d, &mut c).await;
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    let upstreams_a = host.hash("root-a");

    // An A/B update: volume B written, upstream's A untouched.
    let image = CosiImage::new(IMAGE_DISK_BYTES, 3601).write(&host.dir.path().join("v3.cosi"));
    let config = update_config(&image);
    let stage = c.update_stage(&config).await;
    stage.assert_success();
    let phases = stage.phases();
    assert!(phases.iter().any(|p| p == "write/root-b"), "{phases:?}");
    assert!(!phases.iter().any(|p| p == "write/root-a"), "{phases:?}");
    assert_eq!(c.state().await, ServicingState::UpdateAbStaged);
    assert_ne!(host.hash("root-b"), marked(3), "volume B written");
    c.update_finalize().await.assert_success();
    assert_eq!(c.state().await, ServicingState::UpdateAbFinalized);
    let commit = c.commit().await;
    commit.assert_success();
    assert_eq!(
        commit.completed().servicing_kind,
        Some(ServicingKind::AbUpdate as i32)
    );
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeB);
    assert_eq!(
        host.hash("root-a"),
        upstreams_a,
        "upstream's volume untouched"
    );
    assert_newest_row_provisioned(&host, "volume-b", "v3.cosi");
    // Upstream's rule: the update may be rolled back, to what upstream
    // installed.
    let chain = rollback_chain(&mut c).await;
    assert_eq!(
        chain,
        ["ab:volume-a:https://images.example.com/azl3-takeover-1.cosi"]
    );
    host.upstream_agrees("tridentd's update of upstream's install", &chain);

    // The manual rollback the chain offers: back on A, upstream's
    // configuration current again, nothing left to roll back.
    let check = c
        .rollback
        .check_rollback(v1preview::CheckRollbackRequest {
            kind: ManualRollbackKind::AnyRollbackRequested as i32,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(check.kind(), CheckRollbackKind::AbRollbackExpected);
    let rollback = collect(
        c.rollback
            .rollback(v1preview::RollbackRequest {
                kind: ManualRollbackKind::AbRollbackRequested as i32,
                finalize: None,
            })
            .await,
    )
    .await;
    rollback.assert_success();
    assert_eq!(c.state().await, ServicingState::ManualRollbackAbFinalized);
    c.commit().await.assert_success();
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    assert!(
        provisioned_config(&mut c)
            .await
            .contains("azl3-takeover-1.cosi"),
        "upstream's configuration"
    );
    assert_newest_row_provisioned(&host, "volume-a", "azl3-takeover-1.cosi");
    assert!(rollback_chain(&mut c).await.is_empty());
    host.upstream_agrees("tridentd's rollback to upstream's install", &[]);
}

/// The SHA-384 of a partition's first MiB as [`UpstreamHost::new`] marks
/// the `n`th partition (from 1).
fn marked(n: u8) -> String {
    trident_cosi::hash::sha384_hex(&vec![n; MARKED_BYTES as usize])
}

/// An A/B update upstream staged: tridentd finalizes it (writing no image)
/// and commits it after the reboot.
#[tokio::test(flavor = "multi_thread")]
async fn an_update_upstream_staged_is_finalized_and_committed_by_tridentd() {
    if !mini_os::running_as_root() {
        eprintln!("SKIPPED: needs root (a mount namespace)");
        return;
    }
    let name = "takeover-ab-update-staged";
    let host = UpstreamHost::new(name);
    let d = host.daemon().await;
    let mut c = Clients::new(&d).await;
    assert_taken_over(name, &host, &d, &mut c).await;
    assert_eq!(c.state().await, ServicingState::UpdateAbStaged);
    let finalize = c.update_finalize().await;
    finalize.assert_success();
    assert_eq!(c.state().await, ServicingState::UpdateAbFinalized);
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(host.state().join("boot-record.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["nextBoot"], "volume-b");
    let commit = c.commit().await;
    commit.assert_success();
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeB);
    // What upstream wrote on both volumes is as it was.
    for (n, id) in [(2, "root-a"), (3, "root-b")] {
        assert_eq!(host.hash(id), marked(n), "{id}");
    }
    assert!(
        provisioned_config(&mut c)
            .await
            .contains("azl3-takeover-2.cosi")
    );
    assert_newest_row_provisioned(&host, "volume-b", "azl3-takeover-2.cosi");
    let chain = rollback_chain(&mut c).await;
    assert_eq!(
        chain,
        ["ab:volume-a:https://images.example.com/azl3-takeover-1.cosi"]
    );
    host.upstream_agrees("upstream's staged update finalized by tridentd", &chain);
}

/// An A/B update upstream finalized, the host rebooted: tridentd's commit
/// on boot commits it when the new volume came up, and sends the host
/// back (then settles it on the old volume, upstream's configuration
/// current again) when the old one did.
#[tokio::test(flavor = "multi_thread")]
async fn an_update_upstream_finalized_is_committed_or_rolled_back_on_boot() {
    if !mini_os::running_as_root() {
        eprintln!("SKIPPED: needs root (a mount namespace)");
        return;
    }
    let name = "takeover-ab-update-finalized";
    let host = UpstreamHost::new(name);
    host.booted("volume-b", "volume-b");
    let d = host.daemon().await;
    let mut c = Clients::new(&d).await;
    assert_taken_over(name, &host, &d, &mut c).await;
    let commit = c.commit().await;
    commit.assert_success();
    assert_eq!(
        commit.completed().servicing_kind,
        Some(ServicingKind::AbUpdate as i32)
    );
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeB);
    assert_newest_row_provisioned(&host, "volume-b", "azl3-takeover-2.cosi");
    drop(d);

    // The firmware fell back to volume A instead.
    let host = UpstreamHost::new(name);
    host.booted("volume-b", "volume-a");
    let d = host.daemon().await;
    let mut c = Clients::new(&d).await;
    let commit = c.commit().await;
    assert!(!commit.succeeded());
    assert_eq!(commit.error().subkind, "booted-wrong-volume");
    assert_eq!(c.state().await, ServicingState::UpdateAbHealthCheckFailed);
    // As upstream records a failed update: the failed configuration and
    // the running one, so upstream's agent settles it the same way.
    let row = host.newest_upstream_row();
    assert_eq!(
        row.document["servicingState"],
        "ab-update-health-check-failed"
    );
    assert_eq!(
        row.document["spec"]["image"]["url"],
        "https://images.example.com/azl3-takeover-2.cosi"
    );
    assert_eq!(
        row.document["specOld"]["image"]["url"],
        "https://images.example.com/azl3-takeover-1.cosi"
    );
    assert!(row.document["lastError"].is_object(), "{:#}", row.document);
    host.upstream_agrees("tridentd's failed commit of upstream's update", &[]);
    // Back on A (the record says so already): settled, upstream's
    // configuration current, the error kept until the next servicing.
    c.commit().await.assert_success();
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    assert!(
        provisioned_config(&mut c)
            .await
            .contains("azl3-takeover-1.cosi")
    );
    assert!(c.last_error().await.is_some());
    assert_newest_row_provisioned(&host, "volume-a", "azl3-takeover-1.cosi");
}

/// A clean install upstream staged: tridentd finalizes it (volume A boots
/// next) and commits it after the reboot.
#[tokio::test(flavor = "multi_thread")]
async fn an_install_upstream_staged_is_finalized_and_committed_by_tridentd() {
    if !mini_os::running_as_root() {
        eprintln!("SKIPPED: needs root (a mount namespace)");
        return;
    }
    let name = "takeover-clean-install-staged";
    let host = UpstreamHost::new(name);
    let d = host.daemon().await;
    let mut c = Clients::new(&d).await;
    assert_taken_over(name, &host, &d, &mut c).await;
    let finalize = collect(
        c.install
            .install_finalize(v1preview::FinalizeInstallRequest { reboot: None })
            .await,
    )
    .await;
    finalize.assert_success();
    assert_eq!(c.state().await, ServicingState::InstallFinalized);
    c.commit().await.assert_success();
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    assert_eq!(host.hash("root-a"), marked(2));
    assert_newest_row_provisioned(&host, "volume-a", "azl3-takeover-1.cosi");
    host.upstream_agrees("upstream's staged install finalized by tridentd", &[]);
}
