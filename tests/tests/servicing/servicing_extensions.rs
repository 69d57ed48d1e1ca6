//! System and configuration extensions (`os.sysexts`, `os.confexts`)
//! through the real daemon: real squashfs extension images (mksquashfs)
//! served by a real HTTP server, a disk-image target.
//!
//! Extension images come as squashfs filesystem images, or as GPT disk
//! images (DDIs) whose `/usr` or root partition holds the release file.
//!
//! An install places the system extension in the new root where
//! systemd-sysext merges it (`/var/lib/extensions/NAME.raw`, NAME from
//! its extension-release file), byte for byte. Then runtime updates of the
//! running system (`--host-root`, a directory standing in for `/`): one
//! adds a configuration extension (GetRequiredServicingType says
//! RUNTIME_UPDATE; no reboot; live progress of `extensions` and `apply`;
//! the image lands in `/var/lib/confexts/`, `systemd-confext refresh`
//! runs, a `runOn: runtime-update` postConfigure script runs and an
//! `ab-update` one does not), a second removes it; an image whose hash is
//! not the configured one changes nothing. Last, an A/B update places the
//! sysext in the other volume from the running system's copy (the HTTP
//! server stopped first: nothing is downloaded).
//!
//! The one stand-in: `systemd-sysext`/`systemd-confext` are shims on the
//! daemon's PATH that record their arguments, because this machine's
//! systemd (252) has no systemd-confext and its container cannot mount
//! the overlays; the merge itself is the VM matrix's `runtime-update`
//! scenario's to show. Needs root (loop devices, mounts).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use trident_e2e::dir_http::HttpServer;
use trident_e2e::mini_os;
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_e2e::{Daemon, daemon};
use trident_proto::v1::ServicingKind;
use trident_proto::v1preview::{self, ServicingState};

/// A squashfs extension image of `kind` ("sysext"/"confext") named `name`
/// with one file `file` holding `text`; returns its path and SHA-384.
fn extension(dir: &Path, kind: &str, name: &str, file: &str, text: &str) -> (PathBuf, String) {
    let tree = dir.join(format!("{name}-tree"));
    let release = match kind {
        "sysext" => "usr/lib/extension-release.d",
        _ => "etc/extension-release.d",
    };
    std::fs::create_dir_all(tree.join(release)).unwrap();
    std::fs::write(
        tree.join(release).join(format!("extension-release.{name}")),
        "ID=_any\n",
    )
    .unwrap();
    let path = tree.join(file.trim_start_matches('/'));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    let image = dir.join(format!("{name}.raw"));
    squashfs(&tree, &image);
    let sha = trident_cosi::hash::sha384_hex(&std::fs::read(&image).unwrap());
    (image, sha)
}

/// A squashfs image of `tree`, owned by root, as extension images are.
fn squashfs(tree: &Path, image: &Path) {
    mini_os::sh(Command::new("mksquashfs").arg(tree).arg(image).args([
        "-quiet",
        "-noappend",
        "-all-root",
    ]));
}

/// Shims of the systemd tools that append their arguments to `log`.
fn tool_shims(dir: &Path, log: &Path) -> PathBuf {
    let bin = dir.join("shim-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["systemd-sysext", "systemd-confext"] {
        let path = bin.join(tool);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"{tool} $*\" >> {}\n", log.display()),
        )
        .unwrap();
        mini_os::sh(Command::new("chmod").arg("755").arg(&path));
    }
    bin
}

fn sysext_yaml(url: &str, sha: &str) -> String {
    format!("os:\n  sysexts:\n  - url: {url}\n    sha384: {sha}\n")
}

const SCRIPTS: &str = r#"scripts:
  postConfigure:
  - name: runtime-only
    runOn: [runtime-update]
    content: 'echo "$SERVICING_TYPE" >> "$TARGET_ROOT/runtime-scripts"'
  - name: ab-only
    runOn: [ab-update]
    content: 'test "$SERVICING_TYPE" != runtime_update || touch "$TARGET_ROOT/ab-script-ran"'
"#;

/// A fixture with a directory for served images, or None (skipped) when
/// not root: images are mounted to read their names.
fn fixture_serving_images() -> Option<(Fixture, PathBuf)> {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: extension images are mounted to read their names (needs root)");
        return None;
    }
    let f = Fixture::new();
    let served = f.dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    Some((f, served))
}

