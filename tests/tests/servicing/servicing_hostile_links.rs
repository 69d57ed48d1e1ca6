//! Issue 37, item 1, through the real daemon on a disk-image file: an
//! image whose root filesystem carries symlinks pointing out of it
//! (`etc/evil -> /X/abs`, `root -> /X/roothome`, `etc/hostname ->
//! /X/hostname`, `/etc/resolv.conf -> /run/...`) and a configuration
//! writing through each of them. The install succeeds, nothing changes on
//! the machine running it, and every file lands where the installed OS
//! reads it: in the new root's own `/X`. Needs root.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use trident_e2e::daemon;
use trident_e2e::mini_os;
use trident_e2e::servicing_support::{Clients, Fixture};

const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostileLinksE2e root@lab";

/// Every file and directory under `dir`, with its content.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                out.insert(name, "dir".to_owned());
                stack.push(path);
            } else {
                out.insert(name, std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_through_an_images_symlinks_stay_in_the_new_root() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    // The host's side: what the image's links point at.
    let x = f.dir.path().join("host-x");
    std::fs::create_dir_all(x.join("abs")).unwrap();
    std::fs::create_dir_all(x.join("roothome")).unwrap();
    std::fs::write(x.join("hostname"), "the-installers-own-name\n").unwrap();
    let before = snapshot(&x);
    // The image's side: its root carries the links (mini_os builds on
    // the tree it finds).
    let tree = f.dir.path().join("v1-tree");
    std::fs::create_dir_all(tree.join("etc")).unwrap();
    let link = |name: &str, target: &Path| {
        std::os::unix::fs::symlink(target, tree.join(name)).unwrap();
    };
    link("etc/evil", &x.join("abs"));
    link("root", &x.join("roothome"));
    link("etc/hostname", &x.join("hostname"));
    link(
        "etc/resolv.conf",
        Path::new("/run/trident-e2e-hostile/resolv.conf"),
    );
    let v1 = mini_os::build(f.dir.path(), "v1");
    let config = format!(
        r#"os:
  hostname: installed-name
  users:
  - name: root
    sshPublicKeys: ["{KEY}"]
    sshMode: key-only
  additionalFiles:
  - destination: /etc/evil/pwned
    content: 'setuid'
    permissions: '4755'
  - destination: /etc/resolv.conf
    content: 'nameserver 192.0.2.53'
"#
    );
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let run = c.install(&f.config(&v1, &config)).await;
    let after = snapshot(&x);
    let resolv_on_host = Path::new("/run/trident-e2e-hostile").exists();
    assert_eq!(after, before, "the machine running the install was written");
    assert!(
        !resolv_on_host,
        "/etc/resolv.conf's target was made on the host"
    );
    run.assert_success();

    // Where the installed OS reads them: the new root's own /X.
    let file = |p: &Path| mini_os::ext4_file(&f.disk, "root-a", &p.display().to_string());
    assert_eq!(file(&x.join("abs/pwned")), "setuid");
    let stat = mini_os::debugfs(
        &f.disk,
        "root-a",
        &format!("stat {}", x.join("abs/pwned").display()),
    );
    assert!(stat.contains("Mode:  04755"), "{stat}");
    assert_eq!(
        file(&x.join("roothome/.ssh/authorized_keys")),
        format!("{KEY}\n")
    );
    assert_eq!(file(&x.join("hostname")), "installed-name\n");
    assert_eq!(
        file(Path::new("/run/trident-e2e-hostile/resolv.conf")),
        "nameserver 192.0.2.53"
    );
    // The links themselves are the image's, unchanged.
    let listing = mini_os::debugfs(&f.disk, "root-a", "stat /etc/evil");
    assert!(
        listing.contains(&format!("Fast link dest: \"{}\"", x.join("abs").display())),
        "{listing}"
    );
}
