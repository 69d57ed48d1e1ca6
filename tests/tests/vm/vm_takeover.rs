//! Taking over a host upstream Trident's agent services, and handing it
//! back (`takeover` in `scripts/vm-matrix.sh`; needs upstream's binary,
//! v0.27.0, named by `UPSTREAM_TRIDENT`; tests/README.md).
//!
//! 1. **An upstream host.** The installer's tridentd lays the disk out as
//!    upstream does (ESP with `EFI/AZLA`, `AZLB` and their boot options,
//!    an A/B root pair, `/var/lib/trident` on a partition of its own, as
//!    upstream's datastore rule wants) and installs v1. On the installed
//!    OS, over SSH, the agent becomes upstream's: our system extension
//!    put aside, upstream's binary and units in `/usr`, our datastore and
//!    journal deleted, and upstream's `offline-initialize` writing its
//!    datastore from the Host Status its install records.
//! 2. **The swap to ours** (docs/servicing.md's system-extension steps):
//!    tridentd's `get status` equals upstream's; it A/B updates to v2 and
//!    v3, each committed on its volume, and rolls back an update whose
//!    health check fails.
//! 3. **Back to upstream** (the extension put aside, upstream's binary and
//!    units reinstalled on the volume tridentd last wrote, as an operator
//!    reinstalls its package): upstream's `get status` and `get
//!    rollback-chain` say what tridentd's said.
//!
//! Upstream's own servicing in this guest stops at its ESP step: it needs
//! the image's ESP to hold GRUB's EFI binary even for a UKI image (Azure
//! Linux chains shim to systemd-boot installed as `grubx64.efi`; the
//! test OS boots systemd-boot directly), see tests/README.md.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use trident_e2e::guest_shell::GuestShell;
use trident_e2e::test_os::TestOs;
use trident_e2e::upstream_status::{self, yaml};
use trident_e2e::vm::{READY_MARKER, Vm, VmSpec};
use trident_e2e::vm_orchestrator::{
    HttpServer, InstallerWork, install_following, part_uuid, ssh_key, trident_cli,
    update_following, wait_provisioned,
};

const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
const INSTALL_BOOT_TIMEOUT: Duration = Duration::from_secs(1500);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);

/// Upstream's units (`packaging/systemd/` at upstream's commit 95639188c),
/// as its package installs them.
const UPSTREAM_UNITS: [(&str, &str); 3] = [
    (
        "trident.service",
        "[Unit]\nDescription=Trident Agent\nAfter=network.target network-online.target \
         systemd-udev-settle.service\n\n[Service]\nExecStart=trident commit\nType=oneshot\n\n\
         [Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "tridentd.service",
        "[Unit]\nDescription=Trident Daemon\n\n[Service]\nExecStart=trident daemon\n",
    ),
    (
        "tridentd.socket",
        "[Unit]\nDescription=Trident Daemon gRPC Socket\n\n[Socket]\n\
         ListenStream=/run/trident/trident.sock\nSocketMode=0600\nSocketUser=root\n\
         SocketGroup=root\n\n[Install]\nWantedBy=sockets.target\n",
    ),
];

/// The scenario's VM, its disk and what it serves, across steps.
struct Takeover {
    vm: Vm,
    shell: GuestShell,
    http: HttpServer,
    target: std::path::PathBuf,
    ssh_key: String,
}

