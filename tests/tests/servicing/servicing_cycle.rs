//! End to end over gRPC on disk-image files: install → A/B update → commit,
//! failed health check, manual rollback.

#![allow(clippy::unwrap_used)]

use trident_e2e::daemon;
use trident_e2e::servicing_support::{self, Clients, Fixture};
use trident_proto::v1::{self, RebootStatus, ServicingKind, TridentErrorKind};
use trident_proto::v1preview::{
    self, AbVolumeState, CheckRollbackKind, ManualRollbackKind, ServicingState,
};

#[tokio::test(flavor = "multi_thread")]
async fn install_update_commit_cycle_tracks_state_and_active_volume() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 1, None);
    let v2 = fx.image("v2", 2, None);
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    assert_eq!(c.state().await, ServicingState::NotProvisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::NoVolume);

    // Install: GPT + images into the A volumes, finalized, reboot recorded.
    // Trident handles it: REBOOT_STARTED as upstream's server answers, even
    // with `--reboot record` (nothing reboots; the record is the reboot).
    let install = c.install(&fx.config(&v1, "")).await;
    install.assert_success();
    let done = install.completed();
    assert_eq!(done.reboot_status, RebootStatus::RebootStarted as i32);
    assert_eq!(
        done.servicing_kind,
        Some(ServicingKind::CleanInstall as i32)
    );
    assert_eq!(
        done.image_hash.as_deref(),
        Some(format!("sha384:{}", v1.metadata_sha384).as_str())
    );
    let phases = install.phases();
    for phase in [
        "validate",
        "partition",
        "download",
        "write/esp",
        "write/root-a",
        "verify",
        "finalize",
    ] {
        assert!(
            phases.iter().any(|p| p == phase),
            "phase {phase} missing in {phases:?}"
        );
    }
    let root_a_bytes = install
        .progress
        .iter()
        .filter(|p| p.phase_id == "write/root-a")
        .map(|p| p.current)
        .max()
        .unwrap();
    assert!(
        root_a_bytes > 8 << 20,
        "byte counts reported: {root_a_bytes}"
    );
    let started = install.started.as_ref().unwrap();
    assert_eq!(started.trace_id.len(), 32, "W3C trace id: {started:?}");
    assert!(
        started.cursor.as_ref().is_some_and(|c| c.sequence > 0),
        "resume cursor: {started:?}"
    );
    assert_eq!(c.state().await, ServicingState::InstallFinalized);
    assert_eq!(fx.boot_record(&d)["nextBoot"], "volume-a");
    let reboots = std::fs::read_to_string(d.state_dir().join("reboot-requests.log")).unwrap();
    assert_eq!(reboots.lines().count(), 1, "{reboots}");
    let empty_b = fx.partition_hash("root-b");

    // Commit after the (simulated) reboot into volume A.
    c.commit().await.assert_success();
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    assert_eq!(fx.boot_record(&d)["booted"], "volume-a");
    let root_a = fx.partition_hash("root-a");

    // What each configuration would need now.
    let mut validation =
        v1preview::validation_service_client::ValidationServiceClient::new(c.channel.clone());
    for (config, want) in [
        (
            fx.config(&v1, ""),
            v1preview::ServicingType::NoActiveServicing,
        ),
        (fx.config(&v2, ""), v1preview::ServicingType::AbUpdate),
    ] {
        let got = validation
            .get_required_servicing_type(v1preview::GetRequiredServicingTypeRequest {
                config: Some(servicing_support::hc(&config)),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(got.servicing_type(), want);
    }
    // The same configuration again is nothing to do.
    let again = c.update_stage(&fx.config(&v1, "")).await;
    again.assert_success();
    assert_eq!(
        again.completed().servicing_kind,
        Some(ServicingKind::NoneRequired as i32)
    );
    assert_eq!(c.state().await, ServicingState::Provisioned);

    // Stage the update: B is written, A untouched.
    let stage = c.update_stage(&fx.config(&v2, "")).await;
    stage.assert_success();
    assert!(
        stage.phases().iter().any(|p| p == "write/root-b"),
        "{:?}",
        stage.phases()
    );
    assert!(
        !stage
            .phases()
            .iter()
            .any(|p| p == "write/root-a" || p == "write/esp")
    );
    assert_eq!(c.state().await, ServicingState::UpdateAbStaged);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    assert_eq!(
        fx.partition_hash("root-a"),
        root_a,
        "active volume untouched"
    );
    let servicing = c
        .status
        .get_servicing_config(v1preview::GetConfigRequest {})
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap()
        .config;
    assert!(servicing.contains("v2.cosi"), "{servicing}");
    assert_ne!(
        fx.partition_hash("root-b"),
        empty_b,
        "inactive volume written"
    );

    // Finalize: next boot B.
    let fin = c.update_finalize().await;
    fin.assert_success();
    assert_eq!(
        fin.completed().reboot_status,
        RebootStatus::RebootStarted as i32
    );
    assert_eq!(c.state().await, ServicingState::UpdateAbFinalized);
    assert_eq!(fx.boot_record(&d)["nextBoot"], "volume-b");

    // Commit: booted B, provisioned on B.
    let commit = c.commit().await;
    commit.assert_success();
    assert_eq!(
        commit.completed().servicing_kind,
        Some(ServicingKind::AbUpdate as i32)
    );
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeB);
    assert_eq!(c.last_error().await, None);
    let provisioned = c
        .status
        .get_provisioned_config(v1preview::GetConfigRequest {})
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap()
        .config;
    assert!(provisioned.contains("v2.cosi"), "{provisioned}");
    let check = c
        .rollback
        .check_rollback(v1preview::CheckRollbackRequest {
            kind: ManualRollbackKind::AbRollbackRequested as i32,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(check.kind(), CheckRollbackKind::AbRollbackExpected);
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_health_check_records_health_check_failed_and_boots_back_to_the_old_volume() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 11, None);
    let v2 = fx.image("v2", 12, None);
    let checks = r#"health:
  checks:
  - name: app-ready
    runOn: [ab-update]
    content: "echo checking; echo app not ready >&2; exit 3"
    timeoutSeconds: 10
"#;
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    // The check only runs on A/B updates, so the install commits.
    c.provision(&fx.config(&v1, checks)).await;
    c.update_stage(&fx.config(&v2, checks))
        .await
        .assert_success();
    c.update_finalize().await.assert_success();

    let commit = c.commit().await;
    assert!(!commit.succeeded());
    let err = commit.error();
    assert_eq!(err.kind, TridentErrorKind::HealthChecksError as i32);
    assert_eq!(err.subkind, "health-check-failed");
    assert!(
        err.message.contains("app-ready") && err.message.contains("app not ready"),
        "{}",
        err.message
    );
    assert!(err.message.contains("exit status: 3"), "{}", err.message);
    assert!(
        commit
            .logs
            .iter()
            .any(|l| l.target == "script::app-ready" && l.message.contains("checking")),
        "script output streamed as logs: {:?}",
        commit
            .logs
            .iter()
            .map(|l| (&l.target, &l.message))
            .collect::<Vec<_>>()
    );
    assert_eq!(c.state().await, ServicingState::UpdateAbHealthCheckFailed);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    assert_eq!(fx.boot_record(&d)["nextBoot"], "volume-a");
    assert_eq!(
        c.last_error().await.unwrap().kind,
        TridentErrorKind::HealthChecksError as i32
    );

    // The host came back on A: commit makes it provisioned again, on A.
    let mut record = fx.boot_record(&d);
    record["booted"] = "volume-a".into();
    std::fs::write(d.state_dir().join("boot-record.json"), record.to_string()).unwrap();
    c.commit().await.assert_success();
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
}

#[tokio::test(flavor = "multi_thread")]
async fn manual_rollback_returns_to_the_previous_volume() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 21, None);
    let v2 = fx.image("v2", 22, None);
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;
    // Nothing to roll back to: upstream's stable v1 service and v1preview
    // both succeed, change nothing and say NONE_REQUIRED.
    let mut stable = v1::rollback_service_client::RollbackServiceClient::new(c.channel.clone());
    let nothing = servicing_support::collect(
        stable
            .rollback(v1::RollbackRequest {
                kind: v1::ManualRollbackKind::AnyRollbackRequested as i32,
                finalize: None,
            })
            .await,
    )
    .await;
    nothing.assert_success();
    assert_eq!(
        nothing.completed().servicing_kind,
        Some(ServicingKind::NoneRequired as i32)
    );
    assert_eq!(
        nothing.completed().reboot_status(),
        v1::RebootStatus::RebootNotRequired
    );
    let staged_nothing = servicing_support::collect(
        c.rollback
            .rollback_stage(v1preview::RollbackStageRequest {
                kind: ManualRollbackKind::RuntimeRollbackRequested as i32,
            })
            .await,
    )
    .await;
    staged_nothing.assert_success();
    assert_eq!(
        staged_nothing.completed().servicing_kind,
        Some(ServicingKind::NoneRequired as i32)
    );
    assert_eq!(c.state().await, ServicingState::Provisioned);
    let no = c
        .rollback
        .check_rollback(v1preview::CheckRollbackRequest { kind: 0 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        no.kind(),
        CheckRollbackKind::NoRollbackAvailable,
        "nothing to roll back to after install"
    );

    c.update_stage(&fx.config(&v2, "")).await.assert_success();
    c.update_finalize().await.assert_success();
    c.commit().await.assert_success();
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeB);
    let chain = c
        .rollback
        .get_rollback_chain(v1preview::GetRollbackChainRequest {})
        .await
        .unwrap()
        .into_inner()
        .rollback_chain;
    assert_eq!(chain.len(), 1);
    assert!(
        chain[0].starts_with("ab:volume-a:") && chain[0].contains("v1.cosi"),
        "{chain:?}"
    );

    let rollback = servicing_support::collect(
        c.rollback
            .rollback(v1preview::RollbackRequest {
                kind: ManualRollbackKind::AbRollbackRequested as i32,
                finalize: None,
            })
            .await,
    )
    .await;
    rollback.assert_success();
    assert_eq!(
        rollback.completed().servicing_kind,
        Some(ServicingKind::ManualRollbackAb as i32)
    );
    assert_eq!(c.state().await, ServicingState::ManualRollbackAbFinalized);
    assert_eq!(fx.boot_record(&d)["nextBoot"], "volume-a");
    c.commit().await.assert_success();
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    let provisioned = c
        .status
        .get_provisioned_config(v1preview::GetConfigRequest {})
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap()
        .config;
    assert!(provisioned.contains("v1.cosi"), "{provisioned}");

    // Upstream's chain: the update and its rollback cancel out, nothing is
    // left to roll back to.
    let chain = c
        .rollback
        .get_rollback_chain(v1preview::GetRollbackChainRequest {})
        .await
        .unwrap()
        .into_inner()
        .rollback_chain;
    assert!(chain.is_empty(), "{chain:?}");

    // Updated again, B is the next rollback: refused where upstream
    // refuses, a runtime rollback asked for while the next one would undo
    // an A/B update.
    c.update_stage(&fx.config(&v2, "")).await.assert_success();
    c.update_finalize().await.assert_success();
    c.commit().await.assert_success();
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeB);
    let mismatch = servicing_support::collect(
        stable
            .rollback(v1::RollbackRequest {
                kind: v1::ManualRollbackKind::RuntimeRollbackRequested as i32,
                finalize: None,
            })
            .await,
    )
    .await;
    assert!(!mismatch.succeeded());
    assert_eq!(mismatch.error().subkind, "invalid-rollback-expectation");
    assert_eq!(c.state().await, ServicingState::Provisioned);
}

