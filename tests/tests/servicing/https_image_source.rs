//! HTTPS image sources trust the system's certificate store: an image
//! server whose certificate is signed by an organisation's own CA is
//! reachable once that CA is in the store. The "store" here is a temp file
//! handed to tridentd as SSL_CERT_FILE (honoured by the platform verifier
//! on Linux); the machine's real store is never touched.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use trident_e2e::fixture::CosiImage;
use trident_e2e::trusted_stream_disk;
use trident_proto::v1::{Completed, StatusCode};

const DISK: u64 = 12 << 20;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl is needed for the HTTPS test");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`<name>.pem`, `<name>.key`) made with the openssl CLI.
fn make_ca(dir: &Path, name: &str) {
    let (key, pem) = (format!("{name}.key"), format!("{name}.pem"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            &key,
            "-out",
            &pem,
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// server.pem/server.key for 127.0.0.1, signed by CA `ca`.
fn make_server_cert(dir: &Path, ca: &str) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            "server.pem",
            "-extfile",
            "server.ext",
        ],
    );
}

/// Python's http.server behind TLS on a free loopback port, killed on drop.
struct HttpsServer {
    child: Child,
    port: u16,
}

impl HttpsServer {
    fn serve(root: &Path, certs: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = "import http.server, ssl, sys, functools\n\
            handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n\
            server = http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[2])), handler)\n\
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
            context.load_cert_chain(sys.argv[3], sys.argv[4])\n\
            server.socket = context.wrap_socket(server.socket, server_side=True)\n\
            server.serve_forever()\n";
        let child = Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(root)
            .arg(port.to_string())
            .arg(certs.join("server.pem"))
            .arg(certs.join("server.key"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 is needed for the HTTPS test");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the HTTPS server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn stream_disk_trusting(store: &Path, disk: &Path, url: String) -> Completed {
    trusted_stream_disk::stream_disk_trusting(store, disk, &url, None, &[])
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_server_signed_by_a_ca_in_the_trust_store_is_reachable() {
    let dir = tempfile::tempdir().unwrap();
    let (certs, images) = (dir.path().join("certs"), dir.path().join("images"));
    fs::create_dir_all(&certs).unwrap();
    fs::create_dir_all(&images).unwrap();
    make_ca(&certs, "org-ca");
    make_ca(&certs, "other-ca");
    make_server_cert(&certs, "org-ca");
    CosiImage::new(DISK, 11)
        .esp_bytes(2 << 20)
        .write(&images.join("image.cosi"));
    let server = HttpsServer::serve(&images, &certs);
    let url = format!("https://127.0.0.1:{}/image.cosi", server.port);

    // The organisation's CA is in the store: the image streams.
    let disk = dir.path().join("disk.img");
    fs::write(&disk, vec![0u8; DISK as usize]).unwrap();
    let done = stream_disk_trusting(&certs.join("org-ca.pem"), &disk, url.clone()).await;
    assert_eq!(done.status(), StatusCode::Success, "{:?}", done.error);

    // Only another CA is trusted: refused, naming the certificate problem.
    let other = dir.path().join("other.img");
    fs::write(&other, vec![0u8; DISK as usize]).unwrap();
    let done = stream_disk_trusting(&certs.join("other-ca.pem"), &other, url).await;
    assert_eq!(done.status(), StatusCode::Failure);
    let message = done.error.map(|e| e.message).unwrap_or_default();
    assert!(
        message.to_lowercase().contains("certificate") || message.contains("UnknownIssuer"),
        "{message}"
    );
    assert!(
        fs::read(&other).unwrap().iter().all(|&b| b == 0),
        "disk written"
    );
}
