//! Snapshot tests of the tty, plain and JSON renderings from recorded
//! (hand-built) streams. The renderers are pure functions of the model, so
//! no terminal is involved. Set UPDATE_SNAPSHOTS=1 to rewrite the expected
//! files in tests/snapshots/ after an intended change.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use trident_cli::render::event::{Event, LogLine};
use trident_cli::render::json;
use trident_cli::render::model::Model;
use trident_cli::render::plain::PlainView;
use trident_cli::render::tty::{self, TtyStyle};
use trident_proto::v1::{
    Cursor, ErrorContext, ErrorReport, FileLocation, Gap, GapReason, LogLevel, OverallProgress,
    PhaseState, ProgressRecord, ProgressUnit, RebootStatus, RunChange, ServicingKind, StatusCode,
    TridentError, TridentErrorKind,
};

const RUN: &str = "0b9a6d1e-0000-4000-8000-00000000a001";
const RUN2: &str = "0b9a6d1e-0000-4000-8000-00000000a002";
const OP: &str = "7f3c2a10-5d4e-4b1a-9c8f-2e6d0a1b3c4d";
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn at(ms: u64) -> SystemTime {
    // 2026-11-21T12:00:00Z
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_262_400) + Duration::from_millis(ms)
}

fn ts(ms: u64) -> Option<prost_types::Timestamp> {
    Some(prost_types::Timestamp::from(at(ms)))
}

fn cur(seq: u64) -> Option<Cursor> {
    Some(Cursor {
        run_id: RUN.into(),
        sequence: seq,
    })
}

fn started(seq: u64) -> Event {
    Event::Started {
        cursor: cur(seq),
        timestamp: Some(at(0)),
        operation_id: OP.into(),
        trace_id: TRACE.into(),
        kind: ServicingKind::CleanInstall,
        rpc: "Install".into(),
    }
}

fn log(seq: u64, ms: u64, level: LogLevel, message: &str) -> Event {
    Event::Log(LogLine {
        cursor: cur(seq),
        timestamp: Some(at(ms)),
        level,
        target: "tridentd::servicing".into(),
        message: message.into(),
    })
}

#[allow(clippy::too_many_arguments)]
fn progress(
    seq: u64,
    ms: u64,
    id: &str,
    parent: &str,
    name: &str,
    unit: ProgressUnit,
    current: u64,
    total: Option<u64>,
    state: PhaseState,
    started_ms: u64,
) -> Event {
    Event::Progress {
        cursor: cur(seq),
        timestamp: Some(at(ms)),
        record: ProgressRecord {
            operation_id: OP.into(),
            phase_id: id.into(),
            parent_phase_id: parent.into(),
            name: name.into(),
            unit: unit as i32,
            current,
            total,
            state: state as i32,
            started: ts(started_ms),
            updated: ts(ms),
        },
    }
}

const GIB: u64 = 1 << 30;

/// A clean install that succeeds: items phase, a bytes phase with a child, logs.
/// The daemon's overall record: 2 GiB planned, 2 steps planned.
fn overall(seq: u64, ms: u64, done: u64, steps_done: u32, eta_secs: Option<i64>) -> Event {
    Event::Overall {
        cursor: cur(seq),
        timestamp: Some(at(ms)),
        record: OverallProgress {
            operation_id: OP.into(),
            bytes_total: Some(2 * GIB),
            bytes_done: done,
            steps_done,
            steps_planned: 2,
            bytes_per_second: (done > 0).then_some((GIB / 4) as f64),
            eta: eta_secs.map(|seconds| prost_types::Duration { seconds, nanos: 0 }),
            elapsed: Some(prost_types::Duration {
                seconds: (ms / 1000) as i64,
                nanos: 0,
            }),
            current_step: "Write images".into(),
            finished: false,
        },
    }
}

