//! `trident validate` through the daemon reports a storage that is no
//! valid graph of block devices before anything is written: the
//! structured error names invalid-host-configuration, the key path and its
//! line, RAID arrays included.

use std::process::Command;

use trident_e2e::{Daemon, bin_path};

const DOC: &str = "image: { url: file:///srv/os.cosi, sha384: ignored }
storage:
  disks:
  - id: os
    device: /tmp/never-written.img
    partitions:
    - { id: esp, type: esp, size: 64M }
    - { id: root-a, type: root, size: 1G }
    - { id: root-b, type: root, size: 1G }
  abUpdate:
    volumePairs:
    - { id: root, volumeAId: root-a, volumeBId: root-b }
  filesystems:
  - { deviceId: esp, mountPoint: /boot/efi }
  - { deviceId: root, mountPoint: / }
";

/// `trident --output json validate` of `yaml`: exit code and the JSON.
fn validate(
    daemon: &Daemon,
    dir: &std::path::Path,
    yaml: &str,
) -> (Option<i32>, serde_json::Value) {
    let path = dir.join("config.yaml");
    std::fs::write(&path, yaml).expect("write the configuration");
    let out = Command::new(bin_path("trident"))
        .arg("--socket")
        .arg(daemon.socket_path())
        .args(["--output", "json", "validate"])
        .arg(&path)
        .env_remove("TRIDENT_SOCKET")
        .output()
        .expect("run trident");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), json)
}

#[tokio::test(flavor = "multi_thread")]
async fn validate_reports_a_broken_block_device_stack_with_its_key_and_line() -> anyhow::Result<()>
{
    let dir = tempfile::tempdir()?;
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await?;

    let (code, json) = validate(&daemon, dir.path(), DOC);
    assert_eq!(
        (code, &json["ok"]),
        (Some(0), &serde_json::json!(true)),
        "{json:#}"
    );

    // root-a is volume A of the pair and the ESP's device as well.
    let shared = DOC.replace(
        "{ deviceId: esp, mountPoint: /boot/efi }",
        "{ deviceId: root-a, mountPoint: /boot/efi }",
    );
    let (code, json) = validate(&daemon, dir.path(), &shared);
    assert_ne!(code, Some(0), "{json:#}");
    assert_eq!(json["ok"], false, "{json:#}");
    let error = json["error"].to_string();
    assert!(error.contains("invalid-host-configuration"), "{json:#}");
    assert!(
        error.contains("Host Configuration key 'storage.filesystems[0].deviceId' (line 14, column 7): 'root-a' is already used at 'storage.abUpdate.volumePairs[0].volumeAId'"),
        "{json:#}"
    );

    // RAID: a mirror over two spare partitions is valid; one whose member
    // is also volume B of the pair is not, and the error names the key.
    let spare = DOC.replace(
        "    - { id: root-b, type: root, size: 1G }\n",
        "    - { id: root-b, type: root, size: 1G }\n    - { id: m1, type: linux-generic, size: 64M }\n    - { id: m2, type: linux-generic, size: 64M }\n",
    );
    let mirror = spare.replace(
        "  abUpdate:\n",
        "  raid:\n    software:\n    - { id: md, name: md, level: raid1, devices: [m1, m2] }\n    syncTimeout: 60\n  abUpdate:\n",
    );
    let (code, json) = validate(&daemon, dir.path(), &mirror);
    assert_eq!(
        (code, &json["ok"]),
        (Some(0), &serde_json::json!(true)),
        "{json:#}"
    );
    let (code, json) = validate(
        &daemon,
        dir.path(),
        &mirror.replace("[m1, m2]", "[m1, root-b]"),
    );
    assert_ne!(code, Some(0), "{json:#}");
    let error = json["error"].to_string();
    assert!(error.contains("invalid-host-configuration"), "{json:#}");
    assert!(
        error.contains("Host Configuration key 'storage."),
        "{json:#}"
    );
    assert!(error.contains("'root-b'"), "{json:#}");
    // mdadm's own minimum: raid6 needs four members.
    let (code, json) = validate(
        &daemon,
        dir.path(),
        &mirror.replace("level: raid1", "level: raid6"),
    );
    assert_ne!(code, Some(0), "{json:#}");
    let error = json["error"].to_string();
    assert!(
        error
            .contains("'storage.raid.software[0].devices': a raid6 array needs at least 4 devices"),
        "{json:#}"
    );
    assert!(!std::path::Path::new("/tmp/never-written.img").exists());
    Ok(())
}