impl Takeover {
    /// Upstream's Host Configuration shape for `os`: the datastore's
    /// partition apart from the A/B pair; root logs in with the test's key.
    fn config(&self, os: &TestOs, hostname: &str, units: &[&str]) -> String {
        let cosi = os.cosi.path.file_name().unwrap().to_string_lossy();
        let url = format!("http://10.0.2.2:{}/{cosi}", self.http.port);
        format!(
            r#"image:
  url: {url}
  sha384: {sha384}
storage:
  disks:
  - id: os
    device: /dev/vda
    partitionTableType: gpt
    partitions:
    - {{ id: esp, type: esp, size: 160M }}
    - {{ id: root-a, type: root, size: 700M }}
    - {{ id: root-b, type: root, size: 700M }}
    - {{ id: trident, type: linux-generic, size: 64M }}
  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: esp, mountPoint: {{ path: /boot/efi, options: umask=0077 }} }}
  - {{ deviceId: root, mountPoint: / }}
  - {{ deviceId: trident, source: new, type: ext4, mountPoint: /var/lib/trident }}
os:
  hostname: {hostname}
  users:
  - name: root
    sshMode: key-only
    sshPublicKeys: ["{key}"]
health:
  checks:
  - name: units-up
    # Explicit: without runOn upstream's check runs on no servicing type,
    # ours on every one (and our `get status` prints the default).
    runOn: [all]
    systemdServices: [{units}]
    timeoutSeconds: 60
"#,
            sha384 = os.cosi.metadata_sha384,
            key = self.ssh_key,
            units = units.join(", "),
        )
    }

    /// The Host Status upstream's clean install records for `config` on
    /// this disk: its partitions by partition UUID, the disk's GUID,
    /// provisioned on volume A (what `offline-initialize` is given).
    fn upstream_install_status(&self, config: &str) -> String {
        let head = {
            use std::os::unix::fs::FileExt;
            let mut head = vec![0u8; 34 * 512];
            fs::File::open(&self.target)
                .unwrap()
                .read_exact_at(&mut head, 0)
                .unwrap();
            head
        };
        let gpt = trident_cosi::gpt::Gpt::parse_primary(&head, 512).unwrap();
        let paths: serde_json::Map<String, Value> = ["esp", "root-a", "root-b", "trident"]
            .into_iter()
            .map(|id| {
                let uuid = part_uuid(&self.target, id);
                (
                    id.to_owned(),
                    json!(format!("/dev/disk/by-partuuid/{uuid}")),
                )
            })
            .collect();
        let status = json!({
            "spec": yaml(config),
            "servicingState": "provisioned",
            "partitionPaths": paths,
            "diskUuids": { "os": gpt.disk_guid.to_string() },
            "abActiveVolume": "volume-a",
            "installIndex": 0,
        });
        // JSON is YAML: what upstream's reader takes.
        serde_json::to_string_pretty(&status).unwrap()
    }

    /// Upstream's `trident get status` in the guest.
    async fn upstream_status(&self) -> Value {
        yaml(
            &self
                .shell
                .ok("upstream's get status", "trident -v WARN get status")
                .await,
        )
    }

    /// Our `get status` once our commit service has committed, on `volume`.
    async fn provisioned_on(&self, volume: &str) -> String {
        let guest = self.vm.forward_tridentd().unwrap();
        guest.wait_until_answering(ANSWER_TIMEOUT).await.unwrap();
        let status = wait_provisioned(guest.path()).await;
        assert!(
            status.contains(&format!("abActiveVolume: volume-{volume}")),
            "{status}"
        );
        status
    }

    /// Our update to `config` (stage and finalize, Trident reboots).
    async fn update(&mut self, what: &str, config: String) {
        let phases = update_following(&mut self.vm, what, config).await;
        println!("{what}: phases {phases:?}");
    }

    async fn wait_ready(&mut self, what: &str, marker: &str) -> String {
        let boot = self
            .vm
            .wait_for_boot(READY_MARKER, INSTALL_BOOT_TIMEOUT)
            .await
            .unwrap();
        println!(
            "{what}: boot {:.1}s: {}",
            boot.duration.as_secs_f64(),
            boot.line
        );
        assert!(boot.line.contains(marker), "{marker} in {}", boot.line);
        self.shell.wait_until_up(BOOT_TIMEOUT).await;
        boot.line
    }
}

/// Upstream's units into `/usr/lib/systemd/system` and its binary into
/// `/usr/bin/trident`, with our extension unmerged and put aside (as an
/// operator reinstalls upstream's package); then the manager reloads.
const BECOME_UPSTREAM: &str = r#"
systemctl stop trident-rcp.service tridentd.socket tridentd.service trident.service || true
if [ -e /var/lib/extensions/trident.raw ]; then
    mkdir -p /root/ours && mv /var/lib/extensions/trident.raw /root/ours/
