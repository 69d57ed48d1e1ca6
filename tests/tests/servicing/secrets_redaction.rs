//! Host Configuration secrets and PEM private keys never leave the daemon
//! unredacted: a provisioned host whose configuration carries secret
//! script and health-check variables, a private key in a variable, a
//! Wi-Fi password in its netplan and a script that prints another
//! script's password; then every way out is
//! read through real parts (GetHostStatus, `trident get status` and
//! `get configuration`, a `trident diagnose` bundle unpacked and every file
//! searched, the datastore copy included, a real OTLP receiver's payloads,
//! the daemon's log). The secret values appear nowhere; the non-secret
//! values still do; the live datastore keeps the secrets servicing needs.
//!
//! Needs `npm ci` at the repo root (the OTLP receiver).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use trident_e2e::fixture::AbHostConfig;
use trident_e2e::otlp_support::{Receiver, exporting_daemon};
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_e2e::trident_cli;
use trident_proto::v1::GetHostStatusRequest;
use trident_proto::v1::host_status_service_client::HostStatusServiceClient;

const PASSWORD: &str = "hunter2-pw-5a1b";
const TOKEN: &str = "tok-8c2d-secret";
const CHECK_TOKEN: &str = "svc-tok-3e4f";
/// The base64 body of the private key (its BEGIN/END lines may stay).
const KEY_BODY: &str = "MIIEvQkeybody7f3e";
/// A Wi-Fi password in `managementOs.netplan` (the installer's network;
/// `os.netplan` is redacted the same way and is unit-tested in trident-host,
/// but applying it needs an image with a mountable root).
const WIFI_PASSWORD: &str = "wifi-pw-6b7c8d";
const SECRETS: [&str; 5] = [PASSWORD, TOKEN, CHECK_TOKEN, KEY_BODY, WIFI_PASSWORD];
/// A non-secret variable's value: it must stay visible.
const REGION: &str = "eu-west-9";

fn secret_config_extra() -> String {
    format!(
        r#"scripts:
  preServicing:
  - name: enrol
    environmentVariables:
      DB_PASSWORD: {PASSWORD}
      api_token: {TOKEN}
      REGION: {REGION}
      TLS_KEY: "-----BEGIN PRIVATE KEY-----\n{KEY_BODY}\n-----END PRIVATE KEY-----"
    content: "echo pw=$DB_PASSWORD region=$REGION; echo tok=$api_token >&2; printf '%s\n' \"$TLS_KEY\""
  - name: other
    content: "echo other sees {PASSWORD}"
health:
  checks:
  - name: ping
    environmentVariables: {{ SERVICE_TOKEN: {CHECK_TOKEN} }}
    content: "true"
managementOs:
  netplan:
    version: 2
    wifis:
      wlan0:
        dhcp4: true
        access-points: {{ lab-net: {{ password: {WIFI_PASSWORD} }} }}
"#
    )
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "trident failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_no_secret(place: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} in {place}:\n{text}");
    }
}

