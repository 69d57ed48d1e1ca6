//! dm-verity hash trees of packed filesystem images: `veritysetup format`
//! (userspace only: it needs no kernel module) writes the hash tree of a
//! filesystem image into a file and prints the root hash; the tree becomes
//! its own partition right after its data, as Image Customizer lays out a
//! verity root, and the metadata's `images[].verity` names both.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::WriterError;

/// DPS root verity partition type for x86-64.
pub const PART_TYPE_ROOT_VERITY_X86_64: &str = "2c7357ed-ebd2-46d9-aec1-23d437ec2bf5";
/// DPS `/usr` verity partition type for x86-64.
pub const PART_TYPE_USR_VERITY_X86_64: &str = "77ff5f63-e7b6-4633-acf4-1565b864c0e6";

/// A hash tree made for one filesystem image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashTree {
    /// The hash device's image (a file in the packer's work directory).
    pub image: PathBuf,
    /// Lower-case hex root hash (SHA-256, veritysetup's default).
    pub roothash: String,
    /// The partition type of the hash partition.
    pub part_type: Uuid,
}

/// The verity partition type that goes with a filesystem mounted at
/// `mount_point`: only `/` and `/usr` can be verity-protected (the
/// kernel command line names `root` and `usr`), as upstream requires.
pub fn hash_part_type(mount_point: &str) -> Result<Uuid, WriterError> {
    let guid = match mount_point {
        "/" => PART_TYPE_ROOT_VERITY_X86_64,
        "/usr" => PART_TYPE_USR_VERITY_X86_64,
        other => {
            return Err(WriterError::Spec(format!(
                "verity is for the / or /usr filesystem, not {other:?}"
            )));
        }
    };
    Uuid::parse_str(guid).map_err(|e| WriterError::Spec(e.to_string()))
}

/// Runs `veritysetup format` over `data` into `workdir/<name>.hash`. The
/// salt and the superblock UUID derive from `seed`, so the same image
/// gives the same tree (and the same COSI).
pub fn format(
    data: &Path,
    mount_point: &str,
    seed: &[&str],
    workdir: &Path,
    name: &str,
) -> Result<HashTree, WriterError> {
    let part_type = hash_part_type(mount_point)?;
    let image = workdir.join(format!("{name}.hash"));
    let roothash_file = workdir.join(format!("{name}.roothash"));
    let mut h = Sha256::new();
    for s in seed {
        h.update(s.as_bytes());
        h.update([0]);
    }
    let digest = h.finalize();
    let salt: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let mut uuid_bytes = [0u8; 16];
    uuid_bytes.copy_from_slice(&digest[..16]);
    let uuid = uuid::Builder::from_random_bytes(uuid_bytes).into_uuid();
    let output = Command::new("veritysetup")
        .arg("format")
        .arg(data)
        .arg(&image)
        .arg(format!("--salt={salt}"))
        .arg(format!("--uuid={uuid}"))
        .arg(format!("--root-hash-file={}", roothash_file.display()))
        .output()
        .map_err(|source| WriterError::Io {
            path: PathBuf::from("veritysetup"),
            source,
        })?;
    if !output.status.success() {
        return Err(WriterError::Spec(format!(
            "veritysetup format {} failed ({}): {}",
            data.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let roothash = std::fs::read_to_string(&roothash_file)
        .map_err(|source| WriterError::Io {
            path: roothash_file.clone(),
            source,
        })?
        .trim()
        .to_ascii_lowercase();
    if roothash.len() != 64 || !roothash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(WriterError::Spec(format!(
            "veritysetup wrote {roothash:?} as the root hash of {}",
            data.display()
        )));
    }
    Ok(HashTree {
        image,
        roothash,
        part_type,
    })
}
