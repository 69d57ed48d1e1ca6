//! A guest's reboot as a power cycle: QEMU runs with `-no-reboot`, so a
//! guest reset ends the process, and a supervisor thread starts a fresh
//! QEMU on the same disks, UEFI variable store and TPM state.
//!
//! Why: under TCG a reset of a running QEMU took 30-46 s from the kernel's
//! `reboot: machine restart` to the next kernel's first line (firmware,
//! boot loader), a fresh QEMU 11 s to the same point; a VM test reboots up
//! to five times. And a reset sometimes never completed at all (QEMU
//! spinning, no firmware output: `reboot_stall`), which a fresh process
//! does not do.
//!
//! What a reboot keeps, the new process keeps: the disks, the NVRAM file
//! (BootNext, BootOrder: QEMU writes pflash through to it), the TPM's
//! persistent state (swtpm's state directory; its PCRs start over, as a
//! platform reset restarts them), the serial log (appended to) and the
//! reverse-connect listener. The firmware then starts from power-on instead
//! of a warm reset, which the guest cannot tell apart.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::swtpm::Swtpm;

/// Power cycles one VM may take before the supervisor gives up (a guest
/// that resets in a loop).
const MAX_POWER_CYCLES: u32 = 40;
/// How often the supervisor looks at the process.
const WATCH: Duration = Duration::from_millis(200);
/// What the guest's kernel prints when it powers off instead (not a reboot).
const POWER_DOWN: &[u8] = b"reboot: Power down";

/// How to start the VM's QEMU (and its TPM) again.
#[derive(Debug, Clone)]
pub(super) struct Launch {
    pub name: String,
    pub args: Vec<String>,
    pub qemu_log: PathBuf,
    pub serial_log: PathBuf,
    /// swtpm's work directory and log, for a VM with a TPM.
    pub tpm: Option<(PathBuf, PathBuf)>,
}

#[derive(Debug)]
struct State {
    child: Child,
    tpm: Option<Swtpm>,
    /// The QEMU's final exit: not a reboot, or one the supervisor could not
    /// follow with a new process.
    exited: Option<String>,
    stopping: bool,
    power_cycles: u32,
    /// Serial log length when the running QEMU started.
    serial_at_start: u64,
}

/// The running QEMU, restarted on every guest reboot until stopped.
#[derive(Debug)]
pub(super) struct Supervised {
    state: Arc<Mutex<State>>,
    watcher: Option<JoinHandle<()>>,
}

impl Supervised {
    /// Starts QEMU (and its TPM) and the thread that restarts it.
    pub fn start(launch: Launch) -> anyhow::Result<Supervised> {
        let tpm = start_tpm(&launch)?;
        let child = spawn(&launch, false)?;
        println!(
            "vm {}: started (pid {}, serial log {})",
            launch.name,
            child.id(),
            launch.serial_log.display()
        );
        let state = Arc::new(Mutex::new(State {
            child,
            tpm,
            exited: None,
            stopping: false,
            power_cycles: 0,
            serial_at_start: 0,
        }));
        let shared = Arc::clone(&state);
        let watcher = std::thread::Builder::new()
            .name(format!("vm-{}", launch.name))
            .spawn(move || watch(&launch, &shared))
            .context("starting the VM's supervisor thread")?;
        Ok(Supervised {
            state,
            watcher: Some(watcher),
        })
    }

    /// Why QEMU is gone for good, if it is.
    pub fn exited(&self) -> Option<String> {
        lock(&self.state).exited.clone()
    }

    /// Guest reboots followed by a new QEMU so far.
    pub fn power_cycles(&self) -> u32 {
        lock(&self.state).power_cycles
    }

