//! Resumed `http(s)://` downloads against a real (misbehaving) HTTP server
//! on loopback: drops, a 503, a stall, a server that ignores `Range`, a
//! file replaced between requests. The bytes read are the file's, never a
//! mix, and every retry reaches the caller's observer.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use trident_cosi::{
    CosiError, CosiSource, ExpectedHash, HttpTimeouts, ResumePolicy, RetryNotice, RetryObserver,
    SourceOptions, open_url,
};

use crate::common::*;
use crate::faulty_http::{Faults, FaultyServer, Served};

/// Deterministic, incompressible-looking bytes.
fn file(len: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Fast retries, and every notice kept.
fn fast_retries(max_retries: u32, restarts: u32) -> (SourceOptions, Arc<Mutex<Vec<RetryNotice>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let options = SourceOptions {
        http_timeouts: HttpTimeouts {
            connect: Duration::from_secs(5),
            read: Duration::from_millis(300),
        },
        resume: ResumePolicy {
            max_retries,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(40),
            deadline: Duration::from_secs(60),
            max_restarts_without_ranges: restarts,
        },
        on_retry: RetryObserver::new(move |n: &RetryNotice| log.lock().unwrap().push(n.clone())),
        ..SourceOptions::default()
    };
    (options, seen)
}

fn read_all(url: &str, options: &SourceOptions) -> Result<Vec<u8>, CosiError> {
    let mut out = Vec::new();
    open_url(url, options)?
        .read_to_end(&mut out)
        .map_err(|e| CosiError::from_io(url, e))?;
    Ok(out)
}

#[test]
fn one_drop_resumes_at_the_byte_it_stopped_without_starting_over() {
    let data = file(1 << 20);
    let server = FaultyServer::start(
        data.clone(),
        Faults {
            drops: vec![400_000],
            ..Faults::default()
        },
    );
    let (options, seen) = fast_retries(5, 0);
    assert_eq!(read_all(&server.url, &options).unwrap(), data);
    assert_eq!(server.bytes_sent(), data.len() as u64);
    assert_eq!(
        server.log(),
        [
            Served {
                from: None,
                status: 200
            },
            Served {
                from: Some(400_000),
                status: 206
            }
        ]
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].attempt, seen[0].offset), (1, 400_000));
    assert_eq!(seen[0].total, Some(data.len() as u64));
    assert!(
        seen[0]
            .reason
            .contains("closed the connection after 400000"),
        "{:?}",
        seen[0]
    );
}

#[test]
fn five_drops_a_503_and_a_stall_each_resume_where_they_left_off() {
    let data = file(2 << 20);
    let server = FaultyServer::start(
        data.clone(),
        Faults {
            drops: vec![100_000, 333_333, 900_001, 1_500_000, 2_000_000],
            stall: Some((1_200_000, Duration::from_secs(2))),
            ..Faults::default()
        },
    );
    let (options, seen) = fast_retries(10, 0);
    assert_eq!(read_all(&server.url, &options).unwrap(), data);
    assert_eq!(server.bytes_sent(), data.len() as u64);
    let offsets: Vec<u64> = seen.lock().unwrap().iter().map(|n| n.offset).collect();
    assert_eq!(
        offsets,
        [100_000, 333_333, 900_001, 1_200_000, 1_500_000, 2_000_000]
    );
    let stall = &seen.lock().unwrap()[3];
    assert!(
        stall.reason.to_lowercase().contains("timeout") || stall.reason.contains("timed out"),
        "{stall:?}"
    );

    let unavailable = FaultyServer::start(
        data.clone(),
        Faults {
            unavailable_once: true,
            ..Faults::default()
        },
    );
    let (options, seen) = fast_retries(2, 0);
    assert_eq!(read_all(&unavailable.url, &options).unwrap(), data);
    assert!(
        seen.lock().unwrap()[0].reason.contains("503"),
        "{:?}",
        seen.lock().unwrap()
    );
}

#[test]
fn retries_are_bounded_and_the_failure_says_how_many_were_made() {
    let data = file(1 << 20);
    let server = FaultyServer::start(
        data,
        Faults {
            drops: vec![100_000, 200_000, 300_000],
            ..Faults::default()
        },
    );
    let (options, seen) = fast_retries(2, 0);
    let err = read_all(&server.url, &options).unwrap_err();
    assert_eq!(err.subkind(), "read-image", "{err}");
    let text = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(text.contains("gave up after 2 retries"), "{text}");
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn a_server_that_ignores_range_is_read_again_from_the_start_within_the_bound() {
    let data = file(1 << 20);
    let faults = Faults {
        drops: vec![300_000, 600_000],
        ignore_range: true,
        ..Faults::default()
    };
    let server = FaultyServer::start(data.clone(), faults.clone());
    let (options, seen) = fast_retries(5, 2);
    assert_eq!(read_all(&server.url, &options).unwrap(), data);
    // 300 000 + 600 000 + the whole file: re-read, not resumed.
    assert_eq!(server.bytes_sent(), 900_000 + data.len() as u64);
    let restarts = seen.lock().unwrap().iter().filter(|n| n.restart).count();
    assert_eq!(restarts, 2);

    let server = FaultyServer::start(data, faults);
    let (options, _) = fast_retries(5, 1);
    let err = read_all(&server.url, &options).unwrap_err();
    assert_eq!(err.subkind(), "image-server-no-ranges", "{err}");
    assert!(
        err.to_string().contains("does not serve byte ranges"),
        "{err}"
    );
}

#[test]
fn a_file_replaced_between_requests_is_never_mixed() {
    let data = file(1 << 20);
    let server = FaultyServer::start(
        data.clone(),
        Faults {
            drops: vec![500_000],
            replacement: Some(file(1 << 19)),
            ..Faults::default()
        },
    );
    let (options, _) = fast_retries(5, 2);
    let mut stream = open_url(&server.url, &options).unwrap();
    let mut got = Vec::new();
    let err = stream.read_to_end(&mut got).unwrap_err();
    let err = CosiError::from_io(&server.url, err);
    assert_eq!(err.subkind(), "image-changed-during-download", "{err}");
    assert!(err.to_string().contains("ETag"), "{err}");
    // Only the first file's bytes were handed up.
    assert_eq!(got, data[..500_000]);
    // The If-Range request was answered with the new file, whole: 200.
    assert_eq!(
        server.log()[1],
        Served {
            from: Some(500_000),
            status: 200
        }
    );
}

#[test]
fn a_cosi_streams_through_drops_with_every_region_verified() {
    let f = fixture(&spec(5));
    let cosi = std::fs::read(&f.cosi.path).unwrap();
    let len = cosi.len() as u64;
    let server = FaultyServer::start(
        cosi,
        Faults {
            drops: vec![len / 5, len / 2, len * 4 / 5],
            ..Faults::default()
        },
    );
    let (options, seen) = fast_retries(5, 0);
    let mut source = CosiSource::open(&server.url, &ExpectedHash::Ignored, &options).unwrap();
    source.verify_remaining().unwrap();
    assert_eq!(seen.lock().unwrap().len(), 3);
    assert_eq!(server.bytes_sent(), len);
}

#[test]
fn a_server_that_cannot_be_reached_is_reported_at_once_without_retries() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (options, seen) = fast_retries(5, 0);
    let err = read_all(&format!("http://127.0.0.1:{port}/x.cosi"), &options).unwrap_err();
    assert_eq!(err.subkind(), "download-image", "{err}");
    assert!(seen.lock().unwrap().is_empty());
}