fn success_stream() -> Vec<Event> {
    use PhaseState::{Done, Running};
    use ProgressUnit::{Bytes, Items};
    let mut s = vec![
        started(1),
        log(2, 10, LogLevel::Info, "starting clean install"),
        progress(
            3,
            20,
            "validate",
            "",
            "Validate configuration",
            Items,
            0,
            Some(3),
            Running,
            20,
        ),
        log(4, 100, LogLevel::Debug, "checked 3 disks"),
        progress(
            5,
            220,
            "validate",
            "",
            "Validate configuration",
            Items,
            3,
            Some(3),
            Done,
            20,
        ),
        progress(
            6,
            300,
            "write",
            "",
            "Write images",
            Items,
            0,
            Some(1),
            Running,
            300,
        ),
        progress(
            7,
            310,
            "write/root-a",
            "write",
            "Write root-a",
            Bytes,
            0,
            Some(2 * GIB),
            Running,
            310,
        ),
    ];
    let mut seq = 8;
    for step in 1..=8u64 {
        let ms = 310 + step * 1000;
        s.push(progress(
            seq,
            ms,
            "write/root-a",
            "write",
            "Write root-a",
            Bytes,
            step * GIB / 4,
            Some(2 * GIB),
            Running,
            310,
        ));
        seq += 1;
        let done = step * GIB / 4;
        let eta = (step >= 2).then(|| ((2 * GIB - done) / (GIB / 4)) as i64);
        s.push(overall(seq, ms + 1, done, 1, eta));
        seq += 1;
        if step % 3 == 0 {
            s.push(log(
                seq,
                ms + 5,
                LogLevel::Info,
                &format!("wrote extent {step}"),
            ));
            seq += 1;
        }
    }
    s.push(progress(
        seq,
        8400,
        "write/root-a",
        "write",
        "Write root-a",
        Bytes,
        2 * GIB,
        Some(2 * GIB),
        Done,
        310,
    ));
    s.push(progress(
        seq + 1,
        8410,
        "write",
        "",
        "Write images",
        Items,
        1,
        Some(1),
        Done,
        300,
    ));
    s.push(log(
        seq + 2,
        8500,
        LogLevel::Warn,
        "bootloader entry renamed",
    ));
    if let Event::Overall {
        cursor,
        timestamp,
        mut record,
    } = overall(seq + 3, 8990, 2 * GIB, 2, None)
    {
        record.finished = true;
        record.current_step.clear();
        s.push(Event::Overall {
            cursor,
            timestamp,
            record,
        });
    }
    s.push(Event::Completed {
        cursor: cur(seq + 4),
        timestamp: Some(at(9000)),
        status: StatusCode::Success,
        reboot_status: RebootStatus::RebootRequired,
        reboot_action: None,
        servicing_kind: None,
        error: None,
    });
    s
}

