//! QEMU harness: boots disk images under UEFI firmware (OVMF) and lets a
//! test watch the serial console and reach the guest's tridentd.
//!
//! - TCG (`-accel tcg`): KVM is not usable on the CI machines.
//! - Each VM gets its own copy of the OVMF variable store, so boot entries a
//!   guest writes never leak into another VM.
//! - The serial console goes to `target/vm-artifacts/<test>/serial-<vm>.log`
//!   and stays there after the test, pass or fail.
//! - User-mode network: nothing listens in the guest. Its reverse-connect
//!   agent dials the orchestrator ([`crate::vm_rcp`]); a VM
//!   given the test OS's PKI ([`VmSpec::orchestrator`]) runs that listener,
//!   and [`Vm::forward_tridentd`] exposes the guest's tridentd as a local
//!   Unix socket, so the real `trident` CLI and tonic channels work unchanged.
//! - A VM given a TPM ([`VmSpec::tpm`]) gets a software TPM 2.0: `swtpm
//!   socket --tpm2` with its state in the VM's work directory, attached as
//!   `tpm-crb` through QEMU's `-tpmdev emulator` (OVMF measures the boot
//!   into it), stopped with the VM (`swtpm`).
//! - A guest's reboot is a power cycle: QEMU runs with `-no-reboot` and a
//!   fresh one starts on the same disks, NVRAM and TPM state
//!   (`power_cycle`): far faster under TCG than QEMU's own reset.
//! - A guest that prints `reboot: machine restart` and then nothing for
//!   [`REBOOT_STALL`] is reset through QEMU's QMP socket (see `reboot_stall`):
//!   under TCG the firmware's reset sometimes never completes, and a wait
//!   would otherwise sit out its whole timeout and fail a sound run.

mod power_cycle;
mod reboot_stall;
mod swtpm;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tempfile::TempDir;

use crate::bin_dir;
use crate::test_os::RcpPki;
use crate::vm_rcp::{GUEST_RCP_ADDR, GuestSocket, Orchestrator};
use power_cycle::{Launch, Supervised};
use reboot_stall::Stall;

/// UEFI firmware code (no Secure Boot: the test OS is unsigned).
pub const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";
/// Template of the UEFI variable store; copied per VM.
pub const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.fd";
/// Serial marker the test OS prints once it is up (`trident-test-ready.service`).
pub const READY_MARKER: &str = "TRIDENT-TEST-OS-READY";
const POLL: Duration = Duration::from_millis(500);
/// How long a guest may stay silent between the kernel's reboot line and
/// the next kernel's first line before the harness acts
/// (`reboot_stall`). A normal restart prints the firmware's, the boot
/// loader's or the kernel's lines within about a minute under TCG, even
/// on a loaded 2-core machine.
pub const REBOOT_STALL: Duration = Duration::from_secs(240);

/// Resets of stalled reboots within one wait before the wait fails.
const MAX_RESETS_PER_WAIT: u32 = 2;

