//! Opening COSI files: marker, metadata, extra entries, URLs, HTTP.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use trident_cosi::{
    CosiError, CosiSource, ErrorClass, ExpectedHash, HttpTimeouts, NoProgress, ResumePolicy,
    SourceOptions, stream_to_target,
};

use crate::common::*;

#[test]
fn expected_hash_accepts_hex_prefixed_hex_and_ignored_only() {
    let hex = "0a".repeat(48);
    assert_eq!(
        ExpectedHash::parse(&hex).unwrap(),
        ExpectedHash::Sha384(hex.clone())
    );
    assert_eq!(
        ExpectedHash::parse(&format!("sha384:{hex}")).unwrap(),
        ExpectedHash::Sha384(hex.clone())
    );
    assert_eq!(
        ExpectedHash::parse("ignored").unwrap(),
        ExpectedHash::Ignored
    );
    assert_eq!(
        ExpectedHash::from_optional(None).unwrap(),
        ExpectedHash::Ignored
    );
    for bad in ["", "IGNORED", &hex.to_uppercase(), &hex[1..]] {
        assert!(
            matches!(
                ExpectedHash::parse(bad),
                Err(CosiError::InvalidExpectedHash { .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn a_plain_tar_without_marker_is_not_cosi() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.tar");
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_ustar();
    h.set_size(2);
    b.append_data(&mut h, "metadata.json", &b"{}"[..]).unwrap();
    fs::write(&p, b.into_inner().unwrap()).unwrap();
    let err =
        CosiSource::open(&url(&p), &ExpectedHash::Ignored, &SourceOptions::default()).unwrap_err();
    assert!(matches!(err, CosiError::NotCosi { .. }), "{err}");
    let missing = CosiSource::open(
        &url(&dir.path().join("nope.cosi")),
        &ExpectedHash::Ignored,
        &SourceOptions::default(),
    )
    .unwrap_err();
    assert_eq!(missing.class(), ErrorClass::Io);
    let ftp = CosiSource::open(
        "ftp://host/x.cosi",
        &ExpectedHash::Ignored,
        &SourceOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(ftp, CosiError::UnsupportedUrl { .. }));
}

/// Re-packs a fixture with unknown entries before, between and after regions.
#[test]
fn unknown_entries_between_regions_are_ignored() {
    let f = fixture(&spec(1));
    let bytes = fs::read(&f.cosi.path).unwrap();
    let mut archive = tar::Archive::new(&bytes[..]);
    let mut out = tar::Builder::new(Vec::new());
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        if path.starts_with("images/partition") {
            let mut h = tar::Header::new_ustar();
            h.set_size(5);
            out.append_data(&mut h, format!("images/extra/{path}.sig"), &b"extra"[..])
                .unwrap();
        }
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        let mut h = entry.header().clone();
        out.append_data(&mut h, &path, &data[..]).unwrap();
    }
    let mut h = tar::Header::new_ustar();
    h.set_size(3);
    out.append_data(&mut h, "trailer.txt", &b"end"[..]).unwrap();
    let repacked = f.dir.path().join("repacked.cosi");
    fs::write(&repacked, out.into_inner().unwrap()).unwrap();

    let t = target(f.dir.path(), DISK);
    let hash = ExpectedHash::parse(&f.cosi.metadata_sha384).unwrap();
    let mut src = CosiSource::open(&url(&repacked), &hash, &SourceOptions::default()).unwrap();
    stream_to_target(&mut src, &t, &mut NoProgress).unwrap();
    assert_same_disk(&f, &t);
}

#[test]
fn metadata_lookups_find_filesystems_by_mount_point_and_part_type() {
    let f = fixture(&spec(1));
    let src = CosiSource::open(
        &url(&f.cosi.path),
        &ExpectedHash::Ignored,
        &SourceOptions::default(),
    )
    .unwrap();
    let m = src.metadata();
    assert_eq!(
        m.filesystem_by_mount_point("/boot/efi").unwrap().fs_type,
        "vfat"
    );
    assert_eq!(m.filesystem_by_mount_point("/").unwrap().fs_type, "ext4");
    let esp: Vec<_> = m
        .filesystems_by_part_type("C12A7328-F81F-11D2-BA4B-00A0C93EC93B")
        .collect();
    assert_eq!(esp.len(), 1);
    assert_eq!(
        src.image_hash(),
        format!("sha384:{}", f.cosi.metadata_sha384)
    );
}

/// `python3 -m http.server` on a free loopback port, killed on drop.
#[derive(Debug)]
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    fn serve(dir: &std::path::Path) -> HttpServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
            ])
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 is needed for the HTTP test");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "http.server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn http_source_streams_the_same_disk_as_a_file_and_404_is_an_http_error() {
    let f = fixture(&spec(4));
    let server = HttpServer::serve(f.dir.path());
    let t = target(f.dir.path(), DISK);
    let hash = ExpectedHash::parse(&f.cosi.metadata_sha384).unwrap();
    let url = format!("http://127.0.0.1:{}/image.cosi", server.port);
    let mut src = CosiSource::open(&url, &hash, &SourceOptions::default()).unwrap();
    let report = stream_to_target(&mut src, &t, &mut NoProgress).unwrap();
    assert_eq!(
        report.image_hash,
        format!("sha384:{}", f.cosi.metadata_sha384)
    );
    assert_same_disk(&f, &t);

    let missing = format!("http://127.0.0.1:{}/missing.cosi", server.port);
    let err = CosiSource::open(&missing, &hash, &SourceOptions::default()).unwrap_err();
    assert!(matches!(err, CosiError::Http { .. }), "{err}");
}

/// Source options belong to each open, not to the process: two opens in
/// one process, each with its own read timeout, against a server that
/// accepts and never answers.
#[test]
fn each_open_keeps_to_its_own_http_timeouts() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/image.cosi", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let options = |read: Duration| SourceOptions {
        http_timeouts: HttpTimeouts {
            connect: Duration::from_secs(10),
            read,
        },
        // One request each: the time measured is one read timeout.
        resume: ResumePolicy {
            max_retries: 0,
            ..ResumePolicy::default()
        },
        registry_auth_file: None,
        cancel: Default::default(),
        on_retry: Default::default(),
    };
    let open = |read| {
        let started = Instant::now();
        let err = CosiSource::open(&url, &ExpectedHash::Ignored, &options(read)).unwrap_err();
        assert!(matches!(err, CosiError::Http { .. }), "{err}");
        started.elapsed()
    };
    let short = open(Duration::from_millis(200));
    let long = open(Duration::from_millis(1500));
    assert!(long >= Duration::from_millis(1500), "{long:?}");
    assert!(short < Duration::from_millis(1500), "{short:?}");
}

#[test]
fn a_cancelled_source_fails_its_next_read_as_cancelled() {
    let f = fixture(&spec(3));
    let options = SourceOptions::default();
    let mut source =
        CosiSource::open(&url(&f.cosi.path), &ExpectedHash::Ignored, &options).unwrap();
    options.cancel.request();
    let error = source.verify_remaining().unwrap_err();
    assert!(matches!(error, CosiError::Cancelled { .. }), "{error}");
    assert!(error.to_string().contains("was cancelled"), "{error}");
}