/// Every file of the unpacked bundle (bytes, lossily as text).
fn bundle_files(bundle: &Path, into: &Path) -> Vec<(String, String)> {
    let out = Command::new("tar")
        .arg("-xf")
        .arg(bundle)
        .arg("-C")
        .arg(into)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut files = Vec::new();
    let mut dirs = vec![into.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                let name = path.strip_prefix(into).unwrap().display().to_string();
                files.push((name, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    files
}

/// A `trident diagnose` bundle of `daemon`, unpacked under `work`: its
/// files (lossily as text) and the directory they are in.
fn diagnose_files(
    daemon: &trident_e2e::Daemon,
    work: &Path,
) -> (Vec<(String, String)>, std::path::PathBuf) {
    let bundle = work.join("bundle.tar");
    let state_dir = daemon.state_dir().display().to_string();
    stdout_of(&trident_cli(
        daemon.socket_path(),
        &[
            "diagnose",
            "-o",
            bundle.to_str().unwrap(),
            "--state-dir",
            &state_dir,
        ],
    ));
    let unpacked = work.join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    (bundle_files(&bundle, &unpacked), unpacked)
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_never_leave_the_daemon_through_status_cli_diagnose_otlp_or_log() {
    let receiver = Receiver::start().unwrap();
    let fixture = Fixture::new();
    let image = fixture.image("v1", 1, None);
    let config = fixture.config(&image, &secret_config_extra());
    let daemon = exporting_daemon(&receiver.grpc, &["--inactivity-timeout", "0"], &[])
        .await
        .unwrap();
    let mut clients = Clients::new(&daemon).await;
    clients.provision(&config).await;

    // GetHostStatus: spec redacted, the rest kept.
    let served = HostStatusServiceClient::new(daemon.channel().await.unwrap())
        .get_host_status(GetHostStatusRequest {})
        .await
        .unwrap()
        .into_inner()
        .host_status;
    assert_no_secret("GetHostStatus", &served);
    for kept in [
        REGION,
        r#"DB_PASSWORD: "[REDACTED]""#,
        "-----BEGIN PRIVATE KEY-----",
        "lab-net",
    ] {
        assert!(served.contains(kept), "{kept} missing in\n{served}");
    }

    // The CLI's views.
    let socket = daemon.socket_path();
    for args in [
        &["get", "status"][..],
        &["--output", "json", "get", "status"],
        &["get", "configuration"],
    ] {
        let text = stdout_of(&trident_cli(socket, args));
        assert_no_secret(&format!("trident {args:?}"), &text);
        assert!(text.contains(REGION), "trident {args:?}:\n{text}");
    }

    // A diagnose bundle: every file, the datastore copy included.
    let work = tempfile::tempdir().unwrap();
    let (files, unpacked) = diagnose_files(&daemon, work.path());
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"datastore.sqlite"), "{names:?}");
    for (name, text) in &files {
        assert_no_secret(&format!("bundle file {name}"), text);
    }
    let report = &files.iter().find(|(n, _)| n == "report.json").unwrap().1;
    assert!(report.contains(REGION), "{report}");
    let copy =
        trident_host::datastore::Datastore::open_read_only(unpacked.join("datastore.sqlite"))
            .unwrap();
    let copied = copy.host_status().unwrap().spec.unwrap();
    let env = &copied.scripts.pre_servicing[0].environment_variables;
    assert_eq!(env["DB_PASSWORD"], "[REDACTED]");
    assert_eq!(env["REGION"], REGION);

    // The live datastore keeps what servicing needs.
    let live = trident_host::datastore::Datastore::open_read_only(
        daemon.state_dir().join("datastore.sqlite"),
    )
    .unwrap();
    let live_env = live
        .host_status()
        .unwrap()
        .spec
        .unwrap()
        .scripts
        .pre_servicing[0]
        .environment_variables
        .clone();
    assert_eq!(live_env["DB_PASSWORD"], PASSWORD);

    // OTLP: the script's output arrived, redacted; no payload holds a secret.
    let body = format!("pw=[REDACTED] region={REGION}");
    let received = receiver
        .wait_for(Duration::from_secs(60), |r| {
            r.has_log_body(&body) && r.has_log_body("other sees [REDACTED]")
        })
        .unwrap();
    for request in &received.requests {
        assert_no_secret("an OTLP request", &request.to_string());
    }

    // The daemon's own log.
    // Read from the daemon's stderr pipe, which may lag.
    let log = daemon
        .wait_for_stderr(&body, Duration::from_secs(30))
        .await
        .expect("script output in the daemon log");
    assert_no_secret("the daemon log", &log);
}

/// A recovery key file's content (upstream's keys are random bytes; a
/// marker here, to be searched for).
const RECOVERY_KEY: &str = "rk-9f1e-luks-recovery-d00d";

/// An install of an encrypted volume with a recovery key file, on a host
/// without a TPM 2.0: refused before anything is written (first for the
/// key file's mode, then for the missing TPM), and the key file's content
/// is in no error, status view, diagnose bundle file or the daemon's log.
#[tokio::test(flavor = "multi_thread")]
async fn an_encrypted_install_refused_before_writing_shows_no_recovery_key() {
    let has_tpm = std::fs::read_dir("/sys/class/tpmrm").is_ok_and(|mut d| d.next().is_some());
    if has_tpm {
        eprintln!("skipped: this host has a TPM 2.0, so the install would go on");
        return;
    }
    let fixture = Fixture::new();
    let image = fixture.image("v1", 1, None);
    let key_file = fixture.dir.path().join("recovery.key");
    std::fs::write(&key_file, RECOVERY_KEY).unwrap();
    let config = AbHostConfig::file(&image.path, &fixture.disk)
        .sha384(&image.metadata_sha384)
        .encrypted_srv("16M", Some(&key_file))
        .yaml();
    assert!(config.contains("deviceId: secret"), "{config}");
    let daemon = trident_e2e::daemon().await;
    let mut clients = Clients::new(&daemon).await;
    let untouched = std::fs::read(&fixture.disk).unwrap();

    use std::os::unix::fs::PermissionsExt;
    for (mode, subkind) in [
        (0o644, "invalid-recovery-key-file"),
        (0o600, "tpm-unavailable"),
    ] {
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(mode)).unwrap();
        let failed = clients.install(&config).await;
        assert!(!failed.succeeded(), "mode {mode:o}: the install succeeded");
        let error = failed.error();
        assert_eq!(error.subkind, subkind, "mode {mode:o}: {error:?}");
        assert!(
            error.message.contains("storage.encryption"),
            "{}",
            error.message
        );
        assert!(!format!("{error:?}").contains(RECOVERY_KEY), "{error:?}");
        assert!(
            std::fs::read(&fixture.disk).unwrap() == untouched,
            "mode {mode:o}: the disk was written"
        );
    }

    let socket = daemon.socket_path();
    for args in [
        &["get", "status"][..],
        &["get", "last-error"],
        &["get", "configuration"],
    ] {
        let out = trident_cli(socket, args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains(RECOVERY_KEY), "trident {args:?}:\n{text}");
    }
    let work = tempfile::tempdir().unwrap();
    let (files, _) = diagnose_files(&daemon, work.path());
    assert!(!files.is_empty());
    for (name, text) in &files {
        assert!(!text.contains(RECOVERY_KEY), "bundle file {name}");
    }
    let log = daemon
        .wait_for_stderr("tpm-unavailable", Duration::from_secs(30))
        .await
        .expect("the refusal in the daemon log");
    assert!(!log.contains(RECOVERY_KEY), "the daemon log:\n{log}");
}

/// An image URL's credentials: a userinfo password and a SAS-style `sig`.
const URL_PASSWORD: &str = "url-pw-4d5e6f";
const URL_SIG: &str = "sasSig7a8b9cZ";
const URL_SECRETS: [&str; 2] = [URL_PASSWORD, URL_SIG];

fn assert_no_url_secret(place: &str, text: &str) {
    for secret in URL_SECRETS {
        assert!(!text.contains(secret), "{place} leaks {secret:?}:\n{text}");
    }
}

/// A host installed from an `http://` image whose URL carries a userinfo
/// password and an Azure SAS `sig`, then a failed install from a URL with
/// both that cannot be reached: neither credential appears in GetHostStatus,
/// `get status`, `get configuration`, `get last-error`, any file of a
/// diagnose bundle (written 0600), the OTLP export or the daemon's log;
/// the URL's host and path stay readable. The live datastore keeps the URL
/// servicing needs.
#[tokio::test(flavor = "multi_thread")]
async fn url_credentials_never_leave_the_daemon_through_status_cli_diagnose_otlp_or_log() {
    use std::os::unix::fs::PermissionsExt;
    let receiver = Receiver::start().unwrap();
    let fixture = Fixture::new();
    let image = fixture.image("v1", 2, None);
    let served = tempfile::tempdir().unwrap();
    std::fs::copy(&image.path, served.path().join("v1.cosi")).unwrap();
    let server = trident_e2e::dir_http::HttpServer::start(served.path());
    // Python's http.server ignores the credentials and the query.
    let url =
        server
            .url("v1.cosi")
            .replacen("http://", &format!("http://deploy:{URL_PASSWORD}@"), 1)
            + &format!("?sv=2022-11-02&sp=r&sig={URL_SIG}");
    let file_url = format!("file://{}", image.path.display());
    let config = fixture
        .config(&image, "")
        .replace(&file_url, &url)
        .replace(&image.path.display().to_string(), &url);
    assert!(config.contains(URL_SIG), "{config}");
    let daemon = exporting_daemon(&receiver.grpc, &["--inactivity-timeout", "0"], &[])
        .await
        .unwrap();
    let mut clients = Clients::new(&daemon).await;
    clients.provision(&config).await;
    // A failure whose error quotes the URL: a closed port.
    let unreachable = config.replace(
        &server.url("v1.cosi").replace("http://", ""),
        "127.0.0.1:9/v1.cosi",
    );
    assert!(unreachable.contains("127.0.0.1:9"), "{unreachable}");
    let refused = clients.install(&unreachable).await;
    assert!(!refused.succeeded());

    let status = HostStatusServiceClient::new(daemon.channel().await.unwrap())
        .get_host_status(GetHostStatusRequest {})
        .await
        .unwrap()
        .into_inner()
        .host_status;
    assert_no_url_secret("GetHostStatus", &status);
    assert!(
        status.contains("sig=[REDACTED]") && status.contains("/v1.cosi"),
        "{status}"
    );
    let socket = daemon.socket_path();
    for args in [
        &["get", "status"][..],
        &["get", "configuration"],
        &["get", "last-error"],
        &["--output", "json", "get", "last-error"],
    ] {
        let out = trident_cli(socket, args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_no_url_secret(&format!("trident {args:?}"), &text);
    }

    let work = tempfile::tempdir().unwrap();
    let (files, _) = diagnose_files(&daemon, work.path());
    for (name, text) in &files {
        assert_no_url_secret(&format!("bundle file {name}"), text);
    }
    let mode = std::fs::metadata(work.path().join("bundle.tar"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the bundle's mode");

    let live = trident_host::datastore::Datastore::open_read_only(
        daemon.state_dir().join("datastore.sqlite"),
    )
    .unwrap();
    let stored = live.host_status().unwrap().spec.unwrap().image.unwrap().url;
    assert!(
        stored.contains(URL_SIG),
        "the live datastore keeps the URL: {stored}"
    );

    let received = receiver
        .wait_for(Duration::from_secs(60), |r| !r.requests.is_empty())
        .unwrap();
    for request in &received.requests {
        assert_no_url_secret("an OTLP request", &request.to_string());
    }
    let log = daemon
        .wait_for_stderr("image metadata verified", Duration::from_secs(30))
        .await
        .expect("the image line in the daemon log");
    assert_no_url_secret("the daemon log", &log);
    assert!(log.contains("sig=[REDACTED]"), "{log}");
}
