//! A misbehaving HTTP image server for fault tests: std `TcpListener`, one
//! thread per connection, serving one file with a chosen fault.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How the server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerFault {
    /// Nothing listens on the port: connections are refused.
    Refuse,
    /// Accepts, reads the request, never answers.
    SilentAfterAccept,
    /// Sends the head and half the body, then holds the connection silent.
    StallMidBody,
    /// Announces the whole length, sends half, closes.
    ShortBody,
    /// Announces half the length (and sends the whole file, then closes).
    ContentLengthTooSmall,
    /// No fault: the whole file, slowly (64 KiB every 10 ms), like the
    /// slow server of the crash tests.
    Slow,
}

/// The server; stops (releasing stalled connections) on drop.
#[derive(Debug)]
pub struct ImageServer {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl ImageServer {
    pub fn start(file: &Path, fault: ServerFault) -> ImageServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        if fault == ServerFault::Refuse {
            drop(listener);
            return ImageServer { port, stop };
        }
        let file: PathBuf = file.to_owned();
        let stopping = stop.clone();
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (file, stopping) = (file.clone(), stopping.clone());
                        std::thread::spawn(move || serve(stream, &file, fault, &stopping));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        ImageServer { port, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/image.cosi", self.port)
    }
}

impl Drop for ImageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(stream: TcpStream, file: &Path, fault: ServerFault, stop: &AtomicBool) {
    stream.set_nonblocking(false).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    // The request head ends with an empty line.
    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
        line.clear();
    }
    let body = std::fs::read(file).unwrap();
    let half = body.len() / 2;
    let mut out = stream;
    let head = |len: usize| {
        format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n")
    };
    let _ = match fault {
        ServerFault::Refuse => Ok(()),
        ServerFault::SilentAfterAccept => {
            hold(stop);
            Ok(())
        }
        ServerFault::StallMidBody => {
            let sent = out
                .write_all(head(body.len()).as_bytes())
                .and_then(|()| out.write_all(&body[..half]))
                .and_then(|()| out.flush());
            hold(stop);
            sent
        }
        ServerFault::ShortBody => out
            .write_all(head(body.len()).as_bytes())
            .and_then(|()| out.write_all(&body[..half])),
        ServerFault::ContentLengthTooSmall => out
            .write_all(head(half).as_bytes())
            .and_then(|()| out.write_all(&body)),
        ServerFault::Slow => out.write_all(head(body.len()).as_bytes()).and_then(|()| {
            for chunk in body.chunks(64 * 1024) {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                out.write_all(chunk)?;
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(())
        }),
    };
    // Dropping `out` closes the connection.
}

/// Keeps the connection open and silent until the server stops.
fn hold(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
}
