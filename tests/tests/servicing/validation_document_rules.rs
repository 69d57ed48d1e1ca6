//! What needs only the document is refused by validation: `trident
//! validate` says `invalid-input`, the key path and the rule, quoting at
//! most an excerpt of the value, and `trident install` refuses the same
//! document before the disk is touched (it used to partition and write the
//! disk, then fail at "Configure the new root").

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fmt::Write as _;
use std::path::Path;

use sha2::{Digest, Sha256};
use trident_e2e::fixture::{CosiImage, InstallFixture};
use trident_e2e::{Daemon, trident_cli};

fn digest(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

/// (what, the document's change, the key path the error must name).
fn cases(base: &str) -> Vec<(&'static str, String, &'static str)> {
    let with_os = |os: &str| format!("{base}os:\n{os}");
    let mut many = String::new();
    for i in 0..10_000 {
        let _ = writeln!(many, "    - {{ id: p{i}, type: linux-generic, size: 1M }}");
    }
    vec![
        (
            "a relative additionalFiles destination",
            with_os("  additionalFiles:\n  - { destination: etc/x, content: x }\n"),
            "os.additionalFiles[0].destination",
        ),
        (
            "a '..' additionalFiles destination",
            with_os("  additionalFiles:\n  - { destination: /etc/../../x, content: x }\n"),
            "os.additionalFiles[0].destination",
        ),
        (
            "a user named ../x",
            with_os("  users:\n  - { name: ../x }\n"),
            "os.users[0].name",
        ),
        (
            "a 1 MB hostname",
            with_os(&format!("  hostname: {}\n", "h".repeat(1_000_000))),
            "os.hostname",
        ),
        (
            "a hostname holding '/'",
            with_os("  hostname: a/b\n"),
            "os.hostname",
        ),
        (
            "a hostname holding a newline",
            with_os("  hostname: \"a\\nb\"\n"),
            "os.hostname",
        ),
        (
            "an id holding NUL",
            base.replace("root-a", "\"root\\0a\""),
            "storage.disks[0].partitions[1].id",
        ),
        (
            "10,003 partitions",
            base.replacen(
                "    - { id: root-b, type: root, size: 32M }\n",
                &format!("    - {{ id: root-b, type: root, size: 32M }}\n{many}"),
                1,
            ),
            "storage.disks[0].partitions",
        ),
    ]
}

#[tokio::test]
async fn document_only_mistakes_are_refused_by_validate_with_a_bounded_message_and_install_writes_nothing()
 {
    let fx = InstallFixture::new(&CosiImage::small(3));
    let config = fx.config("target");
    let disk = fx.path("target.img");
    let base = config.yaml();
    let before = digest(&disk);
    let daemon = Daemon::start().await.unwrap();
    for (i, (what, document, key)) in cases(&base).into_iter().enumerate() {
        let file = fx.path(&format!("case-{i}.yaml"));
        std::fs::write(&file, &document).unwrap();
        let validate = trident_cli(daemon.socket_path(), &["validate", file.to_str().unwrap()]);
        let out = format!(
            "{}{}",
            String::from_utf8_lossy(&validate.stdout),
            String::from_utf8_lossy(&validate.stderr)
        );
        assert!(!validate.status.success(), "{what}: validate accepted it");
        assert!(out.contains("invalid-input"), "{what}: {out}");
        assert!(out.contains(key), "{what}: no key path {key}: {out}");
        assert!(out.len() < 4096, "{what}: {} bytes of output", out.len());

        let install = trident_cli(daemon.socket_path(), &["install", file.to_str().unwrap()]);
        let out = String::from_utf8_lossy(&install.stderr).into_owned()
            + &String::from_utf8_lossy(&install.stdout);
        assert!(!install.status.success(), "{what}: install succeeded");
        assert!(out.contains("invalid-input"), "{what}: {out}");
        assert!(
            out.len() < 4096,
            "{what}: {} bytes of install output",
            out.len()
        );
        assert_eq!(digest(&disk), before, "{what}: the disk was written");
    }
    // The base document itself is fine: validate accepts it.
    let file = fx.path("base.yaml");
    std::fs::write(&file, &base).unwrap();
    let validate = trident_cli(daemon.socket_path(), &["validate", file.to_str().unwrap()]);
    assert!(
        validate.status.success(),
        "{}",
        String::from_utf8_lossy(&validate.stderr)
    );
}
