//! A faulty HTTP/1.1 image server for the resume tests: std `TcpListener`,
//! one thread per connection, serving one file with byte ranges (`Range:
//! bytes=N-` or `bytes=N-M`, `If-Range` against its strong `ETag`,
//! `Accept-Ranges`) and faults chosen by the test:
//!
//! - close the connection at given file offsets, each once
//!   ([`Faults::drop_at`], [`Faults::drop_at_random`], seeded);
//! - ignore `Range` (answer `200` with the whole file, no `Accept-Ranges`);
//! - replace the file at the first drop (a new `ETag`, other bytes);
//! - stall once at an offset (hold the connection silent).
//!
//! It counts the body bytes it sent and logs every request, so a test
//! asserts how much a download cost, not only that it ended.

#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does wrong.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    drops: Vec<u64>,
    ignore_range: bool,
    replacement: Option<Vec<u8>>,
    stall: Option<u64>,
}

impl Faults {
    /// Close the connection once when the body reaches file offset `at`.
    pub fn drop_at(mut self, at: u64) -> Self {
        self.drops.push(at);
        self
    }

    /// `count` drops at offsets drawn from `seed` inside the middle 90 %
    /// of a file of `len` bytes, each at least 1/(4·count) of the file from
    /// the others.
    pub fn drop_at_random(mut self, count: usize, seed: u64, len: u64) -> Self {
        let mut state = seed;
        let gap = len / (4 * count as u64).max(1);
        while self.drops.len() < count {
            let at = len / 20 + splitmix64(&mut state) % (len * 9 / 10);
            if self.drops.iter().all(|d| d.abs_diff(at) >= gap) {
                self.drops.push(at);
            }
        }
        self
    }

    /// Answer every request with the whole file (`200`), no `Accept-Ranges`.
    pub fn ignore_range(mut self) -> Self {
        self.ignore_range = true;
        self
    }

    /// From the first drop on, serve `bytes` instead (a new `ETag`).
    pub fn replace_at_first_drop(mut self, bytes: Vec<u8>) -> Self {
        self.replacement = Some(bytes);
        self
    }

    /// Stop sending, once, at offset `at` and hold the connection silent
    /// until the client gives up on it (or the server stops).
    pub fn stall_at(mut self, at: u64) -> Self {
        self.stall = Some(at);
        self
    }

    /// The drop offsets, sorted.
    pub fn drops(&self) -> Vec<u64> {
        let mut drops = self.drops.clone();
        drops.sort_unstable();
        drops
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One request the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `Range: bytes=N-` asked for.
    pub range_from: Option<u64>,
    /// The last byte of `Range: bytes=N-M`, when one was asked for.
    pub range_to: Option<u64>,
    pub if_range: Option<String>,
    /// 200 or 206.
    pub status: u16,
    /// Body bytes sent.
    pub sent: u64,
}

struct State {
    file: Arc<Vec<u8>>,
    etag: String,
    drops: VecDeque<u64>,
    ignore_range: bool,
    replacement: Option<Vec<u8>>,
    stall: Option<u64>,
    requests: Vec<Request>,
}

/// The running server; stops (releasing a stalled connection) on drop.
#[derive(Debug)]
pub struct FaultyServer {
    port: u16,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    sent: AtomicU64,
    stop: AtomicBool,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("etag", &self.etag)
            .finish_non_exhaustive()
    }
}

impl FaultyServer {
    /// Serves the bytes of `file` with `faults` on a free loopback port.
    pub fn start(file: &Path, faults: Faults) -> FaultyServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                file: Arc::new(std::fs::read(file).unwrap()),
                etag: "\"image-1\"".to_owned(),
                drops: faults.drops().into(),
                ignore_range: faults.ignore_range,
                replacement: faults.replacement,
                stall: faults.stall,
                requests: Vec::new(),
            }),
            sent: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let serving = shared.clone();
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !serving.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let shared = serving.clone();
                        std::thread::spawn(move || serve(conn, &shared));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        FaultyServer { port, shared }
    }

    /// The loopback port it listens on (for a proxy in front of it).
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/image.cosi", self.port)
    }

    /// Body bytes sent over all requests.
    pub fn bytes_served(&self) -> u64 {
        self.shared.sent.load(Ordering::SeqCst)
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.state.lock().unwrap().requests.clone()
    }
}

