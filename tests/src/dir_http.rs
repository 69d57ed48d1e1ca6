//! Python's `http.server` serving a directory on a free loopback port:
//! the plain HTTP file server of tests that fetch images (COSI files,
//! extension images) over `http://`. Returns once it accepts connections;
//! killed on drop.

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The running server.
#[derive(Debug)]
pub struct HttpServer {
    child: Child,
    pub port: u16,
}

impl HttpServer {
    /// Serves `dir` (a guest VM reaches it at 10.0.2.2:PORT).
    pub fn start(dir: &Path) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port");
        let child = Command::new("python3")
            .args(["-m", "http.server", "--bind", "127.0.0.1", "--directory"])
            .arg(dir)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m http.server");
        // Serving once it accepts a connection (python takes a moment).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "http.server on port {port} did not start within 20 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        HttpServer { child, port }
    }

    /// The URL of `name` in the served directory.
    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
