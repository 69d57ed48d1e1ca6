//! Torn state files: a journal segment or the SQLite datastore (main file
//! or WAL) cut at a random offset (seeded; `CRASH_SEED=N` replays) or with
//! garbage appended, as a crash or a failing disk can leave them. The
//! daemon still starts, never panics, and each service either answers from
//! what it could recover or refuses with a clear error naming the
//! datastore; with the datastore intact a new operation runs to the end.

#![allow(clippy::unwrap_used)]

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use trident_e2e::crash_support::Rng;
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_e2e::{daemon_on, trident_cli};
use trident_host::datastore::Datastore;
use trident_proto::v1::{
    GetLastErrorRequest, ListOperationsRequest, telemetry_service_client::TelemetryServiceClient,
};
use trident_proto::v1preview::{GetServicingStateRequest, ServicingState};

/// Which file a case damages, and how.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// The newest journal segment cut at a random offset.
    TruncateSegment,
    /// Random bytes appended to the newest journal segment.
    GarbageSegment,
    /// Random bytes written over the middle of the newest journal segment.
    ScribbleSegment,
    /// The datastore's WAL cut at a random offset.
    TruncateWal,
    /// Random bytes appended to the WAL.
    GarbageWal,
    /// The datastore's main file cut at a random offset (its WAL holding
    /// the newest transactions, as a SIGKILLed daemon leaves it).
    TruncateDatastore,
    /// The main file cut after a checkpoint moved everything into it (as
    /// a clean close leaves it, with no WAL).
    TruncateCheckpointed,
    /// The same, cut inside its last page (pages before it pass SQLite's
    /// own checks; the damage shows only in the rows read).
    TruncateCheckpointedTail,
}

impl Damage {
    fn touches_datastore(self) -> bool {
        matches!(
            self,
            Damage::TruncateWal
                | Damage::GarbageWal
                | Damage::TruncateDatastore
                | Damage::TruncateCheckpointed
                | Damage::TruncateCheckpointedTail
        )
    }
}

const CASES: &[Damage] = &[
    Damage::TruncateSegment,
    Damage::TruncateSegment,
    Damage::TruncateSegment,
    Damage::GarbageSegment,
    Damage::ScribbleSegment,
    Damage::TruncateWal,
    Damage::TruncateWal,
    Damage::GarbageWal,
    Damage::TruncateDatastore,
    Damage::TruncateDatastore,
    Damage::TruncateCheckpointed,
    Damage::TruncateCheckpointed,
    Damage::TruncateCheckpointedTail,
    Damage::TruncateCheckpointedTail,
];

