//! A Host Configuration refused for a malformed secret never carries the
//! secret anywhere: a plain-string password (upstream's schema wants a
//! tagged value) and values of every shape under every kind of key the
//! redaction knows (`*PASSWORD*`, `*TOKEN*`, `*SECRET*` variables, a PEM
//! private key), sent through `trident validate` and `trident install`,
//! then searched for in every output: the CLI's, the daemon's stderr,
//! `get last-error`, `get status`, `logs -o json`, every file of a diagnose
//! bundle, the journal and the datastore with its WAL, byte by byte. A
//! value given with a locked password is reported as ignored, without the
//! value. The daemon, started under umask 022, creates its state directory
//! 0700 and every file in it 0600.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use trident_e2e::servicing_support::Fixture;
use trident_e2e::{Daemon, trident_cli};

const PLAIN_PASSWORD: &str = "PwPlainVALUE-7731";
const NUMBER_PASSWORD: &str = "77310042";
const ENV_PASSWORD: &str = "EnvPwVALUE-3";
const ENV_TOKEN: &str = "EnvTokVALUE-4";
const ENV_SECRET: &str = "EnvSecVALUE-5";
const KEY_BODY: &str = "MIIEvQKeyBodyVALUE6";
const LOCKED_VALUE: &str = "LockedVALUE-8";
const SECRETS: [&str; 7] = [
    PLAIN_PASSWORD,
    NUMBER_PASSWORD,
    ENV_PASSWORD,
    ENV_TOKEN,
    ENV_SECRET,
    KEY_BODY,
    LOCKED_VALUE,
];

/// Each malformed secret, as YAML appended to a good configuration.
fn malformed() -> Vec<String> {
    let script = |env: &str| {
        format!(
            "scripts:\n  postConfigure:\n  - name: s\n    content: \"true\"\n    environmentVariables: {env}\n"
        )
    };
    vec![
        format!("os:\n  users:\n  - name: admin\n    password: {PLAIN_PASSWORD}\n"),
        format!("os:\n  users:\n  - name: admin\n    password: {NUMBER_PASSWORD}\n"),
        script(&format!("{{DB_PASSWORD: {{nested: {ENV_PASSWORD}}}}}")),
        script(&format!("\"API_TOKEN={ENV_TOKEN}\"")),
        script(&format!("{{MY_SECRET: [{ENV_SECRET}]}}")),
        format!(
            "os:\n  selinux:\n    mode: \"-----BEGIN PRIVATE KEY-----\\n{KEY_BODY}\\n-----END PRIVATE KEY-----\"\n"
        ),
    ]
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn assert_no_secret(place: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} in {place}:\n{text}");
    }
}

/// Every file under `dir` (bytes, lossily as text) with its mode.
fn files_under(dir: &Path) -> Vec<(String, String, u32)> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let mode = entry.metadata().unwrap().permissions().mode() & 0o7777;
            if path.is_dir() {
                files.push((path.display().to_string(), String::new(), mode));
                dirs.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                let name = path.display().to_string();
                files.push((name, String::from_utf8_lossy(&bytes).into_owned(), mode));
            }
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_secrets_never_appear_in_any_output_and_state_files_are_private() {
    let fixture = Fixture::new();
    let image = fixture.image("v1", 1, None);
    let daemon = Daemon::builder()
        .wrapper(["sh", "-c", "umask 022; exec \"$0\" \"$@\""])
        .state_dir_created_by_daemon()
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await
        .unwrap();
    let socket = daemon.socket_path();
    let work = tempfile::tempdir().unwrap();

    for (i, extra) in malformed().iter().enumerate() {
        let path = work.path().join(format!("bad-{i}.yaml"));
        std::fs::write(&path, fixture.config(&image, extra)).unwrap();
        let path = path.to_str().unwrap();
        for args in [&["validate", path][..], &["install", path]] {
            let out = trident_cli(socket, args);
            let shown = text(&out);
            assert!(!out.status.success(), "trident {args:?} accepted:\n{shown}");
            assert!(shown.contains("Host Configuration key"), "{shown}");
            assert_no_secret(&format!("trident {args:?}"), &shown);
        }
    }
    // The error named the key and said why the value is not shown.
    let last = trident_cli(socket, &["get", "last-error"]);
    let last = text(&last);
    assert!(
        last.contains("value not shown") || last.contains("PRIVATE KEY"),
        "{last}"
    );

    // A value given with a locked password: valid, and told it is ignored.
    let locked = work.path().join("locked.yaml");
    std::fs::write(
        &locked,
        fixture.config(
            &image,
            &format!("os:\n  users:\n  - name: admin\n    password: {{type: locked, value: {LOCKED_VALUE}}}\n"),
        ),
    )
    .unwrap();
    let out = trident_cli(socket, &["validate", locked.to_str().unwrap()]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("warning: Host Configuration key 'os.users[0].password.value'")
            && shown.contains("is ignored"),
        "{shown}"
    );
    assert_no_secret("trident validate of a locked password", &shown);

    // Every other way out.
    for args in [
        &["get", "last-error"][..],
        &["--output", "json", "get", "last-error"],
        &["get", "status"],
        &["--output", "json", "logs"],
    ] {
        let out = trident_cli(socket, args);
        assert_no_secret(&format!("trident {args:?}"), &text(&out));
    }
    let bundle = work.path().join("bundle.tar");
    let state_dir = daemon.state_dir().to_path_buf();
    let out = trident_cli(
        socket,
        &[
            "diagnose",
            "-o",
            bundle.to_str().unwrap(),
            "--state-dir",
            state_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let unpacked = work.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    let untar = std::process::Command::new("tar")
        .arg("-xf")
        .arg(&bundle)
        .arg("-C")
        .arg(&unpacked)
        .output()
        .unwrap();
    assert!(untar.status.success(), "{untar:?}");
    for (name, content, _) in files_under(&unpacked) {
        assert_no_secret(&format!("bundle file {name}"), &content);
    }
    assert_no_secret("the daemon's stderr", &daemon.stderr());

    // The journal, the datastore and its WAL, as bytes on disk; and every
    // file and directory of the state dir private to the owner.
    let state = files_under(&state_dir);
    let names: Vec<&str> = state.iter().map(|(n, _, _)| n.as_str()).collect();
    assert!(
        names.iter().any(|n| n.ends_with("datastore.sqlite-wal")),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.contains("journal")), "{names:?}");
    let dir_mode = std::fs::metadata(&state_dir).unwrap().permissions().mode() & 0o7777;
    assert_eq!(dir_mode, 0o700, "state dir mode {dir_mode:o}");
    for (name, content, mode) in &state {
        assert_no_secret(&format!("state file {name}"), content);
        assert_eq!(mode & 0o077, 0, "{name} has mode {mode:o}");
    }
}