/// `target/vm-artifacts/<test>`: serial and QEMU logs kept for inspection.
pub fn artifacts_dir(test: &str) -> anyhow::Result<PathBuf> {
    let profile = bin_dir();
    let target = profile.parent().unwrap_or(&profile);
    let dir = target.join("vm-artifacts").join(test);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// What to boot.
#[derive(Debug, Clone)]
pub struct VmSpec {
    name: String,
    artifacts: PathBuf,
    disks: Vec<PathBuf>,
    memory_mib: u32,
    cpus: u32,
    rcp: Option<RcpPki>,
    tpm: bool,
    nvram: Option<PathBuf>,
    /// Host port forwarded to the guest's port 22 ([`VmSpec::ssh`]).
    ssh_port: Option<u16>,
}

impl VmSpec {
    /// A VM called `name` whose logs go to `artifacts`.
    pub fn new(name: &str, artifacts: &Path) -> Self {
        VmSpec {
            name: name.to_owned(),
            artifacts: artifacts.to_owned(),
            disks: Vec::new(),
            memory_mib: 1024,
            cpus: 2,
            rcp: None,
            tpm: false,
            nvram: None,
            ssh_port: None,
        }
    }

    /// Adds a raw disk image (virtio); firmware tries disks in this order.
    pub fn disk(mut self, path: impl Into<PathBuf>) -> Self {
        self.disks.push(path.into());
        self
    }

    /// The same VM under another name (its own serial and QEMU logs), e.g.
    /// booted again after a disk was swapped.
    pub fn renamed(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// The UEFI variable store at `path`, kept across VMs (a copy of the
    /// template the first time): the machine's NVRAM, which on real
    /// hardware outlives a power-off and a disk swap. Without it each VM
    /// gets a fresh copy of the template.
    pub fn nvram(mut self, path: impl Into<PathBuf>) -> Self {
        self.nvram = Some(path.into());
        self
    }

    pub fn memory_mib(mut self, mib: u32) -> Self {
        self.memory_mib = mib;
        self
    }

    /// Gives the VM a software TPM 2.0 (swtpm, package swtpm).
    pub fn tpm(mut self) -> Self {
        self.tpm = true;
        self
    }

    /// Forwards a free port of 127.0.0.1 to the guest's sshd (QEMU's
    /// `hostfwd`), for scenarios that must act inside the guest where no
    /// agent of ours runs (an upstream agent's host): [`Vm::ssh_port`].
    pub fn ssh(mut self) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free local port");
        self.ssh_port = Some(port);
        self
    }

    /// Runs the orchestrator's side of the reverse-connect proxy for a
    /// guest provisioned with `pki` (the test OS's, [`crate::test_os::TestOs::rcp`]),
    /// so [`Vm::forward_tridentd`] reaches its tridentd.
    pub fn orchestrator(mut self, pki: &RcpPki) -> Self {
        self.rcp = Some(pki.clone());
        self
    }
}

/// A serial marker seen during a boot, and how long that boot took.
#[derive(Debug, Clone)]
pub struct Boot {
    /// The whole serial line holding the marker.
    pub line: String,
    pub duration: Duration,
}

/// A running QEMU (a new one after each guest reboot); killed on drop.
#[derive(Debug)]
pub struct Vm {
    name: String,
    qemu: Supervised,
    serial_log: PathBuf,
    orchestrator: Option<Orchestrator>,
    /// Bytes of the serial log already matched; waits look after this.
    cursor: usize,
    boot_started: Instant,
    boots: u32,
    qmp: PathBuf,
    /// Resets the harness made for stalled reboots (reported by each wait).
    stalled_reboot_resets: u32,
    ssh_port: Option<u16>,
    _dir: TempDir,
}

impl Vm {
    /// Starts QEMU (and the reverse-connect listener, on the caller's tokio
    /// runtime, when the spec has one). The firmware starts booting at once.
    pub fn start(spec: VmSpec) -> anyhow::Result<Vm> {
        if spec.disks.is_empty() {
            bail!("VM {}: no disk to boot", spec.name);
        }
        let dir = tempfile::Builder::new().prefix("trident-vm-").tempdir()?;
        let vars = match &spec.nvram {
            Some(kept) => kept.clone(),
            None => dir.path().join("OVMF_VARS.fd"),
        };
        if !vars.exists() {
            fs::copy(OVMF_VARS, &vars).with_context(|| format!("copying {OVMF_VARS} (ovmf)"))?;
        }
        let serial_log = spec.artifacts.join(format!("serial-{}.log", spec.name));
        let qemu_log = spec.artifacts.join(format!("qemu-{}.log", spec.name));
        let qmp = dir.path().join("qmp.sock");
        let orchestrator = match &spec.rcp {
            Some(pki) => {
                // QEMU starts it per guest connection and only logs a failure.
                Command::new("socat")
                    .arg("-V")
                    .stdout(Stdio::null())
                    .status()
                    .context("socat (package socat) forwards the guest's dials to the listener")?;
                Some(Orchestrator::start(&spec.name, pki.orchestrator.clone())?)
            }
            None => None,
        };
        let tpm_log = spec.artifacts.join(format!("swtpm-{}.log", spec.name));
        // A log left by an earlier run would satisfy the first wait at once.
        for log in [&serial_log, &qemu_log, &tpm_log] {
            match fs::remove_file(log) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("removing old {}", log.display()));
                }
                _ => {}
            }
        }

        let tpm = spec.tpm.then(|| (dir.path().to_owned(), tpm_log.clone()));
        let mut args: Vec<String> = [
            "-machine",
            "q35",
            "-accel",
            "tcg",
            "-no-user-config",
            "-no-reboot",
        ]
        .map(String::from)
        .to_vec();
        args.extend([
            "-m".into(),
            spec.memory_mib.to_string(),
            "-smp".into(),
            spec.cpus.to_string(),
        ]);
        args.extend(["-display", "none", "-vga", "none", "-monitor", "none"].map(String::from));
        args.extend([
            "-qmp".into(),
            format!("unix:{},server=on,wait=off", qmp.display()),
            // Appended to: each power cycle's QEMU opens it again.
            "-chardev".into(),
            format!("file,id=serial0,path={},append=on", serial_log.display()),
            "-serial".into(),
            "chardev:serial0".into(),
            "-drive".into(),
            format!("if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}"),
            "-drive".into(),
            format!("if=pflash,format=raw,unit=1,file={}", vars.display()),
            "-netdev".into(),
            netdev(orchestrator.as_ref(), spec.ssh_port),
            "-device".into(),
            "virtio-net-pci,netdev=net0".into(),
        ]);
        if tpm.is_some() {
            args.extend(swtpm::Swtpm::qemu_args(dir.path()));
        }
        for (i, disk) in spec.disks.iter().enumerate() {
            args.extend([
                "-drive".into(),
                format!("if=none,id=disk{i},format=raw,file={}", disk.display()),
                "-device".into(),
                format!("virtio-blk-pci,drive=disk{i},bootindex={i}"),
            ]);
        }
        let qemu = Supervised::start(Launch {
            name: spec.name.clone(),
            args,
            qemu_log,
            serial_log: serial_log.clone(),
            tpm,
        })?;
        println!(
            "vm {}: rcp listener {}",
            spec.name,
            orchestrator
                .as_ref()
                .map_or("none".to_owned(), |o| format!("127.0.0.1:{}", o.port()))
        );
        Ok(Vm {
            name: spec.name,
            qemu,
            serial_log,
            orchestrator,
            cursor: 0,
            boot_started: Instant::now(),
            boots: 0,
            qmp,
            stalled_reboot_resets: 0,
            ssh_port: spec.ssh_port,
            _dir: dir,
        })
    }

    pub fn serial_log(&self) -> &Path {
        &self.serial_log
    }

    /// The serial log so far (lossy UTF-8: firmware output is not text).
    pub fn serial(&self) -> String {
        String::from_utf8_lossy(&fs::read(&self.serial_log).unwrap_or_default()).into_owned()
    }

    fn tail(&self) -> String {
        let log = self.serial();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// How many stalled reboots the harness has reset so far.
    pub fn stalled_reboot_resets(&self) -> u32 {
        self.stalled_reboot_resets
    }

    /// Waits until `marker` appears on the serial console after everything
    /// matched before; returns its whole line. Fails if QEMU exits first.
    /// A reboot that stalls (see [`REBOOT_STALL`]) is reset on the way; a
    /// boot loader that stalls fails the wait early.
    pub async fn wait_for_serial(
        &mut self,
        marker: &str,
        timeout: Duration,
    ) -> anyhow::Result<String> {
        let deadline = Instant::now() + timeout;
        let mut stall = reboot_stall::StallWatch::default();
        let mut kicked = false;
        // Resets of this wait's stalled reboots: a guest whose reset did not
        // bring the firmware back twice is stuck in QEMU itself (seen under
        // TCG: no output at all, QEMU spinning); a fresh QEMU (nextest's
        // retry) boots it, so fail now instead of sitting out the timeout.
        let mut resets_here = 0u32;
        let registers_file = self.serial_log.with_extension("stall-registers.txt");
        loop {
            let bytes = fs::read(&self.serial_log).unwrap_or_default();
            match stall.stalled(&bytes, REBOOT_STALL) {
                Some(Stall::Restart) if resets_here >= MAX_RESETS_PER_WAIT => bail!(
                    "vm {}: silent after 'reboot: machine restart' even after {resets_here} \
                     resets {REBOOT_STALL:?} apart (QEMU stuck under TCG; a fresh QEMU boots \
                     the same disk); serial tail:\n{}",
                    self.name,
                    self.tail()
                ),
                Some(Stall::Restart) => {
                    resets_here += 1;
                    self.stalled_reboot_resets += 1;
                    println!(
                        "vm {}: silent for {REBOOT_STALL:?} after 'reboot: machine restart'; \
                         resetting it through QMP (stalled reboot {})",
                        self.name, self.stalled_reboot_resets
                    );
                    reboot_stall::system_reset(&self.qmp)
                        .with_context(|| format!("vm {}: resetting a stalled reboot", self.name))?;
                    stall = reboot_stall::StallWatch::default();
                }
                Some(Stall::BootLoader) if !kicked => {
                    kicked = true;
                    let registers = reboot_stall::kick(&self.qmp).with_context(|| {
                        format!("vm {}: kicking a stalled boot loader", self.name)
                    })?;
                    fs::write(&registers_file, registers)?;
                    println!(
                        "vm {}: the boot loader silent for {REBOOT_STALL:?} before the kernel; \
                         vCPUs stopped and resumed (registers in {})",
                        self.name,
                        registers_file.display()
                    );
                    stall = reboot_stall::StallWatch::default();
                }
                Some(Stall::BootLoader) => bail!(
                    "vm {}: the boot loader made no progress for {REBOOT_STALL:?} before the \
                     kernel, even after its vCPUs were stopped and resumed (a TCG stall; \
                     registers in {}); serial tail:\n{}",
                    self.name,
                    registers_file.display(),
                    self.tail()
                ),
                None => {}
            }
            let fresh = bytes.get(self.cursor..).unwrap_or_default();
            if let Some(at) = fresh
                .windows(marker.len())
                .position(|w| w == marker.as_bytes())
            {
                let start = fresh[..at]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                // Only a complete line counts: the rest may still be coming.
                if let Some(newline) = fresh[at..].iter().position(|&b| b == b'\n') {
                    let end = at + newline;
                    let line = String::from_utf8_lossy(&fresh[start..end])
                        .trim_end_matches('\r')
                        .to_owned();
                    self.cursor += end + 1;
                    return Ok(line);
                }
            }
            if let Some(status) = self.qemu.exited() {
                bail!(
                    "vm {}: QEMU exited ({status}) before {marker:?}; serial tail:\n{}",
                    self.name,
                    self.tail()
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "vm {}: no {marker:?} within {timeout:?}; serial tail:\n{}",
                    self.name,
                    self.tail()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits for the next boot to print `marker` and reports how long the
    /// boot took (since start, or since the previous boot's marker when the
    /// guest rebooted in between).
    pub async fn wait_for_boot(&mut self, marker: &str, timeout: Duration) -> anyhow::Result<Boot> {
        let line = self.wait_for_serial(marker, timeout).await?;
        let duration = self.boot_started.elapsed();
        self.boots += 1;
        println!(
            "vm {}: boot {} reached {marker} after {:.1}s",
            self.name,
            self.boots,
            duration.as_secs_f64()
        );
        self.boot_started = Instant::now();
        Ok(Boot { line, duration })
    }

    /// Restarts the boot clock, e.g. right before asking the guest to reboot.
    pub fn boot_clock_restart(&mut self) {
        self.boot_started = Instant::now();
    }

    /// A local Unix socket that reaches the guest's tridentd through its
    /// reverse-connect tunnel (the newest one: it follows reboots). Needs a
    /// tokio runtime and [`VmSpec::orchestrator`].
    pub fn forward_tridentd(&self) -> anyhow::Result<GuestSocket> {
        match &self.orchestrator {
            Some(orchestrator) => orchestrator.socket(),
            None => bail!(
                "vm {}: no reverse-connect listener (VmSpec::orchestrator not given)",
                self.name
            ),
        }
    }

    /// The local port that reaches the guest's sshd ([`VmSpec::ssh`]).
    pub fn ssh_port(&self) -> Option<u16> {
        self.ssh_port
    }

    /// Guest reboots the harness followed with a new QEMU (`power_cycle`).
    pub fn power_cycles(&self) -> u32 {
        self.qemu.power_cycles()
    }

    /// Stops QEMU (SIGTERM, then SIGKILL after 10 s), then its TPM.
    pub fn stop(&mut self) {
        self.qemu.stop();
    }
}

/// QEMU's user network. With a listener, the guest's dials to
/// [`GUEST_RCP_ADDR`] are handed to `socat`, which QEMU starts per
/// connection (`cmd:`; a `tcp:` chardev would carry only one connection,
/// and the guest dials again after every reboot).
fn netdev(orchestrator: Option<&Orchestrator>, ssh_port: Option<u16>) -> String {
    let mut netdev = "user,id=net0".to_owned();
    if let Some(o) = orchestrator {
        netdev.push_str(&format!(
            ",guestfwd=tcp:{GUEST_RCP_ADDR}-cmd:socat - TCP:127.0.0.1:{}",
            o.port()
        ));
    }
    if let Some(port) = ssh_port {
        netdev.push_str(&format!(",hostfwd=tcp:127.0.0.1:{port}-:22"));
    }
    netdev
}

impl Drop for Vm {
    fn drop(&mut self) {
        self.stop();
    }
}
