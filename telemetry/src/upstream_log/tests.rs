#![allow(clippy::unwrap_used)]

use std::io::Write;

use trident_proto::v1::{LogLevel, LogRecord, ReadUpstreamLogRequest, Record, record};

use super::*;

fn line(level: &str, target: &str, message: &str, second: u32) -> String {
    format!(
        r#"{{"level":"{level}","message":{message:?},"target":"{target}","module":"{target}","file":"src/x.rs","line":1,"timestamp":"2026-01-02T03:04:{second:02}.5Z"}}"#
    )
}

fn log(record: &Record) -> &LogRecord {
    match &record.record {
        Some(record::Record::Log(log)) => log,
        other => panic!("{other:?}"),
    }
}

/// Reads `content` as upstream's log; the records' messages and the summary.
fn read_text(
    content: &[u8],
    request: &ReadUpstreamLogRequest,
) -> (Vec<String>, UpstreamLogSummary) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trident-full.log");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(content)
        .unwrap();
    let mut messages = Vec::new();
    let summary = read(&path, request, |batch| {
        messages.extend(batch.iter().map(|r| log(r).message.clone()));
        true
    });
    (messages, summary)
}

fn sample() -> Vec<u8> {
    [
        line("info", "trident", "first", 1),
        line("debug", "osutils::exe", "second", 2),
        "not json at all".to_owned(),
        line("error", "trident::engine", "third", 3),
        r#"{"level":"info","message":"cut by a cr"#.to_owned(),
    ]
    .join("\n")
    .into_bytes()
}

#[test]
fn every_line_is_served_in_order_and_the_unparsed_are_counted() {
    let (messages, summary) = read_text(&sample(), &ReadUpstreamLogRequest::default());
    assert_eq!(
        messages,
        [
            "first",
            "second",
            "not json at all",
            "third",
            r#"{"level":"info","message":"cut by a cr"#
        ]
    );
    assert!(summary.found);
    assert_eq!((summary.lines, summary.unparsed_lines), (5, 2));
    assert!(summary.error.is_empty());
}

#[test]
fn filters_apply_and_unparsed_lines_follow_the_time_before_them() {
    let by_level = ReadUpstreamLogRequest {
        min_level: LogLevel::Info as i32,
        ..Default::default()
    };
    assert_eq!(read_text(&sample(), &by_level).0, ["first", "third"]);
    let by_target = ReadUpstreamLogRequest {
        target_prefixes: vec!["osutils".into()],
        ..Default::default()
    };
    assert_eq!(read_text(&sample(), &by_target).0, ["second"]);
    // 03:04:02 and later: the unparsed line after "second" is too.
    let since = ReadUpstreamLogRequest {
        since: Some(Timestamp {
            seconds: 1_767_323_042,
            nanos: 0,
        }),
        ..Default::default()
    };
    assert_eq!(
        read_text(&sample(), &since).0,
        [
            "second",
            "not json at all",
            "third",
            r#"{"level":"info","message":"cut by a cr"#
        ]
    );
}

#[test]
fn tail_keeps_the_last_matching_records_in_small_batches() {
    let content: String = (0..50)
        .map(|i| line("info", "trident", &format!("m{i}"), i % 60) + "\n")
        .collect();
    let request = ReadUpstreamLogRequest {
        tail: Some(3),
        max_batch: 2,
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    std::fs::write(&path, content).unwrap();
    let mut batches: Vec<Vec<String>> = Vec::new();
    read(&path, &request, |batch| {
        batches.push(batch.iter().map(|r| log(r).message.clone()).collect());
        true
    });
    assert_eq!(batches, vec![vec!["m47", "m48"], vec!["m49"]]);
}

#[test]
fn a_missing_file_is_not_found_and_a_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let request = ReadUpstreamLogRequest::default();
    let missing = read(&dir.path().join("none"), &request, |_| true);
    assert!(!missing.found && missing.error.is_empty() && missing.lines == 0);
    let directory = read(dir.path(), &request, |_| true);
    assert!(
        directory.found && !directory.error.is_empty(),
        "{directory:?}"
    );
}

#[test]
fn a_huge_line_is_cut_and_reading_stops_when_the_receiver_is_gone() {
    let mut content = vec![b'x'; MAX_LINE * 3];
    content.push(b'\n');
    content.extend_from_slice(line("info", "t", "after", 1).as_bytes());
    let (messages, summary) = read_text(&content, &ReadUpstreamLogRequest::default());
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].len(), MAX_LINE);
    assert_eq!(messages[1], "after");
    assert_eq!((summary.cut_lines, summary.unparsed_lines), (1, 1));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let many: String = (0..1000)
        .map(|i| line("info", "t", "m", i % 60) + "\n")
        .collect();
    std::fs::write(&path, many).unwrap();
    let mut calls = 0;
    let request = ReadUpstreamLogRequest {
        max_batch: 10,
        ..Default::default()
    };
    let summary = read(&path, &request, |_| {
        calls += 1;
        false
    });
    assert_eq!((calls, summary.lines), (1, 10));
}