/// An update that fails in a phase with a full error report.
fn failure_stream() -> Vec<Event> {
    use PhaseState::{Failed, Running};
    use ProgressUnit::Bytes;
    let error = TridentError {
        kind: TridentErrorKind::ServicingError as i32,
        subkind: "write-image".into(),
        message: "failed to write root-a: hash mismatch".into(),
        error_message: "hash mismatch".into(),
        location: Some(FileLocation {
            path: "cosi/src/reader.rs".into(),
            line: 212,
        }),
        ..TridentError::default()
    };
    vec![
        Event::Started {
            cursor: cur(1),
            timestamp: Some(at(0)),
            operation_id: OP.into(),
            trace_id: TRACE.into(),
            kind: ServicingKind::AbUpdate,
            rpc: "Update".into(),
        },
        progress(
            2,
            50,
            "write/root-b",
            "",
            "Write root-b",
            Bytes,
            0,
            Some(GIB),
            Running,
            50,
        ),
        log(
            3,
            900,
            LogLevel::Info,
            "reading image from file:///srv/img.cosi",
        ),
        progress(
            4,
            1050,
            "write/root-b",
            "",
            "Write root-b",
            Bytes,
            GIB / 2,
            Some(GIB),
            Running,
            50,
        ),
        log(
            5,
            1100,
            LogLevel::Error,
            "sha384 of root-b does not match the metadata",
        ),
        progress(
            6,
            1150,
            "write/root-b",
            "",
            "Write root-b",
            Bytes,
            GIB / 2,
            Some(GIB),
            Failed,
            50,
        ),
        Event::Error {
            cursor: cur(7),
            report: Box::new(ErrorReport {
                category: TridentErrorKind::ServicingError as i32,
                subkind: "write-image".into(),
                message: "hash mismatch".into(),
                location: Some(FileLocation {
                    path: "cosi/src/reader.rs".into(),
                    line: 212,
                }),
                context: vec![
                    ErrorContext {
                        message: "staging the A/B update".into(),
                        location: Some(FileLocation {
                            path: "daemon/src/servicing/update.rs".into(),
                            line: 88,
                        }),
                    },
                    ErrorContext {
                        message: "writing volume root-b".into(),
                        location: Some(FileLocation {
                            path: "daemon/src/servicing/write.rs".into(),
                            line: 41,
                        }),
                    },
                ],
                causes: vec!["expected sha384:ab12…, got sha384:cd34…".into()],
                operation_id: OP.into(),
                trace_id: TRACE.into(),
                timestamp: ts(1150),
                ..ErrorReport::default()
            }),
        },
        Event::Completed {
            cursor: cur(8),
            timestamp: Some(at(1200)),
            status: StatusCode::Failure,
            reboot_status: RebootStatus::RebootNotRequired,
            reboot_action: None,
            servicing_kind: None,
            error: Some(Box::new(error)),
        },
    ]
}

/// A watch that loses the daemon: reconnect, run change, gap, then the end.
fn resume_stream() -> Vec<Event> {
    use PhaseState::{Done, Running};
    use ProgressUnit::Items;
    vec![
        started(1),
        progress(
            2,
            100,
            "scripts",
            "",
            "Run scripts",
            Items,
            1,
            Some(4),
            Running,
            100,
        ),
        log(3, 200, LogLevel::Info, "script 1 done"),
        Event::Reconnecting {
            attempt: 1,
            reason: "daemon busy or unavailable: transport error".into(),
        },
        Event::Resumed { after: cur(3) },
        Event::Gap(Gap {
            first_missing: cur(4),
            last_missing: cur(9),
            count: 6,
            reason: GapReason::PreviousRun as i32,
        }),
        Event::RunChange(RunChange {
            previous_run_id: RUN.into(),
            current_run_id: RUN2.into(),
        }),
        Event::Drops { total: 2 },
        progress(
            10,
            4000,
            "scripts",
            "",
            "Run scripts",
            Items,
            4,
            Some(4),
            Done,
            100,
        ),
        Event::Completed {
            cursor: cur(11),
            timestamp: Some(at(4100)),
            status: StatusCode::Success,
            reboot_status: RebootStatus::RebootNotRequired,
            reboot_action: None,
            servicing_kind: None,
            error: None,
        },
    ]
}

fn snapshot_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.txt"))
}

fn assert_snapshot(name: &str, actual: &str) {
    let path = snapshot_path(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}; run with UPDATE_SNAPSHOTS=1",
            path.display()
        )
    });
    assert_eq!(
        actual, expected,
        "snapshot {name} differs (UPDATE_SNAPSHOTS=1 to accept)"
    );
}

fn model_after(events: &[Event]) -> Model {
    let mut model = Model::new(Some(LogLevel::Debug));
    for e in events {
        model.apply(e);
    }
    model
}

fn tty_text(events: &[Event]) -> String {
    let model = model_after(events);
    let style = TtyStyle {
        color: false,
        width: 120,
        height: 40,
    };
    let now = model.last_seen.expect("records have times");
    let mut lines = tty::frame(&model, now, &style);
    lines.extend(tty::failure_block(&model, &style));
    lines.join("\n") + "\n"
}

fn plain_text(events: &[Event]) -> String {
    let mut model = Model::new(Some(LogLevel::Debug));
    let mut view = PlainView::default();
    let mut out = Vec::new();
    for e in events {
        model.apply(e);
        out.extend(view.lines(&model));
    }
    out.join("\n") + "\n"
}

