//! The tools of the encryption layer: `cryptsetup` (LUKS2),
//! `systemd-cryptenroll` (the TPM 2.0 key) and `losetup` (a node over a
//! partition's byte range), with upstream's parameters
//! (`osutils/src/encryption.rs`).
//!
//! Key material never reaches a command line, a log or an error: the key
//! is a file (`--key-file`, `--unlock-key-file`), either the operator's
//! recovery key file or [`TempKey`] (random bytes in a 0600 file of a
//! private directory on /run, a tmpfs: never on a disk). Tool output is
//! quoted in errors; these tools never print a key they read.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use trident_host::{ResultExt, Subkind, TridentError};

/// Cipher of the LUKS2 data segment (upstream's).
pub const CIPHER: &str = "aes-xts-plain64";
/// Key size in bits (upstream's).
pub const KEY_SIZE: &str = "512";
/// Bytes of a temporary key (upstream's `TMP_RECOVERY_KEY_SIZE`).
const TEMP_KEY_BYTES: usize = 64;

/// Runs `program args..`: its stdout, or (Err) its exit status and stderr.
fn output(program: &str, args: &[&OsStr]) -> Result<Result<String, String>, TridentError> {
    let out = Command::new(program).args(args).output().structured_msg(
        Subkind::EncryptBlockDevice,
        format!("Cannot run '{program}'"),
    )?;
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() {
        return Ok(Ok(stdout));
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    Ok(Err(format!("{}: {stderr}", out.status)))
}

/// Runs `program args..`; an error of `subkind` saying `doing` and why.
fn run(
    subkind: Subkind,
    doing: &str,
    program: &str,
    args: &[&OsStr],
) -> Result<String, TridentError> {
    output(program, args)?
        .map_err(|why| TridentError::new(subkind, format!("{doing}: '{program}' failed ({why})")))
}

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}

