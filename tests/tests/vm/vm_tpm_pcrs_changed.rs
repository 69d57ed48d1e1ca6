//! An A/B update on a host whose TPM 2.0 PCRs changed since the install
//! (issue 24, case 4), in a UEFI VM with a software TPM (`VmSpec::tpm`).
//! `#[ignore]`d in the plain run; `scripts/vm-matrix.sh tpm-pcrs-changed`
//! runs it. Serial logs stay in `target/vm-artifacts/tpm_pcrs_changed/`.
//!
//! The installer installs v1 (A/B root pair, `/srv` on a LUKS2 volume
//! sealed to PCR 7, no recovery key: the TPM alone opens it); v1 boots
//! with `/srv` unlocked and commits. Then PCR 7 changes: the update's own
//! preServicing script extends it (`tpm2_pcrextend`), as a firmware or
//! Secure Boot key update would between two boots, after checking that the
//! TPM unsealed the key until then and refuses now. The A/B update to v2
//! fails with `servicing/tpm-unseal-failed` naming the volume and PCR 7
//! before anything is written: the inactive root stays blank, the host
//! stays provisioned on volume A, the guest does not reboot.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use trident_e2e::fixture::{AbHostConfig, ScriptHook};
use trident_e2e::test_os::TestOs;
use trident_e2e::vm::{self, READY_MARKER, Vm, VmSpec};
use trident_e2e::vm_orchestrator::{
    HttpServer, InstallerWork, install_following, start_servicing, trident_cli, wait_provisioned,
};
use trident_proto::v1::{
    FinalizeUpdateRequest, HostConfiguration, RebootHandling, RebootManagement, StageUpdateRequest,
    StatusCode, UpdateRequest, servicing_response, update_service_client::UpdateServiceClient,
};

const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);
const INSTALL_BOOT_TIMEOUT: Duration = Duration::from_secs(1500);

/// The update's preServicing script: the TPM unseals `/srv`'s key (the
/// positive control: the token plugin and the TPM work), PCR 7 is extended
/// with a digest no boot measures, and then the TPM refuses.
const EXTEND_PCR_7: &str = r#"set -e
export TPM2TOOLS_TCTI=device:/dev/tpmrm0
dev=$(cryptsetup status srv | awk '$1 == "device:" { print $2 }')
cryptsetup open --test-passphrase --token-only "$dev"
echo "TPM-UNSEALS-BEFORE $dev"
tpm2_pcrextend 7:sha256=5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
tpm2_pcrread sha256:7
if cryptsetup open --test-passphrase --token-only "$dev"; then
  echo "the TPM still unseals srv" >&2; exit 1
fi
echo "TPM-REFUSES-AFTER""#;

fn config(os: &TestOs, http_port: u16) -> AbHostConfig {
    let cosi = os.cosi.path.file_name().unwrap().to_string_lossy();
    AbHostConfig::new(format!("http://10.0.2.2:{http_port}/{cosi}"), "/dev/vda")
        .sha384(&os.cosi.metadata_sha384)
        .sizes("160M", "700M")
        .encrypted_srv("64M", None)
}