fn json_text(events: &[Event]) -> String {
    events.iter().map(|e| json::line(e) + "\n").collect()
}

#[test]
fn tty_frame_mid_write_shows_bars_rate_eta_and_recent_logs() {
    let events = success_stream();
    assert_snapshot("tty_success_midway", &tty_text(&events[..14]));
}

#[test]
fn tty_final_frame_of_a_successful_install() {
    assert_snapshot("tty_success_final", &tty_text(&success_stream()));
}

#[test]
fn tty_failure_shows_structured_error_and_last_logs_of_failed_phase() {
    assert_snapshot("tty_failure", &tty_text(&failure_stream()));
}

#[test]
fn tty_resume_shows_reconnect_gap_and_restart_notices() {
    assert_snapshot("tty_resume", &tty_text(&resume_stream()));
}

#[test]
fn plain_prints_phase_changes_and_throttled_progress() {
    assert_snapshot("plain_success", &plain_text(&success_stream()));
}

#[test]
fn plain_failure_prints_error_block() {
    assert_snapshot("plain_failure", &plain_text(&failure_stream()));
}

#[test]
fn plain_resume_prints_every_notice_once() {
    assert_snapshot("plain_resume", &plain_text(&resume_stream()));
}

#[test]
fn json_is_one_object_per_record() {
    let text = json_text(&success_stream());
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("valid JSON");
        assert!(v.get("type").is_some());
    }
    assert_snapshot("json_success", &text);
}

#[test]
fn json_failure_and_resume() {
    let mut text = json_text(&failure_stream());
    text.push_str(&json_text(&resume_stream()));
    assert_snapshot("json_failure_resume", &text);
}

#[test]
fn plain_progress_lines_respect_five_seconds_or_five_percent() {
    // 100 updates of 0.1 % each, 10 ms apart: neither 5 s nor 5 % between
    // most of them, so only a handful of progress lines.
    let mut events = vec![started(1)];
    for i in 0..=100u64 {
        events.push(progress(
            2 + i,
            10 * i,
            "p",
            "",
            "Phase",
            ProgressUnit::Items,
            i,
            Some(1000),
            PhaseState::Running,
            0,
        ));
    }
    let text = plain_text(&events);
    let progress_lines = text
        .lines()
        .filter(|l| l.contains("phase Phase:") && l.contains('%'))
        .count();
    assert!(progress_lines <= 2, "{text}");
}

#[test]
fn replayed_older_progress_never_moves_a_bar_back() {
    let events = success_stream();
    let mut model = model_after(&events[..12]);
    let before = model
        .phases
        .iter()
        .find(|p| p.id == "write/root-a")
        .map(|p| p.current);
    model.apply(&events[8]);
    let after = model
        .phases
        .iter()
        .find(|p| p.id == "write/root-a")
        .map(|p| p.current);
    assert_eq!(before, after);
}

#[test]
fn an_eta_counts_down_and_never_freezes_and_items_get_elapsed_time_instead() {
    let events = success_stream();
    let model = model_after(&events[..14]);
    let style = TtyStyle {
        color: false,
        width: 140,
        height: 40,
    };
    let last = model.last_seen.expect("records have times");
    let frame = |later: u64| tty::frame(&model, last + Duration::from_secs(later), &style);
    // Two seconds later without a record: both ETAs counted down.
    let soon = frame(2);
    assert!(soon[1].contains("ETA 3.0s"), "overall: {soon:?}");
    assert!(soon[4].contains("ETA 3.0s"), "byte phase: {soon:?}");
    // Past the ETA without a record: no ETA at all, elapsed time instead.
    let stalled = frame(30);
    assert!(!stalled.iter().any(|l| l.contains("ETA")), "{stalled:?}");
    assert!(stalled[1].contains("elapsed 33.3s"), "{stalled:?}");
    // The item phase ("Write images", 0/1) shows how long it runs, no ETA.
    assert!(stalled[3].ends_with("0/1  33.0s"), "{stalled:?}");
}