/// A random key in a 0600 file of a private (0700) directory; the file is
/// overwritten and both are removed when dropped.
pub struct TempKey {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl TempKey {
    pub fn new() -> Result<TempKey, TridentError> {
        let subkind = Subkind::EncryptBlockDevice;
        // /run is a tmpfs on systemd hosts: the key never reaches a disk.
        let base = if Path::new("/run").is_dir() {
            PathBuf::from("/run")
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new()
            .prefix("tridentd-luks-")
            .tempdir_in(&base)
            .structured_msg(subkind, "Cannot create the temporary key's directory")?;
        // Private before the key goes in (tempfile leaves the umask's mode).
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .structured_msg(subkind, "Cannot make the temporary key's directory private")?;
        let path = dir.path().join("key");
        let mut key = [0u8; TEMP_KEY_BYTES];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .structured_msg(subkind, "Cannot read random bytes for the temporary key")?;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| f.write_all(&key));
        key.fill(0);
        written.structured_msg(subkind, "Cannot write the temporary key")?;
        Ok(TempKey { dir, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempKey {
    fn drop(&mut self) {
        // Overwritten before the directory goes (TempDir removes it).
        let zeros = [0u8; TEMP_KEY_BYTES];
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&self.path) {
            let _ = f.write_all(&zeros).and_then(|()| f.sync_all());
        }
        tracing::debug!(dir = %self.dir.path().display(), "temporary key removed");
    }
}

/// A loop device over `size` bytes at `offset` of `backing`: the node the
/// LUKS2 tools work on (a partition is a byte range of its disk). Detached
/// when dropped: at once if unused, else (an open dm-crypt mapping on it)
/// by the kernel when the mapping closes.
pub struct LoopNode {
    path: String,
}

impl LoopNode {
    pub fn attach(backing: &str, offset: u64, size: u64) -> Result<LoopNode, TridentError> {
        let (offset, size) = (offset.to_string(), size.to_string());
        let path = run(
            Subkind::EncryptBlockDevice,
            &format!("Attaching a loop device over {backing}"),
            "losetup",
            &[
                os("--find"),
                os("--show"),
                os("--offset"),
                os(&offset),
                os("--sizelimit"),
                os(&size),
                os(backing),
            ],
        )?;
        Ok(LoopNode { path })
    }

    pub fn path(&self) -> &str {
        &self.path
    }
}

impl Drop for LoopNode {
    fn drop(&mut self) {
        if let Ok(Err(why)) = output("losetup", &[os("--detach"), os(&self.path)]) {
            tracing::warn!(device = %self.path, %why, "loop device not detached");
        }
    }
}

/// `cryptsetup luksFormat --type luks2` of `device` with `key` in slot 0
/// (upstream's parameters: PBKDF2 with its minimum work, as the keys are
/// random bytes, not passphrases).
pub fn format(device: &str, key: &Path) -> Result<(), TridentError> {
    run(
        Subkind::EncryptBlockDevice,
        &format!("Formatting {device} as LUKS2"),
        "cryptsetup",
        &[
            os("luksFormat"),
            os("--batch-mode"),
            os("--type"),
            os("luks2"),
            os("--cipher"),
            os(CIPHER),
            os("--key-size"),
            os(KEY_SIZE),
            os("--hash"),
            os("sha512"),
            os("--pbkdf"),
            os("pbkdf2"),
            os("--iter-time"),
            os("1"),
            os("--force-password"),
            os("--key-slot"),
            os("0"),
            os("--key-file"),
            key.as_os_str(),
            os(device),
        ],
    )
    .map(drop)
}

/// The TPM 2.0 the host's kernel presents (systemd's choice, or
/// `SYSTEMD_TPM2_DEVICE`).
pub const TPM2_AUTO: &str = "auto";

/// Enrolls a TPM 2.0 key sealed to `pcrs` (`7`, `4+7`) in `tpm` (a device,
/// [`TPM2_AUTO`], or a TCTI such as `swtpm:path=SOCKET`), unlocking the
/// volume with `key`; replaces an earlier TPM 2.0 slot.
pub fn enroll_tpm2(device: &str, key: &Path, pcrs: &str, tpm: &str) -> Result<(), TridentError> {
    let unlock = format!("--unlock-key-file={}", key.display());
    let pcrs_arg = format!("--tpm2-pcrs={pcrs}");
    let tpm_arg = format!("--tpm2-device={tpm}");
    run(
        Subkind::EncryptBlockDevice,
        &format!("Enrolling the TPM 2.0 for {device} (PCRs {pcrs})"),
        "systemd-cryptenroll",
        &[
            os(&tpm_arg),
            os(&pcrs_arg),
            os("--wipe-slot=tpm2"),
            os(&unlock),
            os(device),
        ],
    )
    .map(drop)
}

/// Wipes every passphrase slot (upstream: the temporary key's, when no
/// recovery key was given), leaving the TPM 2.0 slot.
pub fn wipe_passphrase_slots(device: &str) -> Result<(), TridentError> {
    run(
        Subkind::EncryptBlockDevice,
        &format!("Wiping the temporary key's slot of {device}"),
        "systemd-cryptenroll",
        &[os("--wipe-slot=password"), os(device)],
    )
    .map(drop)
}

/// Opens `device` as `/dev/mapper/<name>` with `key`.
pub fn open_with_key(device: &str, name: &str, key: &Path) -> Result<(), TridentError> {
    run(
        Subkind::EncryptBlockDevice,
        &format!("Opening {device} as /dev/mapper/{name}"),
        "cryptsetup",
        &[
            os("open"),
            os("--type"),
            os("luks2"),
            os("--key-file"),
            key.as_os_str(),
            os(device),
            os(name),
        ],
    )
    .map(drop)
}

/// Opens `device` as `/dev/mapper/<name>` with its TPM 2.0 token only
/// (never a passphrase prompt); with `name` `None`, only checks that the
/// TPM unseals the key (`--test-passphrase`). Err: why not.
pub fn open_with_tpm2(
    device: &str,
    name: Option<&str>,
) -> Result<Result<(), String>, TridentError> {
    let mut args = vec![
        os("open"),
        os("--type"),
        os("luks2"),
        os("--token-only"),
        os("--token-type"),
        os("systemd-tpm2"),
    ];
    match name {
        Some(name) => args.extend([os(device), os(name)]),
        None => args.extend([os("--test-passphrase"), os(device)]),
    }
    Ok(output("cryptsetup", &args)?.map(drop))
}

/// The LUKS2 header's UUID.
pub fn uuid(device: &str) -> Result<String, TridentError> {
    run(
        Subkind::EncryptBlockDevice,
        &format!("Reading the LUKS2 UUID of {device}"),
        "cryptsetup",
        &[os("luksUUID"), os(device)],
    )
}

/// Whether `/dev/mapper/<name>` is an active mapping.
pub fn is_active(name: &str) -> Result<bool, TridentError> {
    Ok(output("cryptsetup", &[os("status"), os(name)])?.is_ok())
}

/// Closes `/dev/mapper/<name>`.
pub fn close(name: &str) -> Result<(), TridentError> {
    run(
        Subkind::CleanupEncryption,
        &format!("Closing /dev/mapper/{name}"),
        "cryptsetup",
        &[os("close"), os(name)],
    )
    .map(drop)
}

/// Bytes of `/dev/mapper/<name>`.
pub fn mapped_size(name: &str) -> Result<u64, TridentError> {
    let path = format!("/dev/mapper/{name}");
    let text = run(
        Subkind::EncryptBlockDevice,
        &format!("Sizing {path}"),
        "blockdev",
        &[os("--getsize64"), os(&path)],
    )?;
    text.parse().map_err(|_| {
        TridentError::new(
            Subkind::EncryptBlockDevice,
            format!("blockdev --getsize64 {path} printed '{text}', not a size"),
        )
    })
}
