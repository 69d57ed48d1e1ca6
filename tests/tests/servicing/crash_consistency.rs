//! Crash consistency: `tridentd` SIGKILLed at random points (seeded and
//! printed; `CRASH_SEED=N` replays a run) during stage and finalize of an
//! A/B update, during a clean install and during StreamDisk, then restarted
//! on the same state directory. After each restart: the datastore opens,
//! the servicing state is one the flow can be in, the active volume's bytes
//! are unchanged, `trident get status` / `get last-error` answer and say
//! what happened, and a new operation runs to the end.
//!
//! 24 kills in all (8 update rounds of two kills, 4 installs, 4 StreamDisks,
//! half of them from a slow `http://` server);
//! disk images are small so the whole file runs in about a minute.

#![allow(clippy::unwrap_used)]

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use trident_e2e::crash_support::{
    self, Reached, Rng, kill_during, partition_sha384, range_sha384, timed,
};
use trident_e2e::fixture::CosiImage;
use trident_e2e::image_server;
use trident_e2e::servicing_support::{self, Clients, Fixture, hc};
use trident_e2e::{daemon_on, trident_cli_ok};
use trident_host::datastore::{Datastore, OperationResult};
use trident_proto::v1::{
    self, StreamDiskRequest, streaming_service_client::StreamingServiceClient,
};
use trident_proto::v1preview::{self, AbVolumeState, ServicingState};

/// Rounds of the A/B scenario (each kills once in stage, once in finalize).
const UPDATE_ROUNDS: usize = 8;
/// Killed clean installs.
const INSTALL_KILLS: usize = 4;
/// Killed StreamDisks.
const STREAM_DISK_KILLS: usize = 4;

/// What a restarted daemon must show after an operation was killed.
struct AfterKill<'a> {
    /// States the flow may be in (the last committed one, or the next).
    states: &'a [ServicingState],
    /// The volume that was active before the kill.
    active: AbVolumeState,
    reached: Reached,
}

/// Checks a restarted daemon against `want`; returns the servicing state.
async fn check_after_kill(
    c: &mut Clients,
    socket: &Path,
    datastore: &Path,
    want: &AfterKill<'_>,
) -> ServicingState {
    let state = c.state().await;
    assert!(
        want.states.contains(&state),
        "state {state:?} not one of {:?} (stream {:?})",
        want.states,
        want.reached
    );
    assert_eq!(c.active_volume().await, want.active, "active volume moved");
    // The killed operation is in the history, ended one way or the other:
    // completed (the kill came after its last commit) or marked interrupted
    // at this start, which makes it the last error.
    let last = c.last_error().await;
    let mut interrupted = false;
    if let Some(id) = want.reached.operation_id() {
        let ds = Datastore::open_read_only(datastore).unwrap();
        let ops = ds.operations(1000).unwrap();
        let op = ops
            .iter()
            .find(|o| o.id == id)
            .expect("the operation was recorded");
        match op.result {
            OperationResult::Interrupted => {
                interrupted = true;
                let error = last
                    .as_ref()
                    .expect("an interrupted operation is the last error");
                assert_eq!(error.subkind, "interrupted", "{error:?}");
                assert_eq!(error.operation_id, id, "{error:?}");
            }
            OperationResult::Success => {}
            other => panic!("operation {id} ended {other:?} ({:?})", want.reached),
        }
        if matches!(want.reached, Reached::Completed(_)) {
            assert_eq!(
                op.result,
                OperationResult::Success,
                "completed before the kill"
            );
        }
    }
    // The real CLI says the same: the status it prints names the state...
    let status = trident_cli_ok(socket, &["--output", "json", "get", "status"]);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let kebab = kebab(state);
    assert_eq!(status["servicingState"], kebab, "{status:#}");
    // ...and `get last-error` (TelemetryService.GetLastError) names the
    // interruption as the StatusService does.
    let cli_error = trident_cli_ok(socket, &["--output", "json", "get", "last-error"]);
    let cli_error: serde_json::Value = serde_json::from_str(&cli_error).unwrap();
    if interrupted {
        assert_eq!(cli_error["error"], "interrupted", "{cli_error:#}");
    }
    state
}

