//! `trident.disable` through the real daemon on a disk-image file: the
//! installed OS does not start the agent (its units masked in the new
//! root, read back with debugfs) and gets no datastore; the install itself
//! still finalizes here. Needs root (the install mounts the new root).

#![allow(clippy::unwrap_used)]

use trident_e2e::daemon;
use trident_e2e::mini_os;
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_proto::v1preview::ServicingState;

#[tokio::test(flavor = "multi_thread")]
async fn a_disabled_agent_is_masked_in_the_installed_os_which_gets_no_datastore() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the install mounts the new root (needs root)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let config = f.config(
        &v1,
        "trident:\n  disable: true\n  datastorePath: /var/lib/elsewhere/ds.sqlite\n",
    );
    c.install(&config).await.assert_success();
    assert_eq!(c.state().await, ServicingState::InstallFinalized);
    for unit in [
        "tridentd.socket",
        "tridentd.service",
        "trident.service",
        "trident-rcp.service",
    ] {
        let stat = mini_os::debugfs(
            &f.disk,
            "root-a",
            &format!("stat /etc/systemd/system/{unit}"),
        );
        assert!(
            stat.contains("Fast link dest: \"/dev/null\""),
            "{unit}: {stat}"
        );
    }
    for datastore in [
        "/var/lib/trident/datastore.sqlite",
        "/var/lib/elsewhere/ds.sqlite",
    ] {
        let out = std::process::Command::new("debugfs")
            .arg("-R")
            .arg(format!("stat {datastore}"))
            .arg(format!(
                "{}?offset={}",
                f.disk.display(),
                mini_os::partition(&f.disk, "root-a").offset
            ))
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("File not found"), "{datastore}: {text}");
    }
    // The installer's own datastore stayed where it was (datastorePath is
    // ignored with the agent disabled, as upstream ignores the rest).
    assert!(d.state_dir().join("datastore.sqlite").exists());
}