    /// Stops QEMU (SIGTERM, then SIGKILL after 10 s) and its TPM; no
    /// restart follows.
    pub fn stop(&mut self) {
        let pid = {
            let mut state = lock(&self.state);
            state.stopping = true;
            state.child.id()
        };
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut state = lock(&self.state);
            if matches!(state.child.try_wait(), Ok(Some(_))) {
                break;
            }
            if Instant::now() > deadline {
                let _ = state.child.kill();
                let _ = state.child.wait();
                break;
            }
            drop(state);
            std::thread::sleep(Duration::from_millis(100));
        }
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
        if let Some(mut tpm) = lock(&self.state).tpm.take() {
            tpm.stop();
        }
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding it leaves the data usable: the child handle.
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn start_tpm(launch: &Launch) -> anyhow::Result<Option<Swtpm>> {
    launch
        .tpm
        .as_ref()
        .map(|(dir, log)| Swtpm::start(dir, log))
        .transpose()
}

/// QEMU with `launch`'s arguments; its own log appended to after the first.
fn spawn(launch: &Launch, again: bool) -> anyhow::Result<Child> {
    let log = fs::OpenOptions::new()
        .create(true)
        .append(again)
        .write(true)
        .truncate(!again)
        .open(&launch.qemu_log)
        .with_context(|| format!("opening {}", launch.qemu_log.display()))?;
    Command::new("qemu-system-x86_64")
        .args(&launch.args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting qemu-system-x86_64 (package qemu-system-x86)")
}

/// The supervisor: a QEMU that exited by itself after a guest reset is
/// started again; anything else is recorded as the final exit.
fn watch(launch: &Launch, state: &Mutex<State>) {
    loop {
        std::thread::sleep(WATCH);
        let mut s = lock(state);
        if s.stopping {
            return;
        }
        let status = match s.child.try_wait() {
            Ok(None) => continue,
            Ok(Some(status)) => status,
            Err(e) => {
                s.exited = Some(format!("waiting for QEMU: {e}"));
                return;
            }
        };
        if let Some(reason) = final_exit(launch, &s, status) {
            println!("vm {}: QEMU exited: {reason}", launch.name);
            s.exited = Some(reason);
            return;
        }
        // The guest rebooted: power it on again, TPM first (its swtpm ended
        // with the old QEMU's connection, `--terminate`).
        if let Some(mut tpm) = s.tpm.take() {
            tpm.stop();
        }
        let restarted = start_tpm(launch).and_then(|tpm| {
            s.tpm = tpm;
            spawn(launch, true)
        });
        match restarted {
            Ok(child) => {
                s.power_cycles += 1;
                s.serial_at_start = serial_len(launch);
                println!(
                    "vm {}: the guest rebooted; power cycle {}: a new QEMU (pid {})",
                    launch.name,
                    s.power_cycles,
                    child.id()
                );
                s.child = child;
            }
            Err(e) => {
                s.exited = Some(format!("restarting after a guest reboot: {e:#}"));
                return;
            }
        }
    }
}

/// `None` when the exit was a guest reset to follow with a new QEMU.
fn final_exit(launch: &Launch, state: &State, status: ExitStatus) -> Option<String> {
    if !status.success() {
        return Some(format!("{status}"));
    }
    if state.power_cycles >= MAX_POWER_CYCLES {
        return Some(format!(
            "{status} after {MAX_POWER_CYCLES} guest reboots (a reset loop?)"
        ));
    }
    let serial = fs::read(&launch.serial_log).unwrap_or_default();
    let since = serial
        .get(state.serial_at_start as usize..)
        .unwrap_or_default();
    if since.windows(POWER_DOWN.len()).any(|w| w == POWER_DOWN) {
        return Some(format!("{status}: the guest powered off"));
    }
    None
}

fn serial_len(launch: &Launch) -> u64 {
    fs::metadata(&launch.serial_log).map_or(0, |m| m.len())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A reset of a real QEMU (`-no-reboot`, QMP `system_reset`, as a
    /// guest's reboot) ends the process and the supervisor starts a new
    /// one on the same arguments; a stop ends it for good.
    #[test]
    fn a_reset_is_followed_by_a_fresh_qemu_and_a_stop_by_none() {
        let dir = tempfile::tempdir().unwrap();
        let qmp = dir.path().join("qmp.sock");
        let serial_log = dir.path().join("serial.log");
        let launch = Launch {
            name: "power-cycle-unit".to_owned(),
            args: [
                "-machine",
                "q35",
                "-accel",
                "tcg",
                "-nodefaults",
                "-display",
                "none",
                "-no-reboot",
            ]
            .map(String::from)
            .into_iter()
            .chain([
                "-qmp".to_owned(),
                format!("unix:{},server=on,wait=off", qmp.display()),
            ])
            .collect(),
            qemu_log: dir.path().join("qemu.log"),
            serial_log,
            tpm: None,
        };
        let mut qemu = Supervised::start(launch).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let reset = loop {
            match super::super::reboot_stall::system_reset(&qmp) {
                Ok(()) => break Ok(()),
                Err(e) if Instant::now() > deadline => break Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        };
        reset.unwrap();
        while qemu.power_cycles() == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(qemu.power_cycles(), 1, "a new QEMU after the reset");
        assert_eq!(qemu.exited(), None);
        qemu.stop();
        assert_eq!(qemu.exited(), None, "a stop is not an exit of the guest's");
        assert_eq!(qemu.power_cycles(), 1, "no restart after a stop");
    }
}
