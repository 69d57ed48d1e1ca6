//! A local HTTP/1.1 server that sends one file at a fixed rate, for tests
//! of slow `http://` image sources (progress, ETAs). Paced against an
//! absolute schedule so the rate does not drift on a busy machine; every
//! request gets the whole file. Runs until the test process exits.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Time between two chunks of the body.
const TICK: Duration = Duration::from_millis(50);

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
    let ticks_per_second = (Duration::from_secs(1).as_millis() / TICK.as_millis()) as u64;
    let chunk = usize::try_from((bytes_per_second / ticks_per_second).max(1)).unwrap_or(1);
    let start = Instant::now();
    for (i, part) in body.chunks(chunk).enumerate() {
        let due = start + TICK * u32::try_from(i).unwrap_or(u32::MAX);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        if conn.write_all(part).is_err() {
            return;
        }
    }
}