impl Drop for FaultyServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

/// What one answer sends: its head, the file, from where, to where, and
/// whether it ends in a stall.
struct Answer {
    head: String,
    file: Arc<Vec<u8>>,
    from: u64,
    end: u64,
    cut: bool,
    stall: bool,
}

fn serve(conn: TcpStream, shared: &Shared) {
    conn.set_nonblocking(false).unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let (mut range_from, mut range_to, mut if_range) = (None, None, None);
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("range: bytes=") {
            let (from, to) = v.trim().split_once('-').unwrap_or((v.trim(), ""));
            range_from = from.parse::<u64>().ok();
            range_to = to.parse::<u64>().ok();
        } else if lower.starts_with("if-range:") {
            if_range = Some(line["if-range:".len()..].trim().to_owned());
        }
        line.clear();
    }
    let answer = answer(shared, (range_from, range_to), if_range);
    let mut out = conn;
    if out.write_all(answer.head.as_bytes()).is_err() {
        return;
    }
    let mut sent = 0;
    for chunk in answer.file[answer.from as usize..answer.end as usize].chunks(64 << 10) {
        if out.write_all(chunk).is_err() {
            break;
        }
        sent += chunk.len() as u64;
        shared.sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
    }
    let _ = out.flush();
    let mut state = shared.state.lock().unwrap();
    if let Some(last) = state.requests.last_mut() {
        last.sent = sent;
    }
    if answer.cut
        && let Some(new) = state.replacement.take()
    {
        state.file = Arc::new(new);
        state.etag = "\"image-2\"".to_owned();
    }
    drop(state);
    if answer.stall {
        while !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // Dropping `out` closes the connection.
}

fn answer(shared: &Shared, range: (Option<u64>, Option<u64>), if_range: Option<String>) -> Answer {
    let (range_from, range_to) = range;
    let mut st = shared.state.lock().unwrap();
    let len = st.file.len() as u64;
    // The end of the answer's body: the range's last byte + 1, or the file's end.
    let stop = range_to.map_or(len, |to| (to + 1).min(len));
    let ranged = range_from
        .filter(|from| !st.ignore_range && *from < len)
        .filter(|_| if_range.as_deref().is_none_or(|v| v == st.etag));
    let from = ranged.unwrap_or(0);
    let accept = if st.ignore_range {
        ""
    } else {
        "Accept-Ranges: bytes\r\n"
    };
    let head = match ranged {
        Some(f) => format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {f}-{}/{len}\r\nETag: {}\r\n{accept}Connection: close\r\n\r\n",
            stop - f,
            stop - 1,
            st.etag
        ),
        None => format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nETag: {}\r\n{accept}Connection: close\r\n\r\n",
            st.etag
        ),
    };
    st.requests.push(Request {
        range_from,
        range_to,
        if_range,
        status: if ranged.is_some() { 206 } else { 200 },
        sent: 0,
    });
    // The first fault past `from` (and before this body's end) happens on it.
    let body_end = if ranged.is_some() { stop } else { len };
    let next_drop = st
        .drops
        .iter()
        .copied()
        .find(|d| *d > from && *d < body_end);
    let stall = st
        .stall
        .filter(|at| *at > from && *at < body_end && next_drop.is_none_or(|d| *at < d));
    let (end, cut) = match (stall, next_drop) {
        (Some(at), _) => {
            st.stall = None;
            (at, false)
        }
        (None, Some(at)) => {
            st.drops.retain(|d| *d != at);
            (at.min(len), true)
        }
        (None, None) => (body_end, false),
    };
    Answer {
        head,
        file: st.file.clone(),
        from,
        end,
        cut,
        stall: stall.is_some(),
    }
}
