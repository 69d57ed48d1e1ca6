//! Issue 37, item 2, through the real daemon on disk-image files: what a
//! script leaves running is ended before the new root is unmounted (the
//! records say how many), and a new root an earlier run left mounted is
//! cleaned, or the operation refused, before anything is written. Needs
//! root (loop devices, mount, PID namespaces).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use trident_e2e::daemon;
use trident_e2e::mini_os;
use trident_e2e::servicing_support::{Clients, Collected, Fixture};

/// Command lines of running processes holding `needle`.
fn running_with(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

/// Mount points at or under `dir`.
fn mounts_under(dir: &Path) -> Vec<String> {
    let dir = dir.display().to_string();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(str::to_owned))
        .filter(|mp| mp.starts_with(&dir))
        .collect()
}

fn logged(run: &Collected, part: &str) -> bool {
    run.logs.iter().any(|l| l.message.contains(part))
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_script_leaves_running_is_ended_before_the_new_root_is_unmounted() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let marker = format!("100000.{}", std::process::id());
    let scripts = format!(
        "scripts:\n  postConfigure:\n  - name: leave-sleep\n    runOn: [all]\n    \
         content: '(sleep {marker} >/dev/null 2>&1 &) ; exit 0'\n"
    );
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let run = c.install(&f.config(&v1, &scripts)).await;
    let left = running_with(&format!("sleep {marker}"));
    run.assert_success();
    assert!(left.is_empty(), "left running: {left:?}");
    assert_eq!(mounts_under(d.state_dir()), Vec::<String>::new());
    assert_eq!(
        mini_os::loop_devices_on(&f.disk),
        "",
        "loop devices detached"
    );
    assert!(
        logged(
            &run,
            "1 process(es) left running by 'leave-sleep' ended: sleep (pid "
        ),
        "{:?}",
        run.logs.iter().map(|l| &l.message).collect::<Vec<_>>()
    );
}

/// An ext4 filesystem image loop-mounted at `<state dir>/new-root/<name>`,
/// as a daemon killed with a new root mounted leaves it; its loop device.
fn stale_mount(dir: &Path, state_dir: &Path, name: &str) -> (PathBuf, String) {
    let image = dir.join(format!("{name}.img"));
    std::fs::File::create(&image)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    mini_os::sh(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image));
    let device = mini_os::sh(
        Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&image),
    )
    .trim()
    .to_owned();
    let target = state_dir.join("new-root").join(name);
    std::fs::create_dir_all(&target).unwrap();
    mini_os::sh(Command::new("mount").arg(&device).arg(&target));
    std::fs::write(target.join("left-by-an-earlier-run"), "x").unwrap();
    (target, device)
}

fn attached(device: &str) -> bool {
    !mini_os::sh(
        Command::new("losetup")
            .arg("--list")
            .arg("--noheadings")
            .arg("-O")
            .arg("NAME"),
    )
    .lines()
    .all(|l| l.trim() != device)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_root_an_earlier_run_left_mounted_is_cleaned_before_the_install() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = daemon().await;
    let (target, device) = stale_mount(f.dir.path(), d.state_dir(), "crashed-op");
    // A script of that run still running in it.
    let marker = format!("100002.{}", std::process::id());
    let mut held = Command::new("sleep")
        .arg(&marker)
        .current_dir(&target)
        .spawn()
        .unwrap();
    let mut c = Clients::new(&d).await;
    let run = c.install(&f.config(&v1, "")).await;
    let reaped = held.try_wait().unwrap().is_some() || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        held.try_wait().unwrap().is_some()
    };
    let still_mounted = mounts_under(&target);
    let still_attached = attached(&device);
    if !still_mounted.is_empty() {
        let _ = Command::new("umount").arg("--lazy").arg(&target).status();
    }
    if still_attached {
        let _ = Command::new("losetup").arg("-d").arg(&device).status();
    }
    if !reaped {
        let _ = held.kill();
    }
    run.assert_success();
    assert!(
        still_mounted.is_empty(),
        "stale mount left: {still_mounted:?}"
    );
    assert!(!still_attached, "{device} still attached");
    assert!(reaped, "the process left in the stale new root is ended");
    assert!(
        logged(
            &run,
            "a new root left by an earlier run was cleaned: 1 process(es) ended, 1 mount(s) unmounted"
        ),
        "{:?}",
        run.logs.iter().map(|l| &l.message).collect::<Vec<_>>()
    );
    assert!(!target.exists(), "its directory removed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_root_left_mounted_that_cannot_be_unmounted_refuses_the_install_before_writing() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = daemon().await;
    let (target, device) = stale_mount(f.dir.path(), d.state_dir(), "busy-op");
    // Something keeps it busy: an open file in it.
    let busy = std::fs::File::open(target.join("left-by-an-earlier-run")).unwrap();
    let mut c = Clients::new(&d).await;
    let run = c.install(&f.config(&v1, "")).await;
    let head = {
        use std::os::unix::fs::FileExt;
        let mut head = vec![0u8; 1 << 20];
        std::fs::File::open(&f.disk)
            .unwrap()
            .read_exact_at(&mut head, 0)
            .unwrap();
        head
    };
    let still_mounted = mounts_under(&target);
    drop(busy);
    let _ = Command::new("umount").arg(&target).status();
    let _ = Command::new("losetup").arg("-d").arg(&device).status();
    assert!(
        !run.succeeded(),
        "the install went on over a busy stale mount"
    );
    let error = run.error();
    assert_eq!(error.subkind, "mount-new-root", "{error:?}");
    assert!(
        error.message.contains(&target.display().to_string())
            && error.message.contains("cannot be unmounted"),
        "{}",
        error.message
    );
    assert_eq!(
        still_mounted,
        [target.display().to_string()],
        "left as it was"
    );
    assert!(
        head.iter().all(|b| *b == 0),
        "nothing written to the target disk"
    );
}