fn newest_segment(state: &Path) -> PathBuf {
    let mut segments: Vec<PathBuf> = std::fs::read_dir(state.join("journal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::metadata(p).unwrap().len() > 0)
        .collect();
    segments.sort();
    segments.pop().expect("a non-empty journal segment")
}

fn garbage(rng: &mut Rng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.next() as u8).collect()
}

/// Applies `damage` to the state dir; returns a description for messages.
fn apply(damage: Damage, state: &Path, rng: &mut Rng) -> String {
    let file = match damage {
        Damage::TruncateSegment | Damage::GarbageSegment | Damage::ScribbleSegment => {
            newest_segment(state)
        }
        Damage::TruncateWal | Damage::GarbageWal => state.join("datastore.sqlite-wal"),
        Damage::TruncateDatastore => state.join("datastore.sqlite"),
        Damage::TruncateCheckpointed | Damage::TruncateCheckpointedTail => {
            let path = state.join("datastore.sqlite");
            // Opening and closing checkpoints the WAL into the main file.
            drop(Datastore::open(&path).unwrap());
            assert!(!state.join("datastore.sqlite-wal").exists());
            path
        }
    };
    let len = std::fs::metadata(&file).unwrap().len();
    assert!(len > 0, "{} is empty: nothing to damage", file.display());
    let f = OpenOptions::new().write(true).open(&file).unwrap();
    let what = match damage {
        Damage::TruncateSegment
        | Damage::TruncateWal
        | Damage::TruncateDatastore
        | Damage::TruncateCheckpointed => {
            let at = rng.next() % len;
            f.set_len(at).unwrap();
            format!("cut at {at} of {len}")
        }
        Damage::TruncateCheckpointedTail => {
            let at = len - 1 - rng.next() % 4096.min(len);
            f.set_len(at).unwrap();
            format!("cut at {at} of {len}")
        }
        Damage::GarbageSegment | Damage::GarbageWal => {
            let n = 1 + (rng.next() % 4096) as usize;
            let bytes = garbage(rng, n);
            OpenOptions::new()
                .append(true)
                .open(&file)
                .unwrap()
                .write_all(&bytes)
                .unwrap();
            format!("{n} garbage bytes appended to {len}")
        }
        Damage::ScribbleSegment => {
            let at = rng.next() % len;
            let n = (1 + rng.next() % 256).min(len - at) as usize;
            let bytes = garbage(rng, n);
            std::os::unix::fs::FileExt::write_all_at(&f, &bytes, at).unwrap();
            format!("{n} bytes overwritten at {at} of {len}")
        }
    };
    f.sync_all().unwrap();
    format!("{damage:?} {}: {what}", file.display())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_torn_journal_segment_or_datastore_is_recovered_or_refused_and_the_daemon_starts() {
    let mut rng = Rng::from_env("torn-state");
    let fx = Fixture::new();
    let v1 = fx.image("v1", 501, None);
    let v2 = fx.image("v2", 502, None);
    // A provisioned host whose daemon died without a clean shutdown: the
    // journal holds its operations and the WAL its last transactions.
    let pristine = fx.dir.path().join("pristine");
    {
        let mut d = daemon_on(&pristine, &[]).await;
        let mut c = Clients::new(&d).await;
        c.provision(&fx.config(&v1, "")).await;
        d.signal(Signal::SIGKILL).unwrap();
        d.wait_exit(Duration::from_secs(30)).await.unwrap();
    }
    let disk_image = std::fs::read(&fx.disk).unwrap();

    for (i, damage) in CASES.iter().enumerate() {
        let state = fx.dir.path().join(format!("case-{i}"));
        copy_dir(&pristine, &state);
        std::fs::write(&fx.disk, &disk_image).unwrap();
        let what = apply(*damage, &state, &mut rng);
        eprintln!("case {i}: {what}");

        // Starts and answers (spawn waits for Version).
        let d = daemon_on(&state, &[]).await;
        // The journal-backed views answer whatever the journal holds.
        let mut telemetry = TelemetryServiceClient::new(d.channel().await.unwrap());
        telemetry
            .list_operations(ListOperationsRequest {})
            .await
            .unwrap_or_else(|e| panic!("{what}: ListOperations: {e}"));
        // GetLastError asks the datastore when the journal has no error:
        // it answers, or refuses naming the datastore when that is damaged
        // (never "no error" for a Host Status it could not read).
        if let Err(status) = telemetry.get_last_error(GetLastErrorRequest {}).await {
            assert!(damage.touches_datastore(), "{what}: GetLastError: {status}");
            assert!(
                status.message().to_lowercase().contains("datastore"),
                "{what}: GetLastError names the datastore: {status}"
            );
        }
        // The datastore: recovered (a documented state) or refused clearly.
        let mut c = Clients::new(&d).await;
        let state_answer = c
            .status
            .get_servicing_state(GetServicingStateRequest {})
            .await;
        match state_answer {
            Ok(r) => {
                let s = r.into_inner().state();
                eprintln!("case {i}: recovered, state {s:?}");
                assert!(
                    matches!(
                        s,
                        ServicingState::Provisioned
                            | ServicingState::InstallFinalized
                            | ServicingState::InstallStaged
                            | ServicingState::NotProvisioned
                    ),
                    "{what}: state {s:?}"
                );
                if !damage.touches_datastore() {
                    assert_eq!(s, ServicingState::Provisioned, "{what}");
                }
            }
            Err(status) => {
                eprintln!("case {i}: refused: {status:?}");
                assert!(damage.touches_datastore(), "{what}: {status}");
                assert!(
                    status.message().to_lowercase().contains("datastore"),
                    "{what}: the refusal names the datastore: {status}"
                );
            }
        }
        // The CLI gets the same answer, never a crash of the daemon.
        let out = trident_cli(d.socket_path(), &["get", "status"]);
        assert!(
            out.status.code().is_some_and(|code| code < 100),
            "{what}: {out:?}"
        );
        // With the datastore intact, the journal writer works on: a new
        // operation runs to the end.
        if !damage.touches_datastore() {
            c.update_stage(&fx.config(&v2, "")).await.assert_success();
        }
        let mut d = d;
        let exit = d.stop();
        let stderr = d.stderr();
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(
            exit.is_some_and(|e| e.success()),
            "{what}: {exit:?}\n{stderr}"
        );
    }
}