/// Upstream refuses a rollback on a host that is not provisioned (and one
/// whose finalize has nothing staged): so do we, as a failed operation
/// naming the state.
#[tokio::test(flavor = "multi_thread")]
async fn a_rollback_on_a_host_that_is_not_provisioned_is_refused() {
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let mut stable = v1::rollback_service_client::RollbackServiceClient::new(c.channel.clone());
    let refused = servicing_support::collect(
        stable
            .rollback(v1::RollbackRequest {
                kind: v1::ManualRollbackKind::AnyRollbackRequested as i32,
                finalize: None,
            })
            .await,
    )
    .await;
    assert!(!refused.succeeded());
    let error = refused.error();
    assert_eq!(error.subkind, "invalid-rollback-state", "{error:?}");
    assert!(error.message.contains("not-provisioned"), "{error:?}");
    let finalize = servicing_support::collect(
        stable
            .rollback_finalize(v1::RollbackFinalizeRequest { reboot: None })
            .await,
    )
    .await;
    assert!(!finalize.succeeded());
    assert_eq!(finalize.error().subkind, "invalid-rollback-state");
    assert_eq!(c.state().await, ServicingState::NotProvisioned);
}

#[tokio::test(flavor = "multi_thread")]
async fn install_moves_the_datastore_to_trident_datastore_path() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 81, None);
    let moved = fx.dir.path().join("moved/datastore.sqlite");
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let extra = format!("trident:\n  datastorePath: {}\n", moved.display());
    c.provision(&fx.config(&v1, &extra)).await;
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    let ds = trident_host::datastore::Datastore::open_read_only(&moved).unwrap();
    let status = ds.host_status().unwrap();
    assert_eq!(
        status.servicing_state,
        trident_host::status::ServicingState::Provisioned
    );
    assert_eq!(
        status.partition_paths.len(),
        3,
        "{:?}",
        status.partition_paths
    );
    assert!(
        status
            .image_hash
            .as_deref()
            .unwrap()
            .ends_with(&v1.metadata_sha384)
    );
    assert!(ds.operations(10).unwrap().iter().any(|o| o.rpc == "Commit"));
    let redirect = std::fs::read_to_string(d.state_dir().join("datastore-path")).unwrap();
    assert_eq!(redirect, moved.display().to_string());
}