fi
systemd-sysext refresh
install -m 0755 /root/upstream-trident /usr/bin/trident && rm /root/upstream-trident
for unit in /root/upstream-units/*; do install -m 0644 "$unit" /usr/lib/systemd/system/; done
systemctl daemon-reload
systemctl enable tridentd.socket trident.service
systemctl start tridentd.socket
"#;

/// docs/servicing.md's swap to our extension.
const BECOME_OURS: &str = r#"
systemctl stop tridentd.socket tridentd.service
install -D -m 0644 /root/ours/trident.raw /var/lib/extensions/trident.raw
systemd-sysext refresh && systemd-sysusers && systemctl daemon-reload
systemctl enable --now tridentd.socket
systemctl start trident-rcp.service
"#;

/// Upstream's binary, without its debug sections (a debug build is
/// 224 MB, more than the test OS's root has free), and its units, to
/// `/root` in the guest for [`BECOME_UPSTREAM`].
async fn copy_upstream_agent(shell: &GuestShell, upstream: &str, work: &Path) {
    let stripped = work.join("upstream-trident");
    if !stripped.exists() {
        let out = std::process::Command::new("strip")
            .arg("-o")
            .arg(&stripped)
            .arg(upstream)
            .output()
            .expect("strip (package binutils)");
        assert!(out.status.success(), "strip: {out:?}");
    }
    shell.copy_to(&stripped, "/root/upstream-trident").await;
    let units = work.join("upstream-units");
    fs::create_dir_all(&units).unwrap();
    for (name, text) in UPSTREAM_UNITS {
        fs::write(units.join(name), text).unwrap();
    }
    shell
        .ok("upstream's units dir", "mkdir -p /root/upstream-units")
        .await;
    for (name, _) in UPSTREAM_UNITS {
        shell
            .copy_to(&units.join(name), &format!("/root/upstream-units/{name}"))
            .await;
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for many minutes with upstream's binary: scripts/vm-matrix.sh takeover"]
async fn matrix_a_host_upstreams_agent_services_is_taken_over_and_handed_back() {
    let upstream = upstream_status::upstream_binary()
        .expect("set UPSTREAM_TRIDENT to upstream Trident's binary (v0.27.0)");
    let started = std::time::Instant::now();
    let artifacts = trident_e2e::vm::artifacts_dir("takeover").unwrap();
    let work = InstallerWork::build("trident-vm-takeover-", &["v1", "v2", "v3"]).await;
    let (v1, v2, v3) = (
        work.versions[0].clone(),
        work.versions[1].clone(),
        work.versions[2].clone(),
    );
    let target = work.blank_disk("target.img", 2 << 30);
    let spec = VmSpec::new("takeover", &artifacts)
        .disk(&target)
        .disk(&work.installer)
        .orchestrator(&v1.rcp)
        .ssh();
    let vm = Vm::start(spec).unwrap();
    let port = vm.ssh_port().unwrap();
    let key = ssh_key(work.dir.path(), "trident-vm-takeover");
    let mut t = Takeover {
        vm,
        shell: GuestShell::new(port, &work.dir.path().join("id_ed25519")),
        http: HttpServer::start(work.dir.path()),
        target,
        ssh_key: key,
    };
    t.vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT)
        .await
        .unwrap();

    // 1. The disk laid out as upstream lays it out, v1 on A.
    let config_v1 = t.config(&v1, "upstream-v1", &["systemd-journald.service"]);
    install_following(&mut t.vm, config_v1.clone(), None).await;
    t.wait_ready("v1 on A", "version=v1 ").await;
    // Wait for our commit, so nothing of ours runs when the agent changes.
    t.provisioned_on("a").await;
    copy_upstream_agent(&t.shell, &upstream, work.dir.path()).await;
    let status_file = work.dir.path().join("upstream-status.yaml");
    fs::write(&status_file, t.upstream_install_status(&config_v1)).unwrap();
    t.shell
        .copy_to(&status_file, "/root/upstream-status.yaml")
        .await;
    t.shell.ok("become an upstream host", BECOME_UPSTREAM).await;
    t.shell
        .ok(
            "upstream's datastore, written by upstream's binary",
            "rm -rf /var/lib/trident/* && trident -v WARN offline-initialize /root/upstream-status.yaml",
        )
        .await;
    let theirs = t.upstream_status().await;
    assert_eq!(theirs["servicingState"], "provisioned", "{theirs:#?}");

    // 2. The swap to ours: tridentd reads the host as upstream left it,
    // updates, commits and rolls back.
    t.shell.ok("become ours", BECOME_OURS).await;
    let ours = t.provisioned_on("a").await;
    upstream_status::assert_status_matches("taken over", &yaml(&ours), &theirs);
    let config_v2 = t.config(
        &v2,
        "upstream-v2",
        &["systemd-journald.service", "tridentd.socket"],
    );
    t.update("update to v2", config_v2).await;
    t.wait_ready("v2 on B", "version=v2 ").await;
    t.provisioned_on("b").await;
    let config_v3 = t.config(
        &v3,
        "upstream-v3",
        &["systemd-journald.service", "tridentd.socket"],
    );
    t.update("update to v3", config_v3).await;
    t.wait_ready("v3 on A", "version=v3 ").await;
    t.provisioned_on("a").await;
    let bad = t.config(&v1, "upstream-bad", &[NEVER_ACTIVE]);
    t.update("failing update", bad).await;
    t.wait_ready("trial of B", "version=v1 ").await;
    t.wait_ready("back on A", "version=v3 ").await;
    let left = t.provisioned_on("a").await;
    assert!(left.contains("lastError:"), "{left}");
    let guest = t.vm.forward_tridentd().unwrap();
    let our_chain = yaml(&trident_cli(guest.path(), &["get", "rollback-chain"]).await);

    // 3. Handed back: upstream's binary reads the host as tridentd left it.
    copy_upstream_agent(&t.shell, &upstream, work.dir.path()).await;
    t.shell.ok("upstream's agent back", BECOME_UPSTREAM).await;
    let theirs = t.upstream_status().await;
    // Upstream reads the stamp of our rows, a version its rules accept.
    let stamp = theirs["tridentVersion"].as_str().unwrap_or_default();
    assert!(stamp.starts_with("0.27.0+tridentd."), "{stamp}");
    let mut left = yaml(&left);
    left["tridentVersion"] = theirs["tridentVersion"].clone();
    upstream_status::assert_status_matches("handed back", &left, &theirs);
    let their_chain = yaml(
        &t.shell
            .ok(
                "upstream's get rollback-chain",
                "trident -v WARN get rollback-chain",
            )
            .await,
    );
    assert_eq!(
        upstream_status::chain_names(&our_chain),
        upstream_status::chain_names(&their_chain),
        "the rollback chain upstream computes from what tridentd wrote"
    );
    println!(
        "timing: takeover scenario {:.1}s",
        started.elapsed().as_secs_f64()
    );
    t.vm.stop();
}

/// A unit no test OS has: `systemctl is-active` says inactive forever.
const NEVER_ACTIVE: &str = "trident-never-active.service";
