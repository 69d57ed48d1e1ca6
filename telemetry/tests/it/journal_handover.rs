//! Handing the journal over (`Bus::hand_over_journal`): the target gets the
//! merge of both journals, each record once, oldest dropped past the bound,
//! in segments no larger than the segment size, with the handed
//! operation's end; a target that cannot be written is an error that
//! leaves the old journal in place.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use trident_proto::v1::{
    ErrorReport, OperationEvent, RebootStatus, StatusCode, TridentError, record,
};
use trident_telemetry::journal::{HandedEnd, read_records};
use trident_telemetry::{Bus, BusConfig};

const SEGMENT: u64 = 4096;
const BOUND: u64 = 16 * 1024;

fn bus(dir: &Path, boot: &str) -> Bus {
    Bus::new(BusConfig {
        journal_segment_bytes: SEGMENT,
        journal_max_bytes: BOUND,
        boot_id: boot.to_owned(),
        ..BusConfig::with_state_dir(dir)
    })
    .unwrap()
}

fn report(op: &str, n: usize) -> ErrorReport {
    ErrorReport {
        operation_id: op.to_owned(),
        subkind: "test".into(),
        message: format!("error number {n} of a long series, padded to take room on disk"),
        ..ErrorReport::default()
    }
}

fn cursors(dir: &Path) -> Vec<(String, u64)> {
    read_records(dir)
        .unwrap()
        .into_iter()
        .map(|r| {
            let c = r.cursor.unwrap();
            (c.run_id, c.sequence)
        })
        .collect()
}

#[test]
fn a_handover_merges_each_record_once_within_the_bounds_and_records_the_end() {
    let root = tempfile::tempdir().unwrap();
    let target = root.path().join("other-volume/journal");

    // The receiving volume's own history (another boot).
    let other = bus(&root.path().join("other"), "boot-other");
    for n in 0..20 {
        other.report_error(report("op-other", n));
    }
    other.shutdown();
    let other_state = root.path().join("other/journal");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(&other_state, &target).unwrap();
    let theirs = cursors(&target);

    let here = bus(&root.path().join("here"), "boot-here");
    for n in 0..50 {
        here.report_error(report("op-here", n));
    }
    let first = here.hand_over_journal(&target, None).unwrap();
    assert_eq!(first.duplicates, 0);
    let merged = cursors(&target);
    assert_eq!(&merged[..theirs.len()], &theirs[..], "their history first");
    assert_eq!(merged.len() as u64, first.records);

    // Again, with a few more records and the operation's end: what both
    // journals hold is written once.
    for n in 50..60 {
        here.report_error(report("op-here", n));
    }
    let end = HandedEnd {
        operation_id: "op-here".into(),
        result: StatusCode::Failure,
        reboot_status: RebootStatus::RebootRequired,
        error: Some((TridentError::default(), report("op-here", 999))),
    };
    let second = here.hand_over_journal(&target, Some(end)).unwrap();
    assert_eq!(second.duplicates, 50, "{second:?}");
    assert_eq!(second.records, first.records + 10 + 2, "{second:?}");
    let records = read_records(&target).unwrap();
    // The end comes last, in a run of its own, after the newest record.
    let last = records.last().unwrap();
    assert!(matches!(&last.record, Some(record::Record::Operation(o))
        if o.event == OperationEvent::Completed as i32 && o.result == StatusCode::Failure as i32));
    assert_eq!(last.boot_id, "boot-here");
    assert!(matches!(&records[records.len() - 2].record,
        Some(record::Record::Error(e)) if e.message.contains("999")));
    assert!(matches!(&records[records.len() - 3].record,
        Some(record::Record::Error(e)) if e.message.contains("number 59 ")));

    // Past the bound: the oldest records go, whole journal and each
    // segment stay within their sizes, nothing twice.
    for n in 60..300 {
        here.report_error(report("op-here", n));
    }
    let third = here.hand_over_journal(&target, None).unwrap();
    assert!(third.dropped > 0, "the bound applies: {third:?}");
    let all = cursors(&target);
    let unique: std::collections::HashSet<_> = all.iter().collect();
    assert_eq!(unique.len(), all.len());
    let mut total = 0;
    for entry in std::fs::read_dir(&target).unwrap() {
        let size = entry.unwrap().metadata().unwrap().len();
        assert!(size <= SEGMENT, "segment of {size} bytes");
        total += size;
    }
    assert!(total <= BOUND, "journal of {total} bytes");
    let newest = read_records(&target).unwrap().pop().unwrap();
    assert!(matches!(&newest.record,
        Some(record::Record::Error(e)) if e.message.contains("number 299 ")));

    // A target that cannot be written: an error, the old journal intact.
    let blocked = root.path().join("blocked");
    std::fs::write(&blocked, b"a file, not a folder").unwrap();
    assert!(
        here.hand_over_journal(&blocked.join("journal"), None)
            .is_err()
    );
    assert_eq!(cursors(&target), all);
    // Nor its own folder (the writer's).
    let own = root.path().join("here/journal");
    assert!(here.hand_over_journal(&own, None).is_err());
    assert!(!read_records(&own).unwrap().is_empty());
}

#[test]
fn readers_cursors_go_with_the_journal_brought_up_to_date_by_their_hooks_first() {
    let root = tempfile::tempdir().unwrap();
    let target = root.path().join("other-volume/journal");
    let here = bus(&root.path().join("here"), "boot-here");
    here.report_error(report("op-here", 1));
    let journal = root.path().join("here/journal");
    // The target's own stale cursor is replaced, the reader's hook runs
    // before the copy, and other files of the folder stay behind.
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("otlp-traces.cursor"), "stale 1 1\n").unwrap();
    std::fs::write(journal.join("otlp-traces.cursor"), "before-the-hook\n").unwrap();
    std::fs::write(journal.join("notes.txt"), "not carried").unwrap();
    let cursor = journal.join("otlp-traces.cursor");
    here.before_journal_handover(std::sync::Arc::new(move || {
        std::fs::write(&cursor, "run-here 7 1234\n").unwrap();
    }));
    here.hand_over_journal(&target, None).unwrap();
    assert_eq!(
        std::fs::read_to_string(target.join("otlp-traces.cursor")).unwrap(),
        "run-here 7 1234\n"
    );
    assert!(!target.join("notes.txt").exists());
    assert_eq!(read_records(&target).unwrap().len(), 1);
}
