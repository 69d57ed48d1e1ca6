//! A software TPM 2.0 for one VM: `swtpm socket --tpm2` (package swtpm),
//! its state (`tpm2-00.permall`) in the VM's work directory, its control
//! channel a Unix socket there that QEMU attaches (`-chardev socket`,
//! `-tpmdev emulator`, `-device tpm-crb`). Started before QEMU, killed
//! after it; `--terminate` also ends it when QEMU closes the channel.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// A running swtpm; killed on drop.
#[derive(Debug)]
pub struct Swtpm {
    child: Child,
    socket: PathBuf,
}

impl Swtpm {
    /// Starts swtpm with its state and socket in `dir`, logging to `log`;
    /// returns once the socket is there.
    pub fn start(dir: &Path, log: &Path) -> anyhow::Result<Swtpm> {
        let state = dir.join("tpm2");
        fs::create_dir_all(&state)?;
        let socket = socket_in(dir);
        // A socket left by the previous power cycle's swtpm.
        let _ = fs::remove_file(&socket);
        let child = Command::new("swtpm")
            .args(["socket", "--tpm2", "--terminate"])
            .arg("--tpmstate")
            .arg(format!("dir={}", state.display()))
            .arg("--ctrl")
            .arg(format!("type=unixio,path={}", socket.display()))
            .arg("--log")
            .arg(format!("file={},level=1", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting swtpm (package swtpm)")?;
        let mut tpm = Swtpm { child, socket };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !tpm.socket.exists() {
            if let Some(status) = tpm.child.try_wait()? {
                bail!(
                    "swtpm exited ({status}) before its socket appeared; log {}",
                    log.display()
                );
            }
            if Instant::now() > deadline {
                tpm.stop();
                bail!("swtpm: no socket {} within 10 s", tpm.socket.display());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        println!(
            "swtpm: started (pid {}, socket {})",
            tpm.child.id(),
            tpm.socket.display()
        );
        Ok(tpm)
    }

    /// QEMU's arguments attaching the swtpm of `dir` as the VM's TPM 2.0
    /// (CRB interface).
    pub fn qemu_args(dir: &Path) -> Vec<String> {
        vec![
            "-chardev".into(),
            format!("socket,id=chrtpm,path={}", socket_in(dir).display()),
            "-tpmdev".into(),
            "emulator,id=tpm0,chardev=chrtpm".into(),
            "-device".into(),
            "tpm-crb,tpmdev=tpm0".into(),
        ]
    }

    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for Swtpm {
    fn drop(&mut self) {
        self.stop();
    }
}

fn socket_in(dir: &Path) -> PathBuf {
    dir.join("swtpm.sock")
}