#[tokio::test(flavor = "multi_thread")]
async fn extensions_are_placed_at_install_and_added_and_removed_by_runtime_updates() {
    let Some((f, served)) = fixture_serving_images() else {
        return;
    };
    let dir = f.dir.path();
    let (tool, tool_sha) = extension(&served, "sysext", "tool", "/usr/share/tool/hello", "hi\n");
    let (motd, motd_sha) = extension(&served, "confext", "motd", "/etc/motd.d/trident", "hello\n");
    let http = HttpServer::start(&served);
    let host_root = dir.join("host-root");
    std::fs::create_dir_all(&host_root).unwrap();
    let tool_log = dir.join("tools.log");
    let shims = tool_shims(dir, &tool_log);
    let d = Daemon::builder()
        .args(["--inactivity-timeout", "0", "--host-root"])
        .arg(&host_root)
        .env(
            "PATH",
            format!("{}:{}", shims.display(), std::env::var("PATH").unwrap()),
        )
        .spawn()
        .await
        .unwrap();
    let mut c = Clients::new(&d).await;
    let v1 = mini_os::build(dir, "v1");
    let base = f.config(&v1, SCRIPTS);
    let with_tool = format!("{base}{}", sysext_yaml(&http.url("tool.raw"), &tool_sha));

    // Install: the sysext lands in the new root, byte for byte.
    c.install(&with_tool).await.assert_success();
    let placed = dir.join("placed-tool.raw");
    mini_os::debugfs(
        &f.disk,
        "root-a",
        &format!("dump /var/lib/extensions/tool.raw {}", placed.display()),
    );
    assert_eq!(
        std::fs::read(&placed).unwrap(),
        std::fs::read(&tool).unwrap()
    );
    c.commit().await.assert_success();
    assert_eq!(c.state().await, ServicingState::Provisioned);
    let status = trident_e2e::trident_cli_ok(d.socket_path(), &["get", "status"]);
    assert!(
        status.contains("path: /var/lib/extensions/tool.raw"),
        "the Host Status records where it went:\n{status}"
    );

    // A runtime update adds the confext.
    let with_motd = format!(
        "{with_tool}  confexts:\n  - url: {}\n    sha384: {motd_sha}\n",
        http.url("motd.raw")
    );
    assert_eq!(
        trident_e2e::required_servicing_type(d.socket_path(), &with_motd)
            .await
            .unwrap(),
        v1preview::ServicingType::RuntimeUpdate
    );
    let reboots_before = std::fs::read_to_string(d.state_dir().join("reboot-requests.log"))
        .unwrap()
        .lines()
        .count();
    let added = c.update(&with_motd).await;
    added.assert_success();
    assert_eq!(
        added.completed().servicing_kind,
        Some(ServicingKind::RuntimeUpdate as i32)
    );
    let phases = added.phases();
    for phase in ["extensions", "apply", "scripts/postConfigure"] {
        assert!(phases.iter().any(|p| p == phase), "{phase} in {phases:?}");
    }
    assert_eq!(
        std::fs::read(host_root.join("var/lib/confexts/motd.raw")).unwrap(),
        std::fs::read(&motd).unwrap()
    );
    let tools = std::fs::read_to_string(&tool_log).unwrap();
    assert_eq!(
        tools.lines().collect::<Vec<_>>(),
        [format!(
            "systemd-confext refresh --root={}",
            host_root.display()
        )],
        "only the kind that changed is merged again"
    );
    assert_eq!(
        std::fs::read_to_string(host_root.join("runtime-scripts")).unwrap(),
        "runtime_update\n"
    );
    assert!(!host_root.join("ab-script-ran").exists());
    assert_eq!(c.state().await, ServicingState::Provisioned);
    let reboots_after = std::fs::read_to_string(d.state_dir().join("reboot-requests.log"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(reboots_after, reboots_before, "no reboot");
    assert!(
        !d.state_dir()
            .join("extensions")
            .join(added.operation_id())
            .exists(),
        "staging directory removed"
    );
    // The same configuration again is nothing to do.
    let again = c.update(&with_motd).await;
    again.assert_success();
    assert_eq!(
        again.completed().servicing_kind,
        Some(ServicingKind::NoneRequired as i32)
    );

    // An image that is not the configured one changes nothing.
    let wrong = with_motd.replace(&motd_sha, &"0".repeat(96));
    let refused = c.update(&wrong).await;
    assert_eq!(refused.error().subkind, "extension-hash-mismatch");
    assert!(
        refused
            .error()
            .error_message
            .contains("os.confexts[0].sha384"),
        "{}",
        refused.error().error_message
    );
    assert!(host_root.join("var/lib/confexts/motd.raw").exists());
    assert_eq!(
        std::fs::read_to_string(&tool_log).unwrap().lines().count(),
        1
    );

    // A second runtime update removes it.
    let removed = c.update(&with_tool).await;
    removed.assert_success();
    assert_eq!(
        removed.completed().servicing_kind,
        Some(ServicingKind::RuntimeUpdate as i32)
    );
    assert!(!host_root.join("var/lib/confexts/motd.raw").exists());
    assert_eq!(
        std::fs::read_to_string(&tool_log).unwrap().lines().count(),
        2,
        "merged again without it"
    );
    assert_eq!(
        std::fs::read_to_string(host_root.join("runtime-scripts")).unwrap(),
        "runtime_update\nruntime_update\n"
    );

    // An A/B update to v2 keeps the sysext: copied into volume B from the
    // running system, which has it (the server is gone: no download).
    drop(http);
    let v2 = mini_os::build(dir, "v2");
    let to_v2 = format!(
        "{}{}",
        f.config(&v2, SCRIPTS),
        sysext_yaml("http://127.0.0.1:9/gone/tool.raw", &tool_sha)
    );
    c.update_stage(&to_v2).await.assert_success();
    assert_eq!(c.state().await, ServicingState::UpdateAbStaged);
    let in_b = dir.join("b-tool.raw");
    mini_os::debugfs(
        &f.disk,
        "root-b",
        &format!("dump /var/lib/extensions/tool.raw {}", in_b.display()),
    );
    assert_eq!(std::fs::read(&in_b).unwrap(), std::fs::read(&tool).unwrap());
}

/// A GPT disk image (DDI) `file_name` under `dir` with one partition of
/// GPT type `part_type` holding a squashfs of `files` (path, text) and,
/// at `release_dir`, `extension-release.NAME`; returns its path and
/// SHA-384.
fn disk_image_extension(
    dir: &Path,
    file_name: &str,
    part_type: &str,
    release_dir: &str,
    name: &str,
    files: &[(&str, &str)],
) -> (PathBuf, String) {
    let tree = dir.join(format!("{file_name}-tree"));
    let release = tree
        .join(release_dir)
        .join(format!("extension-release.{name}"));
    std::fs::create_dir_all(release.parent().unwrap()).unwrap();
    std::fs::write(&release, "ID=_any\n").unwrap();
    for (path, text) in files {
        let path = tree.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let fs = dir.join(format!("{file_name}.squashfs"));
    squashfs(&tree, &fs);
    let fs_bytes = std::fs::read(&fs).unwrap();
    const MIB: u64 = 1024 * 1024;
    let sectors = (fs_bytes.len() as u64).div_ceil(MIB) * MIB / 512;
    let image = dir.join(file_name);
    std::fs::File::create(&image)
        .unwrap()
        .set_len(2 * MIB + sectors * 512)
        .unwrap();
    let script = format!("label: gpt\nstart=2048, size={sectors}, type={part_type}\n");
    let mut sfdisk = Command::new("sfdisk")
        .args(["--quiet", "--no-reread", "--no-tell-kernel"])
        .arg(&image)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    sfdisk
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    assert!(sfdisk.wait().unwrap().success());
    use std::os::unix::fs::FileExt;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&image)
        .unwrap()
        .write_at(&fs_bytes, MIB)
        .unwrap();
    let sha = trident_cosi::hash::sha384_hex(&std::fs::read(&image).unwrap());
    (image, sha)
}

/// The Discoverable Partitions Specification's x86-64 `/usr` and root types.
const USR_X86_64: &str = "8484680C-9521-48C6-9C11-B0720656F69E";
const ROOT_X86_64: &str = "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709";

#[tokio::test(flavor = "multi_thread")]
async fn extensions_in_gpt_disk_images_are_named_from_the_partition_that_holds_their_release() {
    let Some((f, served)) = fixture_serving_images() else {
        return;
    };
    let dir = f.dir.path();
    // A sysext whose /usr partition holds its tree (as systemd-repart
    // builds one), and a confext whose root partition holds /etc; served
    // under names that are not NAME.raw, so the name must come from inside.
    let (tool, tool_sha) = disk_image_extension(
        &served,
        "tool-v3.ddi",
        USR_X86_64,
        "lib/extension-release.d",
        "tool",
        &[("share/tool/hello", "hi\n")],
    );
    let (motd, motd_sha) = disk_image_extension(
        &served,
        "motd-v3.ddi",
        ROOT_X86_64,
        "etc/extension-release.d",
        "motd",
        &[("etc/motd.d/trident", "hello\n")],
    );
    // A disk image with neither partition type.
    let (_, odd_sha) = disk_image_extension(
        &served,
        "odd.ddi",
        "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
        "usr/lib/extension-release.d",
        "odd",
        &[],
    );
    let http = HttpServer::start(&served);
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let v1 = mini_os::build(dir, "v1");
    let base = f.config(&v1, "");

    let odd = format!("{base}{}", sysext_yaml(&http.url("odd.ddi"), &odd_sha));
    let refused = c.install(&odd).await;
    assert_eq!(refused.error().subkind, "invalid-extension");
    let message = &refused.error().error_message;
    assert!(
        message.contains("os.sysexts[0]") && message.contains("no x86-64 root or /usr partition"),
        "{message}"
    );

    let config = format!(
        "{base}{}  confexts:\n  - url: {}\n    sha384: {motd_sha}\n",
        sysext_yaml(&http.url("tool-v3.ddi"), &tool_sha),
        http.url("motd-v3.ddi")
    );
    c.install(&config).await.assert_success();
    for (placed, source) in [
        ("/var/lib/extensions/tool.raw", &tool),
        ("/var/lib/confexts/motd.raw", &motd),
    ] {
        let out = dir.join("placed.raw");
        mini_os::debugfs(
            &f.disk,
            "root-a",
            &format!("dump {placed} {}", out.display()),
        );
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(source).unwrap(),
            "{placed} is the served disk image, byte for byte"
        );
    }
}