/// Serves `file` over plain HTTP/1.1 on 127.0.0.1 (one response per
/// connection); returns the URL.
async fn serve_over_http(file: std::path::PathBuf) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let body = tokio::fs::read(&file).await.unwrap();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).await.unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let header = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(header.as_bytes()).await;
                let _ = conn.write_all(&body).await;
                let _ = conn.shutdown().await;
            });
        }
    });
    format!("http://{addr}/os.cosi")
}

#[tokio::test(flavor = "multi_thread")]
async fn install_downloads_the_image_from_an_http_url() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 121, None);
    let url = serve_over_http(v1.path.clone()).await;
    let config = fx
        .config(&v1, "")
        .replace(&format!("file://{}", v1.path.display()), &url);
    assert!(config.contains("http://127.0.0.1:"), "{config}");
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let install = c.install(&config).await;
    install.assert_success();
    assert_eq!(
        install.completed().image_hash.as_deref(),
        Some(format!("sha384:{}", v1.metadata_sha384).as_str())
    );
    c.commit().await.assert_success();
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
}

/// A commit with nothing to commit (installer media at boot) holds the
/// servicing lock only for its check: a request sent as soon as its stream
/// opened is never refused as busy. (Before, the lock was held until the
/// no-op operation was recorded, and the next request was refused.)
#[tokio::test(flavor = "multi_thread")]
async fn a_commit_with_nothing_to_commit_does_not_keep_the_next_request_waiting() {
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    for round in 0..20 {
        let first = c
            .commit
            .commit(v1::CommitRequest { reboot: None })
            .await
            .unwrap();
        let second = c
            .commit
            .clone()
            .commit(v1::CommitRequest { reboot: None })
            .await;
        let second = second.unwrap_or_else(|status| panic!("round {round}: {status:?}"));
        for stream in [first, second] {
            let done = servicing_support::collect(Ok(stream)).await;
            done.assert_success();
            assert_eq!(
                done.completed().servicing_kind,
                Some(ServicingKind::NoneRequired as i32)
            );
        }
    }
    assert_eq!(c.state().await, ServicingState::NotProvisioned);
}
