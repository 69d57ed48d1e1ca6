//! Servicing failure paths end to end: bad images, bad configurations,
//! the servicing lock, client disconnect, daemon killed mid-operation.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use nix::sys::signal::Signal;
use trident_cosi::writer::Corruption;
use trident_e2e::daemon;
use trident_e2e::servicing_support::{Clients, Fixture, collect, daemon_with_datastore, hc};
use trident_host::datastore::OperationResult;
use trident_proto::v1::{
    self, OperationEvent, TridentErrorKind, WatchOptions, WatchRequest, record, servicing_response,
    stream_event, telemetry_service_client::TelemetryServiceClient,
};
use trident_proto::v1preview::{
    self, AbVolumeState, ServicingState, ServicingType,
    rebuild_raid_service_client::RebuildRaidServiceClient,
    validation_service_client::ValidationServiceClient,
};

/// A preServicing script that keeps an A/B update busy for `seconds`.
fn slow_update(seconds: u32) -> String {
    format!(
        "scripts:\n  preServicing:\n  - name: slow\n    runOn: [ab-update]\n    content: \"echo waiting; sleep {seconds}\"\n"
    )
}

async fn wait_for_state(c: &mut Clients, want: ServicingState) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while c.state().await != want {
        assert!(Instant::now() < deadline, "state never became {want:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn corrupt_truncated_and_hash_mismatched_images_fail_cleanly_and_leave_the_active_volume_untouched()
 {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 31, None);
    let flipped = fx.image("flipped", 32, Some(Corruption::FlipByte { region: 2 }));
    let truncated = fx.image("truncated", 33, Some(Corruption::Truncate { region: 2 }));
    let good = fx.image("good", 34, None);
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;
    let root_a = fx.partition_hash("root-a");

    let cases = [
        (fx.config(&flipped, ""), "image-hash-mismatch"),
        (fx.config(&truncated, ""), "invalid-image"),
        (
            fx.config_with_hash(&good, &"a".repeat(96), ""),
            "image-hash-mismatch",
        ),
    ];
    for (config, subkind) in cases {
        let stage = c.update_stage(&config).await;
        assert!(!stage.succeeded(), "{subkind}: must fail");
        let err = stage.error();
        assert_eq!(
            err.kind,
            TridentErrorKind::InvalidInputError as i32,
            "{subkind}: {}",
            err.message
        );
        assert_eq!(err.subkind, subkind, "{}", err.message);
        assert!(!err.causes.is_empty(), "cause chain carried: {err:?}");
        assert_eq!(err.operation_id, stage.operation_id());
        assert_eq!(c.state().await, ServicingState::Provisioned);
        assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
        assert_eq!(
            fx.partition_hash("root-a"),
            root_a,
            "{subkind}: active volume untouched"
        );
        let last = c.last_error().await.unwrap();
        assert_eq!(last.subkind, subkind);
        assert!(last.location.as_ref().unwrap().path.ends_with(".rs"));
    }
    // A good image still stages after the failures.
    c.update_stage(&fx.config(&good, "")).await.assert_success();
    assert_eq!(c.last_error().await, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_and_unsupported_configurations_are_rejected_naming_the_key() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 41, None);
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let mut validation = ValidationServiceClient::new(c.channel.clone());

    let encrypted = fx.config(&v1, "").replace(
        "  abUpdate:\n",
        // Clearing the TPM stays unsupported (encryption itself is applied).
        "  encryption:\n    volumes: []\n    pcrs: [7]\n    clearTpmOnInstall: true\n  abUpdate:\n",
    );
    let typo = fx.config(&v1, "").replace("size: 8M", "sise: 8M");
    for (config, kind, needle) in [
        (
            &encrypted,
            TridentErrorKind::UnsupportedConfigurationError,
            "storage.encryption",
        ),
        (
            &typo,
            TridentErrorKind::InvalidInputError,
            "storage.disks[0].partitions[0].sise",
        ),
    ] {
        let r = validation
            .validate_host_configuration(v1preview::ValidateHostConfigurationRequest {
                config: Some(hc(config)),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(!r.ok);
        let err = r.error.unwrap();
        assert_eq!(err.kind, kind as i32);
        assert!(err.error_message.contains(needle), "{}", err.error_message);
    }
    let ok = validation
        .validate_host_configuration(v1preview::ValidateHostConfigurationRequest {
            config: Some(hc(&fx.config(&v1, ""))),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(ok.ok, "{:?}", ok.error);
    let required = validation
        .get_required_servicing_type(v1preview::GetRequiredServicingTypeRequest {
            config: Some(hc(&fx.config(&v1, ""))),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(required.servicing_type(), ServicingType::CleanInstall);
    let status = validation
        .get_required_servicing_type(v1preview::GetRequiredServicingTypeRequest {
            config: Some(hc(&typo)),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);

    // Servicing with an unsupported feature fails in Completed; nothing changes.
    let install = c.install(&encrypted).await;
    assert_eq!(
        install.error().kind,
        TridentErrorKind::UnsupportedConfigurationError as i32
    );
    assert_eq!(c.state().await, ServicingState::NotProvisioned);
    let update = c.update_stage(&fx.config(&v1, "")).await;
    assert_eq!(update.error().subkind, "invalid-servicing-state");
    let raid_rebuild = collect(
        RebuildRaidServiceClient::new(c.channel.clone())
            .rebuild_raid(v1preview::RebuildRaidRequest {})
            .await,
    )
    .await;
    // Nothing installed: nothing to rebuild from.
    assert_eq!(
        raid_rebuild.error().subkind,
        "invalid-servicing-state",
        "{}",
        raid_rebuild.error().message
    );
    // A request without a configuration is refused outside the stream.
    let empty = c
        .update
        .update_stage(v1::StageUpdateRequest { config: None })
        .await
        .unwrap_err();
    assert_eq!(empty.code(), tonic::Code::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread")]
async fn second_servicing_request_is_unavailable_naming_the_running_operation_while_queries_answer()
{
    let fx = Fixture::new();
    let v1 = fx.image("v1", 51, None);
    let v2 = fx.image("v2", 52, None);
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;

    let mut first = c
        .update
        .update_stage(v1::StageUpdateRequest {
            config: Some(hc(&fx.config(&v2, &slow_update(3)))),
        })
        .await
        .unwrap()
        .into_inner();
    let Some(servicing_response::Response::Started(started)) =
        first.next().await.unwrap().unwrap().response
    else {
        panic!("Started first");
    };
    let mut other = Clients::new(&d).await;
    let busy = other
        .update
        .update_stage(v1::StageUpdateRequest {
            config: Some(hc(&fx.config(&v2, ""))),
        })
        .await
        .unwrap_err();
    assert_eq!(busy.code(), tonic::Code::Unavailable);
    assert!(
        busy.message().contains(&started.operation_id),
        "{}",
        busy.message()
    );
    assert!(busy.message().contains("UpdateStage"), "{}", busy.message());
    let commit_busy = other
        .commit
        .commit(v1::CommitRequest { reboot: None })
        .await
        .unwrap_err();
    assert_eq!(commit_busy.code(), tonic::Code::Unavailable);
    // Queries are not blocked by the running operation.
    assert_eq!(other.state().await, ServicingState::Provisioned);

    let mut completed = None;
    while let Some(msg) = first.next().await {
        if let Some(servicing_response::Response::Completed(c)) = msg.unwrap().response {
            completed = Some(c);
        }
    }
    assert_eq!(completed.unwrap().status, v1::StatusCode::Success as i32);
    assert_eq!(c.state().await, ServicingState::UpdateAbStaged);
}

#[tokio::test(flavor = "multi_thread")]
async fn client_disconnect_does_not_cancel_the_operation_and_its_records_stay_on_the_bus() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 61, None);
    let v2 = fx.image("v2", 62, None);
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;

    let operation_id = {
        let mut client = Clients::new(&d).await;
        let mut stream = client
            .update
            .update_stage(v1::StageUpdateRequest {
                config: Some(hc(&fx.config(&v2, &slow_update(2)))),
            })
            .await
            .unwrap()
            .into_inner();
        let Some(servicing_response::Response::Started(started)) =
            stream.next().await.unwrap().unwrap().response
        else {
            panic!("Started first");
        };
        started.operation_id
        // stream, client and channel dropped here: the client is gone.
    };
    wait_for_state(&mut c, ServicingState::UpdateAbStaged).await;
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);

    // Its whole record is on the bus: script output, progress, completion.
    let mut telemetry = TelemetryServiceClient::new(c.channel.clone());
    let mut stream = telemetry
        .watch(WatchRequest {
            options: Some(WatchOptions {
                operation_id: operation_id.clone(),
                snapshot: true,
                ..WatchOptions::default()
            }),
            kinds: vec![],
        })
        .await
        .unwrap()
        .into_inner();
    let (mut saw_script, mut saw_write, mut saw_completed) = (false, false, false);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Ok(Some(Ok(resp))) = tokio::time::timeout_at(deadline, stream.next()).await {
        for event in resp.events {
            match event.event {
                Some(stream_event::Event::Record(rec)) => match rec.record {
                    Some(record::Record::Log(l)) if l.target == "script::slow" => saw_script = true,
                    Some(record::Record::Progress(p)) if p.phase_id == "write/root-b" => {
                        saw_write = true
                    }
                    Some(record::Record::Operation(o))
                        if o.event == OperationEvent::Completed as i32 =>
                    {
                        assert_eq!(o.operation_id, operation_id);
                        assert_eq!(o.result, v1::StatusCode::Success as i32);
                        saw_completed = true;
                    }
                    _ => {}
                },
                Some(stream_event::Event::EndOfSnapshot(_)) => break,
                _ => {}
            }
        }
        if saw_completed {
            break;
        }
    }
    assert!(
        saw_script && saw_write && saw_completed,
        "script {saw_script} write {saw_write} completed {saw_completed}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_mid_update_keeps_the_last_committed_state_and_reports_the_interruption() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 71, None);
    let v2 = fx.image("v2", 72, None);
    let datastore = fx.dir.path().join("datastore.sqlite");
    let mut d = daemon_with_datastore(&datastore).await;
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;

    let mut stream = c
        .update
        .update_stage(v1::StageUpdateRequest {
            config: Some(hc(&fx.config(&v2, &slow_update(3)))),
        })
        .await
        .unwrap()
        .into_inner();
    let Some(servicing_response::Response::Started(started)) =
        stream.next().await.unwrap().unwrap().response
    else {
        panic!("Started first");
    };
    d.signal(Signal::SIGKILL).unwrap();
    d.wait_exit(Duration::from_secs(10)).await.unwrap();
    drop(stream);

    let d2 = daemon_with_datastore(&datastore).await;
    let mut c2 = Clients::new(&d2).await;
    assert_eq!(
        c2.state().await,
        ServicingState::Provisioned,
        "last committed state"
    );
    assert_eq!(c2.active_volume().await, AbVolumeState::VolumeA);
    let err = c2.last_error().await.unwrap();
    assert_eq!(err.subkind, "interrupted");
    assert_eq!(err.operation_id, started.operation_id);
    assert!(
        err.error_message.contains("UpdateStage"),
        "{}",
        err.error_message
    );
    // The operation history says what happened, with trace ids.
    let ds = trident_host::datastore::Datastore::open_read_only(&datastore).unwrap();
    let ops = ds.operations(10).unwrap();
    let killed = ops.iter().find(|o| o.id == started.operation_id).unwrap();
    assert_eq!(killed.result, OperationResult::Interrupted);
    assert_eq!(killed.rpc, "UpdateStage");
    assert_eq!(killed.trace_id, started.trace_id);
    assert!(
        ops.iter()
            .any(|o| o.rpc == "Install" && o.result == OperationResult::Success)
    );
    assert!(
        ops.iter()
            .any(|o| o.rpc == "Commit" && o.result == OperationResult::Success)
    );
    drop(ds);
    // And the host can be serviced again.
    c2.update_stage(&fx.config(&v2, "")).await.assert_success();
    assert_eq!(c2.state().await, ServicingState::UpdateAbStaged);
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_shutdown_waits_for_a_running_operation_whose_client_left() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 91, None);
    let v2 = fx.image("v2", 92, None);
    let datastore = fx.dir.path().join("datastore.sqlite");
    let mut d = trident_e2e::Daemon::builder()
        .arg("--datastore")
        .arg(&datastore)
        .arg("--inactivity-timeout")
        .arg("1s")
        .spawn()
        .await
        .unwrap();
    {
        let mut c = Clients::new(&d).await;
        c.provision(&fx.config(&v1, "")).await;
        let mut stream = c
            .update
            .update_stage(v1::StageUpdateRequest {
                config: Some(hc(&fx.config(&v2, &slow_update(3)))),
            })
            .await
            .unwrap()
            .into_inner();
        stream.next().await.unwrap().unwrap();
        // Client, stream and connection go away; only the operation remains.
    }
    let exit = d.wait_exit(Duration::from_secs(120)).await.unwrap();
    assert!(
        exit.is_some_and(|s| s.success()),
        "idle exit: {exit:?}\n{}",
        d.stderr()
    );
    // It exited only after the operation completed: the staged state is committed.
    let d2 = daemon_with_datastore(&datastore).await;
    let mut c2 = Clients::new(&d2).await;
    assert_eq!(c2.state().await, ServicingState::UpdateAbStaged);
    assert_eq!(c2.last_error().await, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn booting_the_wrong_volume_fails_check_root_and_commit_with_a_health_checks_error() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 101, None);
    let v2 = fx.image("v2", 102, None);
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;
    c.update_stage(&fx.config(&v2, "")).await.assert_success();
    c.update_finalize().await.assert_success();
    // The host came up on the old volume instead of B.
    let record = d.state_dir().join("boot-record.json");
    let mut value = fx.boot_record(&d);
    value["booted"] = "volume-a".into();
    std::fs::write(&record, value.to_string()).unwrap();

    let mut preview = v1preview::commit_service_client::CommitServiceClient::new(c.channel.clone());
    let check = collect(preview.check_root(v1preview::CheckRootRequest {}).await).await;
    assert_eq!(check.error().subkind, "booted-wrong-volume");
    assert_eq!(
        c.state().await,
        ServicingState::UpdateAbFinalized,
        "CheckRoot changes nothing"
    );

    let commit = c.commit().await;
    let err = commit.error();
    assert_eq!(err.kind, TridentErrorKind::HealthChecksError as i32);
    assert_eq!(err.subkind, "booted-wrong-volume");
    assert_eq!(c.state().await, ServicingState::UpdateAbHealthCheckFailed);
    assert_eq!(c.active_volume().await, AbVolumeState::VolumeA);
    assert_eq!(fx.boot_record(&d)["nextBoot"], "volume-a");
}

#[tokio::test(flavor = "multi_thread")]
async fn install_onto_a_too_small_disk_is_an_execution_environment_error() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 111, None);
    std::fs::File::create(&fx.disk)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let install = c.install(&fx.config(&v1, "")).await;
    let err = install.error();
    assert_eq!(
        err.kind,
        TridentErrorKind::ExecutionEnvironmentMisconfigurationError as i32
    );
    assert_eq!(err.subkind, "target-disk-too-small");
    assert!(
        err.error_message.contains("disk.img"),
        "{}",
        err.error_message
    );
    assert_eq!(c.state().await, ServicingState::NotProvisioned);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operation_started_right_after_completed_is_never_refused_as_busy() {
    let d = daemon().await;
    let c = Clients::new(&d).await;
    let mut preview = v1preview::commit_service_client::CommitServiceClient::new(c.channel.clone());
    for i in 0..25 {
        let response = preview.check_root(v1preview::CheckRootRequest {}).await;
        if let Err(status) = &response {
            panic!("operation {i} refused: {status:?}");
        }
        collect(response).await.completed();
    }
}

/// Software RAID on disk-image files: md needs the kernel's partitions,
/// so the install is refused before anything is written; a host installed
/// without arrays has nothing for rebuild-raid, which changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn raid_on_disk_image_files_and_rebuild_without_arrays_are_refused_touching_nothing() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 71, None);
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    // root-a and root-b as the two members of one mirror holding "/".
    let raid = fx
        .config(&v1, "")
        .replace(
            "  abUpdate:\n    volumePairs:\n    - { id: root, volumeAId: root-a, volumeBId: root-b }\n",
            "  raid:\n    software:\n    - { id: root, name: root, level: raid1, devices: [root-a, root-b] }\n    syncTimeout: 60\n",
        );
    assert!(raid.contains("syncTimeout"), "{raid}");
    let disk_before = std::fs::read(&fx.disk).unwrap();
    let install = c.install(&raid).await;
    let err = install.error();
    assert_eq!(err.subkind, "unsupported-feature", "{}", err.message);
    assert!(
        err.message
            .contains("holds RAID members but is not a block device"),
        "{}",
        err.message
    );
    assert!(
        !install
            .phases()
            .iter()
            .any(|p| p == "raid-sync" || p.starts_with("write/")),
        "{:?}",
        install.phases()
    );
    assert!(
        std::fs::read(&fx.disk).unwrap() == disk_before,
        "the disk was written"
    );
    assert_eq!(c.state().await, ServicingState::NotProvisioned);

    c.provision(&fx.config(&v1, "")).await;
    let root_a = fx.partition_hash("root-a");
    let rebuild = collect(
        RebuildRaidServiceClient::new(c.channel.clone())
            .rebuild_raid(v1preview::RebuildRaidRequest {})
            .await,
    )
    .await;
    assert!(!rebuild.succeeded());
    assert_eq!(rebuild.error().subkind, "validate-rebuild-raid");
    assert!(
        rebuild.error().message.contains("no software RAID arrays"),
        "{}",
        rebuild.error().message
    );
    assert_eq!(c.state().await, ServicingState::Provisioned);
    assert_eq!(fx.partition_hash("root-a"), root_a);
}
