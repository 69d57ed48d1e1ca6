//! A real OCI registry for `oci://` image-source tests: Debian's
//! `docker-registry` (the CNCF distribution registry) on a free loopback
//! port behind a throw-away TLS certificate, optionally with htpasswd
//! users; a pusher built on the same `oci-client` crate the daemon pulls
//! with; and a TCP relay that stalls a download part way.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use trident_rcp::pki::{LeafSpec, TestCa};

/// Media type the pusher gives the COSI layer (what `oras push` gives a
/// file by default; the daemon, like upstream, does not check it).
pub const COSI_LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar";

/// A running registry, killed on drop.
#[derive(Debug)]
pub struct Registry {
    child: Child,
    port: u16,
    ca_pem: PathBuf,
}

/// Digests of a pushed image.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// `sha256:…` of the manifest (what `repo@sha256:…` names in OCI tools).
    pub manifest_digest: String,
    /// `sha256:…` of the COSI layer blob.
    pub layer_digest: String,
}

impl Registry {
    /// Starts a registry storing under `dir`; with `user`, only that
    /// htpasswd user (name, password) may pull or push.
    pub fn start(dir: &Path, user: Option<(&str, &str)>) -> anyhow::Result<Registry> {
        let ca = TestCa::new("oci-test-ca")?;
        let tls = ca.write_files(dir, "registry", &LeafSpec::dns("127.0.0.1"))?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n\
             http:\n  addr: 127.0.0.1:{port}\n  tls:\n    certificate: {}\n    key: {}\n",
            dir.join("storage").display(),
            tls.cert.display(),
            tls.key.display(),
        );
        if let Some((name, password)) = user {
            let out = Command::new("htpasswd")
                .args(["-Bbn", name, password])
                .output()
                .context("htpasswd (apache2-utils) is needed for the registry user")?;
            if !out.status.success() {
                bail!("htpasswd: {}", String::from_utf8_lossy(&out.stderr));
            }
            std::fs::write(dir.join("htpasswd"), out.stdout)?;
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: trident-test\n    path: {}\n",
                dir.join("htpasswd").display()
            ));
        }
        let config_path = dir.join("registry.yml");
        std::fs::write(&config_path, config)?;
        let log = std::fs::File::create(dir.join("registry.log"))?;
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("docker-registry (Debian package docker-registry) is needed")?;
        let mut registry = Registry {
            child,
            port,
            ca_pem: tls.ca,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = registry.child.try_wait()? {
                let log = std::fs::read_to_string(dir.join("registry.log")).unwrap_or_default();
                bail!("docker-registry exited ({status}): {log}");
            }
            if Instant::now() > deadline {
                bail!("docker-registry did not listen on port {port}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(registry)
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The CA that signed the registry's certificate (PEM file).
    pub fn ca_pem(&self) -> &Path {
        &self.ca_pem
    }

    /// Pushes the COSI file `cosi` as a one-layer artifact to
    /// `repository:tag`, as `user` when given.
    pub async fn push_cosi(
        &self,
        cosi: &Path,
        repository: &str,
        tag: &str,
        user: Option<(&str, &str)>,
    ) -> anyhow::Result<Pushed> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = std::fs::read(&self.ca_pem)?;
        let client = Client::try_from(ClientConfig {
            protocol: ClientProtocol::Https,
            extra_root_certificates: vec![oci_client::client::Certificate {
                encoding: oci_client::client::CertificateEncoding::Pem,
                data: ca,
            }],
            ..ClientConfig::default()
        })?;
        let reference: Reference = format!("{}/{repository}:{tag}", self.host()).parse()?;
        let auth = match user {
            Some((name, password)) => RegistryAuth::Basic(name.to_owned(), password.to_owned()),
            None => RegistryAuth::Anonymous,
        };
        let layer = ImageLayer::new(std::fs::read(cosi)?, COSI_LAYER_MEDIA_TYPE.to_owned(), None);
        let layer_digest = layer.sha256_digest();
        let config = Config::new(
            b"{}".to_vec(),
            "application/vnd.oci.empty.v1+json".to_owned(),
            None,
        );
        client
            .push(&reference, &[layer], config, &auth, None)
            .await?;
        let manifest_digest = client.fetch_manifest_digest(&reference, &auth).await?;
        Ok(Pushed {
            manifest_digest,
            layer_digest,
        })
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP relay to a local port that passes every byte until `budget` bytes
/// went from the server to clients (over all connections), then stops
/// forwarding but keeps the connections open: a registry that stalls in
/// the middle of a layer. TLS passes through untouched.
#[derive(Debug)]
pub struct StallingRelay {
    port: u16,
}

impl StallingRelay {
    pub fn start(target_port: u16, budget: u64) -> std::io::Result<StallingRelay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let sent = Arc::new(AtomicU64::new(0));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", target_port)) else {
                    continue;
                };
                let (Ok(client_w), Ok(server_r)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                std::thread::spawn(move || copy(client, server, None));
                let sent = sent.clone();
                std::thread::spawn(move || copy(server_r, client_w, Some((sent, budget))));
            }
        });
        Ok(StallingRelay { port })
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

fn copy(mut from: TcpStream, mut to: TcpStream, budget: Option<(Arc<AtomicU64>, u64)>) {
    let mut buf = [0u8; 16 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut n = n;
        if let Some((sent, budget)) = &budget {
            let before = sent.fetch_add(n as u64, Ordering::SeqCst);
            if before + n as u64 > *budget {
                n = usize::try_from(budget.saturating_sub(before)).unwrap_or(0);
                let _ = to.write_all(&buf[..n]);
                // Stall: hold both ends open, forward nothing more.
                std::thread::sleep(Duration::from_secs(3600));
                return;
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// A TCP relay to a local port that closes the one connection carrying
/// the `after`-th byte from the server to the clients (counted over all
/// connections), once: a registry whose connection drops in the middle of
/// a layer. Every other byte passes; TLS passes through untouched. It
/// counts the bytes it relayed from the server.
#[derive(Debug)]
pub struct DroppingRelay {
    port: u16,
    relayed: Arc<AtomicU64>,
}

impl DroppingRelay {
    pub fn start(target_port: u16, after: u64) -> std::io::Result<DroppingRelay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let relayed = Arc::new(AtomicU64::new(0));
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let counter = relayed.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", target_port)) else {
                    continue;
                };
                let (Ok(client_w), Ok(server_r)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                std::thread::spawn(move || copy(client, server, None));
                let (counter, dropped) = (counter.clone(), dropped.clone());
                std::thread::spawn(move || {
                    relay_until_drop(server_r, client_w, &counter, &dropped, after);
                });
            }
        });
        Ok(DroppingRelay { port, relayed })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Bytes relayed from the server to clients so far.
    pub fn relayed(&self) -> u64 {
        self.relayed.load(Ordering::SeqCst)
    }
}

fn relay_until_drop(
    mut from: TcpStream,
    mut to: TcpStream,
    relayed: &AtomicU64,
    dropped: &std::sync::atomic::AtomicBool,
    after: u64,
) {
    let mut buf = [0u8; 16 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let before = relayed.load(Ordering::SeqCst);
        if before + n as u64 > after && !dropped.swap(true, Ordering::SeqCst) {
            let keep = usize::try_from(after.saturating_sub(before)).unwrap_or(0);
            let _ = to.write_all(&buf[..keep]);
            relayed.fetch_add(keep as u64, Ordering::SeqCst);
            // Both ends closed: the client sees its connection drop.
            let _ = to.shutdown(Shutdown::Both);
            let _ = from.shutdown(Shutdown::Both);
            return;
        }
        relayed.fetch_add(n as u64, Ordering::SeqCst);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
