//! Rate-limited HTTP on loopback, for tests of slow `http://` image
//! sources (progress, ETAs) and for the adaptive-update benchmark:
//!
//! - [`ThrottledServer`]: sends one file at a fixed rate, every request
//!   the whole file;
//! - [`ThrottledProxy`]: relays to another local server (ranges, many
//!   files: whatever it serves) through one shared link of a fixed rate,
//!   and counts the bytes it delivered, so tools that fetch differently
//!   (ranges, a chunk store) are compared on one link and one meter.
//!
//! Both run until their process exits (the proxy: until dropped).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Time between two chunks of a [`ThrottledServer`]'s body.
const TICK: Duration = Duration::from_millis(50);
/// Largest piece the proxy sends at once: small enough that the link's
/// pacing stays smooth at 100 Mbit/s (1.3 ms per piece).
const PROXY_PIECE: usize = 16 << 10;

/// A link of a fixed rate shared by whoever sends through it: each send
/// waits for its turn, so all of them together stay at the rate. Paced
/// against absolute times, so a busy machine's late wake-ups do not make
/// the rate drift; but a turn never starts before now, so an idle link
/// saves up no burst.
#[derive(Debug)]
pub struct Pacer {
    bytes_per_second: u64,
    next: Mutex<Option<Instant>>,
}

impl Pacer {
    pub fn new(bytes_per_second: u64) -> Pacer {
        Pacer {
            bytes_per_second: bytes_per_second.max(1),
            next: Mutex::new(None),
        }
    }

    /// Waits until `len` more bytes may go out.
    pub fn wait(&self, len: usize) {
        let due = {
            let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let start = next.map_or(now, |n| n.max(now));
            *next =
                Some(start + Duration::from_secs_f64(len as f64 / self.bytes_per_second as f64));
            start
        };
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
}

/// The running server.
#[derive(Debug)]
pub struct ThrottledServer {
    port: u16,
}

impl ThrottledServer {
    /// Serves `file` at `bytes_per_second` on a free loopback port.
    pub fn start(file: &Path, bytes_per_second: u64) -> std::io::Result<ThrottledServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let body: Arc<Vec<u8>> = Arc::new(std::fs::read(file)?);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let body = body.clone();
                std::thread::spawn(move || serve(conn, &body, bytes_per_second));
            }
        });
        Ok(ThrottledServer { port })
    }

    /// The URL of the file.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/image.cosi", self.port)
    }
}

fn serve(mut conn: TcpStream, body: &[u8], bytes_per_second: u64) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if conn.write_all(head.as_bytes()).is_err() {
        return;
    }
    // Each connection its own link, as before the pacer was shared.
    let pacer = Pacer::new(bytes_per_second);
    let ticks_per_second = (Duration::from_secs(1).as_millis() / TICK.as_millis()) as u64;
    let chunk = usize::try_from((bytes_per_second / ticks_per_second).max(1)).unwrap_or(1);
    for part in body.chunks(chunk) {
        pacer.wait(part.len());
        if conn.write_all(part).is_err() {
            return;
        }
    }
}

/// A TCP relay on a free loopback port to `127.0.0.1:upstream`: requests
/// pass as they come, answers through one [`Pacer`] shared by all
/// connections (one link), counted. Stops accepting when dropped.
#[derive(Debug)]
pub struct ThrottledProxy {
    port: u16,
    delivered: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl ThrottledProxy {
    pub fn start(upstream: u16, bytes_per_second: u64) -> std::io::Result<ThrottledProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        // Non-blocking accept, polled, so that dropping the proxy ends its
        // thread (a blocking accept would wait for one more connection).
        listener.set_nonblocking(true)?;
        let delivered = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let pacer = Arc::new(Pacer::new(bytes_per_second));
        let (count, stopped) = (delivered.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let (pacer, count) = (pacer.clone(), count.clone());
                        std::thread::spawn(move || relay(conn, upstream, &pacer, &count));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(ThrottledProxy {
            port,
            delivered,
            stop,
        })
    }

    /// `http://127.0.0.1:PORT/path` through the proxy.
    pub fn url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.port,
            path.trim_start_matches('/')
        )
    }

    /// Bytes delivered to clients so far (answers' heads and bodies).
    pub fn bytes_delivered(&self) -> u64 {
        self.delivered.load(Ordering::SeqCst)
    }
}

impl Drop for ThrottledProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One client connection: the request side copied as is on a thread of
/// its own, the answer side paced and counted on this one.
fn relay(client: TcpStream, upstream: u16, pacer: &Pacer, delivered: &AtomicU64) {
    let _ = client.set_nonblocking(false);
    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return;
    };
    let (Ok(mut client_in), Ok(mut server_out)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_in, &mut server_out);
        let _ = server_out.shutdown(Shutdown::Write);
    });
    let (mut from, mut to) = (server, client);
    let mut buf = vec![0u8; PROXY_PIECE];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pacer.wait(n);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        delivered.fetch_add(n as u64, Ordering::SeqCst);
    }
    let _ = to.shutdown(Shutdown::Both);
}
