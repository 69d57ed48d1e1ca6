//! A small HTTP/1.1 file server for the resume tests: it serves ranges
//! (`Range`, `If-Range` with a strong ETag) and misbehaves on purpose:
//! closes the connection at given file offsets (each once), answers one
//! request 503, ignores `Range`, replaces the file at its first drop, or
//! stalls once. It counts the body bytes it sent and logs each request.

#![allow(clippy::unwrap_used)] // a test server fails loudly

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Default, Clone)]
pub struct Faults {
    /// File offsets at which a body is cut (the connection closed), once each.
    pub drops: Vec<u64>,
    pub ignore_range: bool,
    /// Served instead of the file from the first drop on (a new ETag).
    pub replacement: Option<Vec<u8>>,
    /// The first request is answered `503`.
    pub unavailable_once: bool,
    /// At this offset the body stops, once, for this long (then closes).
    pub stall: Option<(u64, Duration)>,
}

/// One request: the range asked for, the status answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    pub from: Option<u64>,
    pub status: u16,
}

struct State {
    file: Vec<u8>,
    etag: String,
    faults: Faults,
    drops: VecDeque<u64>,
    log: Vec<Served>,
}

#[derive(Clone)]
pub struct FaultyServer {
    pub url: String,
    state: Arc<Mutex<State>>,
    sent: Arc<AtomicU64>,
}

impl FaultyServer {
    pub fn start(file: Vec<u8>, faults: Faults) -> FaultyServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/image.cosi", listener.local_addr().unwrap());
        let mut drops: Vec<u64> = faults.drops.clone();
        drops.sort_unstable();
        let state = Arc::new(Mutex::new(State {
            file,
            etag: "\"v1\"".to_owned(),
            faults,
            drops: drops.into(),
            log: Vec::new(),
        }));
        let sent = Arc::new(AtomicU64::new(0));
        let server = FaultyServer { url, state, sent };
        let serving = server.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let s = serving.clone();
                std::thread::spawn(move || s.serve(conn));
            }
        });
        server
    }

    pub fn bytes_sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    pub fn log(&self) -> Vec<Served> {
        self.state.lock().unwrap().log.clone()
    }

    fn serve(&self, conn: TcpStream) {
        let mut reader = BufReader::new(conn.try_clone().unwrap());
        let (mut range, mut if_range) = (None, None);
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("range: bytes=") {
                range = v.trim().trim_end_matches('-').parse::<u64>().ok();
            } else if lower.starts_with("if-range:") {
                if_range = Some(line[9..].trim().to_owned());
            }
            line.clear();
        }
        let mut out = conn;
        let (head, body, from, cut, stall) = {
            let mut st = self.state.lock().unwrap();
            if st.faults.unavailable_once {
                st.faults.unavailable_once = false;
                st.log.push(Served {
                    from: range,
                    status: 503,
                });
                let _ = out.write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                return;
            }
            let len = st.file.len() as u64;
            let ranged = range.filter(|_| {
                !st.faults.ignore_range && if_range.as_deref().is_none_or(|v| v == st.etag)
            });
            let from = ranged.unwrap_or(0);
            let accept = if st.faults.ignore_range {
                ""
            } else {
                "Accept-Ranges: bytes\r\n"
            };
            let head = match ranged {
                Some(f) => format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {f}-{}/{len}\r\nETag: {}\r\n{accept}Connection: close\r\n\r\n",
                    len - f,
                    len - 1,
                    st.etag
                ),
                None => format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nETag: {}\r\n{accept}Connection: close\r\n\r\n",
                    st.etag
                ),
            };
            st.log.push(Served {
                from: range,
                status: if ranged.is_some() { 206 } else { 200 },
            });
            // The first fault past `from` happens on this body.
            let next_drop = st.drops.iter().copied().find(|d| *d > from);
            let stall = st
                .faults
                .stall
                .filter(|(at, _)| *at > from && next_drop.is_none_or(|d| *at < d));
            let cut = if stall.is_some() {
                st.faults.stall = None;
                None
            } else {
                next_drop
            };
            if let Some(d) = cut {
                st.drops.retain(|x| *x != d);
            }
            (head, st.file.clone(), from, cut, stall)
        };
        if out.write_all(head.as_bytes()).is_err() {
            return;
        }
        let mut end = body.len() as u64;
        if let Some(at) = cut {
            end = end.min(at);
        }
        if let Some((at, _)) = stall {
            end = end.min(at);
        }
        let part = &body[from as usize..end as usize];
        for chunk in part.chunks(16 << 10) {
            if out.write_all(chunk).is_err() {
                return;
            }
            self.sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
        }
        if cut.is_some() {
            let mut st = self.state.lock().unwrap();
            if let Some(new) = st.faults.replacement.take() {
                st.file = new;
                st.etag = "\"v2\"".to_owned();
            }
        }
        if let Some((_, hold)) = stall {
            std::thread::sleep(hold);
        }
        // Dropping `out` closes the connection.
    }
}