/// The first 16 MiB of partition `name` of the disk image `disk` (GPT
/// name): where an image write starts (the filesystem's superblock).
fn partition_bytes(disk: &Path, name: &str) -> Vec<u8> {
    let file = fs::File::open(disk).unwrap();
    let mut head = vec![0u8; 34 * 512];
    file.read_exact_at(&mut head, 0).unwrap();
    let gpt = trident_cosi::gpt::Gpt::parse_primary(&head, 512).unwrap();
    let entry = gpt.partitions().iter().find(|e| e.name == name).unwrap();
    let mut bytes = vec![0u8; entry.size_bytes(512).min(16 << 20) as usize];
    file.read_exact_at(&mut bytes, entry.start_offset(512))
        .unwrap();
    bytes
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/vm-matrix.sh tpm-pcrs-changed"]
async fn matrix_an_update_after_the_pcrs_changed_fails_naming_volume_and_pcrs_and_writes_nothing() {
    let started = std::time::Instant::now();
    let artifacts = vm::artifacts_dir("tpm_pcrs_changed").unwrap();
    let work = InstallerWork::build("trident-vm-tpm-pcrs-", &["v1", "v2"]).await;
    let (v1, v2) = (&work.versions[0], &work.versions[1]);
    let target = work.blank_disk("target.img", 2 << 30);

    let mut vm = Vm::start(
        VmSpec::new("tpm-pcrs", &artifacts)
            .disk(&target)
            .disk(&work.installer)
            .tpm()
            .orchestrator(&v1.rcp),
    )
    .unwrap();
    vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT).await.unwrap();
    let http = HttpServer::start(work.dir.path());
    install_following(&mut vm, config(v1, http.port).yaml(), None).await;
    let boot = vm
        .wait_for_boot(READY_MARKER, INSTALL_BOOT_TIMEOUT)
        .await
        .unwrap();
    println!("installed v1: {}", boot.line);
    assert!(boot.line.contains("version=v1 "), "{}", boot.line);
    assert!(
        boot.line.contains("crypt=srv:active:/srv,"),
        "/srv unlocked by the TPM alone: {}",
        boot.line
    );
    let guest = vm.forward_tridentd().unwrap();
    guest.wait_until_answering(ANSWER_TIMEOUT).await.unwrap();
    let status = wait_provisioned(guest.path()).await;
    for wanted in [
        "abActiveVolume: volume-a",
        "deviceName: srv",
        "recoveryKey: false",
    ] {
        assert!(status.contains(wanted), "{wanted} in\n{status}");
    }
    let root_b = partition_bytes(&target, "root-b");
    assert!(
        root_b.iter().all(|&b| b == 0),
        "root-b is blank before the update"
    );

    // The update to v2, whose preServicing script changes PCR 7 first.
    let update = config(v2, http.port)
        .script(ScriptHook::PreServicing, "extend-pcr-7", EXTEND_PCR_7)
        .yaml();
    let channel = trident_e2e::uds_channel(guest.path()).await.unwrap();
    let client = UpdateServiceClient::new(channel);
    let request = UpdateRequest {
        stage: Some(StageUpdateRequest {
            config: Some(HostConfiguration { config: update }),
        }),
        finalize: Some(FinalizeUpdateRequest {
            reboot: Some(RebootManagement {
                handling: RebootHandling::TridentHandlesReboot as i32,
            }),
        }),
    };
    let mut stream = start_servicing(|| {
        let (mut client, request) = (client.clone(), request.clone());
        async move { client.update(request).await }
    })
    .await;
    let (mut completed, mut script_lines) = (None, Vec::new());
    while let Some(item) = stream.next().await {
        match item.unwrap().response {
            Some(servicing_response::Response::Completed(c)) => completed = Some(c),
            Some(servicing_response::Response::Log(log))
                if log.target == "script::extend-pcr-7" =>
            {
                println!("update log: {}", log.message);
                script_lines.push(log.message);
            }
            _ => {}
        }
    }
    for wanted in ["TPM-UNSEALS-BEFORE", "TPM-REFUSES-AFTER"] {
        assert!(
            script_lines.iter().any(|l| l.starts_with(wanted)),
            "{wanted} in the preServicing script's output: {script_lines:#?}"
        );
    }
    let completed = completed.expect("the update ended without Completed");
    assert_ne!(completed.status(), StatusCode::Success, "{completed:?}");
    let error = completed.error.expect("the failed update's error");
    println!("update error: {error:?}");
    assert_eq!(error.subkind, "tpm-unseal-failed", "{error:?}");
    for wanted in ["'srv'", "/dev/mapper/srv", "PCR 7", "nothing was written"] {
        assert!(
            error.message.contains(wanted),
            "{wanted} in {}",
            error.message
        );
    }

    // Nothing written: root-b blank, the host provisioned on A, no reboot.
    assert!(
        partition_bytes(&target, "root-b").iter().all(|&b| b == 0),
        "root-b was written"
    );
    let status = trident_cli(guest.path(), &["get", "status"]).await;
    for wanted in ["servicingState: provisioned", "abActiveVolume: volume-a"] {
        assert!(status.contains(wanted), "{wanted} in\n{status}");
    }
    let last = trident_cli(guest.path(), &["get", "last-error"]).await;
    assert!(last.contains("tpm-unseal-failed"), "{last}");
    assert!(
        vm.wait_for_serial("reboot: machine restart", Duration::from_secs(20))
            .await
            .is_err(),
        "the guest rebooted after a failed update"
    );
    println!(
        "timing: tpm-pcrs-changed scenario {:.1}s",
        started.elapsed().as_secs_f64()
    );
    vm.stop();
    println!("serial log kept at {}", vm.serial_log().display());
}