fn kebab(state: ServicingState) -> &'static str {
    match state {
        ServicingState::NotProvisioned => "not-provisioned",
        ServicingState::InstallStaged => "clean-install-staged",
        ServicingState::InstallFinalized => "clean-install-finalized",
        ServicingState::UpdateAbStaged => "ab-update-staged",
        ServicingState::UpdateAbFinalized => "ab-update-finalized",
        ServicingState::Provisioned => "provisioned",
        other => panic!("state {other:?} is not reachable in these flows"),
    }
}

fn volume_name(volume: AbVolumeState) -> &'static str {
    match volume {
        AbVolumeState::VolumeA => "root-a",
        AbVolumeState::VolumeB => "root-b",
        other => panic!("no active volume: {other:?}"),
    }
}

fn other_volume(volume: AbVolumeState) -> AbVolumeState {
    match volume {
        AbVolumeState::VolumeA => AbVolumeState::VolumeB,
        _ => AbVolumeState::VolumeA,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_during_ab_update_stage_and_finalize_keeps_a_documented_state_and_the_active_volume()
 {
    let mut rng = Rng::from_env("ab-update");
    let fx = Fixture::new();
    let state_dir = fx.dir.path().join("state");
    let datastore = state_dir.join("datastore.sqlite");
    let images = [fx.image("v1", 401, None), fx.image("v2", 402, None)];
    let mut d = daemon_on(&state_dir, &[]).await;
    let mut c = Clients::new(&d).await;
    let (_, mut stage_time) = timed(c.provision(&fx.config(&images[0], ""))).await;
    let mut finalize_time = Duration::from_millis(200);
    let mut active = AbVolumeState::VolumeA;

    for round in 0..UPDATE_ROUNDS {
        let config = fx.config(&images[(round + 1) % 2], "");
        let active_hash = partition_sha384(&fx.disk, volume_name(active));

        // Kill during stage.
        let stream = c
            .update
            .update_stage(v1::StageUpdateRequest {
                config: Some(hc(&config)),
            })
            .await
            .unwrap()
            .into_inner();
        let delay = rng.delay(stage_time);
        let reached = kill_during(&mut d, stream, delay).await;
        eprintln!("round {round}: stage killed after {delay:?}: {reached:?}");
        d = daemon_on(&state_dir, &[]).await;
        c = Clients::new(&d).await;
        let want = AfterKill {
            states: &[ServicingState::Provisioned, ServicingState::UpdateAbStaged],
            active,
            reached,
        };
        check_after_kill(&mut c, d.socket_path(), &datastore, &want).await;
        assert_eq!(partition_sha384(&fx.disk, volume_name(active)), active_hash);
        // A new stage runs to the end (whatever the killed one left).
        let (staged, took) = timed(c.update_stage(&config)).await;
        staged.assert_success();
        stage_time = took;

        // Kill during finalize.
        let stream = c
            .update
            .update_finalize(v1::FinalizeUpdateRequest { reboot: None })
            .await
            .unwrap()
            .into_inner();
        let delay = rng.delay(finalize_time);
        let reached = kill_during(&mut d, stream, delay).await;
        eprintln!("round {round}: finalize killed after {delay:?}: {reached:?}");
        d = daemon_on(&state_dir, &[]).await;
        c = Clients::new(&d).await;
        let want = AfterKill {
            states: &[
                ServicingState::UpdateAbStaged,
                ServicingState::UpdateAbFinalized,
            ],
            active,
            reached,
        };
        let state = check_after_kill(&mut c, d.socket_path(), &datastore, &want).await;
        assert_eq!(partition_sha384(&fx.disk, volume_name(active)), active_hash);
        if state == ServicingState::UpdateAbStaged {
            let (finalized, took) = timed(c.update_finalize()).await;
            finalized.assert_success();
            finalize_time = took;
        }
        // Commit boots the new volume: the host is serviceable again.
        c.commit().await.assert_success();
        assert_eq!(c.state().await, ServicingState::Provisioned);
        active = other_volume(active);
        assert_eq!(c.active_volume().await, active, "commit switched volumes");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_during_clean_install_keeps_a_documented_state_and_a_new_install_completes() {
    let mut rng = Rng::from_env("install");
    let fx = Fixture::new();
    let state_dir = fx.dir.path().join("state");
    let datastore = state_dir.join("datastore.sqlite");
    let image = fx.image("v1", 411, None);
    let config = fx.config(&image, "");
    let mut d = daemon_on(&state_dir, &[]).await;
    let mut c = Clients::new(&d).await;
    // A first install (uncommitted: install may run again) sizes the delays.
    let (done, mut install_time) = timed(c.install(&config)).await;
    done.assert_success();

    for round in 0..INSTALL_KILLS {
        let active = c.active_volume().await;
        let stream = c
            .install
            .install(v1preview::InstallRequest {
                stage: Some(v1preview::StageInstallRequest {
                    config: Some(hc(&config)),
                }),
                finalize: Some(v1preview::FinalizeInstallRequest { reboot: None }),
            })
            .await
            .unwrap()
            .into_inner();
        let delay = rng.delay(install_time);
        let reached = kill_during(&mut d, stream, delay).await;
        eprintln!("install {round}: killed after {delay:?}: {reached:?}");
        d = daemon_on(&state_dir, &[]).await;
        c = Clients::new(&d).await;
        let want = AfterKill {
            states: &[
                ServicingState::InstallStaged,
                ServicingState::InstallFinalized,
            ],
            active,
            reached,
        };
        check_after_kill(&mut c, d.socket_path(), &datastore, &want).await;
        let (done, took) = timed(c.install(&config)).await;
        done.assert_success();
        install_time = took;
        assert_eq!(c.state().await, ServicingState::InstallFinalized);
    }
    // And the installed host commits.
    c.commit().await.assert_success();
    assert_eq!(c.state().await, ServicingState::Provisioned);
}

/// Streams `url` through the daemon's StreamingService.
async fn stream_disk_request(
    d: &trident_e2e::Daemon,
    url: &str,
) -> tonic::Streaming<v1::ServicingResponse> {
    let mut client = StreamingServiceClient::new(d.channel().await.unwrap());
    let request = StreamDiskRequest {
        image_url: url.to_owned(),
        image_hash: None,
        reboot: None,
        ..Default::default()
    };
    client.stream_disk(request).await.unwrap().into_inner()
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_during_stream_disk_leaves_a_daemon_that_reports_it_and_streams_again() {
    let mut rng = Rng::from_env("stream-disk");
    let (dir, state_dir) = crash_support::scenario_dir("stream-disk");
    let datastore = state_dir.join("datastore.sqlite");
    let image = CosiImage::new(24 << 20, 421).esp_bytes(2 << 20);
    let expected = dir.path().join("expected.img");
    image.write_disk_image(&expected);
    let cosi = image.write(&dir.path().join("image.cosi"));
    // Every other kill lands in a download from a slow http:// server.
    let slow = image_server::ImageServer::start(&cosi.path, image_server::ServerFault::Slow);
    let urls = [format!("file://{}", cosi.path.display()), slow.url()];
    let url = &urls[0];
    let target = dir.path().join("target.img");
    std::fs::File::create(&target)
        .unwrap()
        .set_len(24 << 20)
        .unwrap();
    let disk_args = [OsStr::new("--disk"), target.as_os_str()];
    let mut d = daemon_on(&state_dir, &disk_args).await;
    let (outcome, stream_time) = timed(servicing_support::collect(Ok(tonic::Response::new(
        stream_disk_request(&d, url).await,
    ))))
    .await;
    outcome.assert_success();
    let region_hashes = |path: &Path| -> Vec<String> {
        cosi.regions
            .iter()
            .map(|r| range_sha384(path, r.offset, r.uncompressed_size))
            .collect()
    };
    let want_regions = region_hashes(&expected);

    let mut stream_times = [stream_time, stream_time * 3];
    for round in 0..STREAM_DISK_KILLS {
        let source = round % 2;
        let url = &urls[source];
        let stream = stream_disk_request(&d, url).await;
        let delay = rng.delay(stream_times[source]);
        let reached = kill_during(&mut d, stream, delay).await;
        eprintln!("stream-disk {round} ({url}): killed after {delay:?}: {reached:?}");
        d = daemon_on(&state_dir, &disk_args).await;
        let mut c = Clients::new(&d).await;
        // StreamDisk does not move the servicing state of the datastore.
        let want = AfterKill {
            states: &[ServicingState::NotProvisioned],
            active: AbVolumeState::NoVolume,
            reached,
        };
        check_after_kill(&mut c, d.socket_path(), &datastore, &want).await;
        let (outcome, took) = timed(servicing_support::collect(Ok(tonic::Response::new(
            stream_disk_request(&d, url).await,
        ))))
        .await;
        outcome.assert_success();
        stream_times[source] = took;
        assert_eq!(region_hashes(&target), want_regions, "round {round}");
    }
}
