//! Builds the VM test OS for e2e tests: the `trident.raw` system extension
//! from the freshly built binaries (`packaging/sysext/build.sh`), a version of
//! the Debian test OS carrying it (`tests/vm/build-image.sh`, root filesystem
//! cached across runs), and that version's COSI (mkcosi's pack mode, through
//! the library).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use trident_cosi::metadata::{
    Bootloader, BootloaderType, PART_TYPE_ESP, PART_TYPE_ROOT_X86_64, SystemdBoot,
    SystemdBootEntry, SystemdBootEntryType,
};
use trident_cosi::writer::{self, FixtureOutput, ImagePartition, ImagesSpec};

use crate::bin_dir;

/// The repository root (the e2e crate lives in `tests/`).
pub fn repo_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

fn run(what: &str, cmd: &mut Command) -> anyhow::Result<()> {
    let started = Instant::now();
    let status = cmd
        .status()
        .with_context(|| format!("{what}: starting {cmd:?}"))?;
    if !status.success() {
        bail!("{what} failed ({status}): {cmd:?}");
    }
    println!("timing: {what} {:.1}s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Builds `dir/trident.raw` from the binaries next to the tests.
pub fn build_sysext(dir: &Path) -> anyhow::Result<PathBuf> {
    let out = dir.join("trident.raw");
    run(
        "sysext",
        Command::new("bash")
            .arg(repo_root().join("packaging/sysext/build.sh"))
            .arg("--bin-dir")
            .arg(bin_dir())
            .arg("--out")
            .arg(&out),
    )?;
    Ok(out)
}

/// One built version of the test OS.
#[derive(Debug, Clone)]
pub struct TestOs {
    pub version: String,
    /// Its `/etc/os-release`.
    pub os_release: String,
    pub esp_image: PathBuf,
    pub root_image: PathBuf,
    pub root_fs_uuid: String,
    /// The COSI packed from the two images.
    pub cosi: FixtureOutput,
}

fn read_env(path: &Path) -> anyhow::Result<HashMap<String, String>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('='))
        // Values with spaces are single-quoted for the shell that sources it.
        .map(|(k, v)| (k.to_owned(), v.trim_matches('\'').to_owned()))
        .collect())
}

/// Builds test OS `version` with `sysext` in `dir/<version>/` and packs it
/// as `dir/<version>.cosi`.
pub fn build_test_os(version: &str, sysext: &Path, dir: &Path) -> anyhow::Result<TestOs> {
    let out = dir.join(version);
    run(
        &format!("test OS {version} (build-image.sh)"),
        Command::new("bash")
            .arg(repo_root().join("tests/vm/build-image.sh"))
            .arg("--sysext")
            .arg(sysext)
            .arg(version)
            .arg(&out),
    )?;
    let env = read_env(&out.join("image.env"))?;
    let get = |key: &str| {
        env.get(key)
            .cloned()
            .with_context(|| format!("image.env has no {key}"))
    };
    let os_release = fs::read_to_string(out.join("os-release"))?;
    let partition =
        |image: &str, name: &str, part_type: &str, fs: &str, uuid: String, mount: &str| {
            anyhow::Ok(ImagePartition {
                image: PathBuf::from(get(image)?),
                name: name.to_owned(),
                part_type: part_type.parse()?,
                fs_type: fs.to_owned(),
                fs_uuid: uuid,
                mount_point: mount.to_owned(),
                size: None,
            })
        };
    let root_fs_uuid = get("ROOT_FS_UUID")?;
    let spec = ImagesSpec {
        partitions: vec![
            partition(
                "ESP_IMAGE",
                "esp",
                PART_TYPE_ESP,
                "vfat",
                get("ESP_FS_UUID")?,
                "/boot/efi",
            )?,
            partition(
                "ROOT_IMAGE",
                "root",
                PART_TYPE_ROOT_X86_64,
                "ext4",
                root_fs_uuid.clone(),
                "/",
            )?,
        ],
        disk_size: None,
        lba_size: 512,
        zstd_level: writer::DEFAULT_ZSTD_LEVEL,
        os_release: os_release.clone(),
        bootloader: Bootloader {
            bootloader_type: BootloaderType::SystemdBoot,
            systemd_boot: Some(SystemdBoot {
                entries: vec![SystemdBootEntry {
                    entry_type: SystemdBootEntryType::Config,
                    path: get("BOOT_ENTRY")?,
                    kernel: get("KERNEL_RELEASE")?,
                    cmdline: get("CMDLINE")?,
                }],
            }),
        },
    };
    let started = Instant::now();
    let cosi = writer::pack_images(&spec, &dir.join(format!("{version}.cosi")))?;
    println!(
        "timing: test OS {version} COSI {:.1}s ({} bytes, disk {} bytes)",
        started.elapsed().as_secs_f64(),
        fs::metadata(&cosi.path)?.len(),
        cosi.disk_size
    );
    Ok(TestOs {
        version: version.to_owned(),
        os_release,
        esp_image: spec.partitions[0].image.clone(),
        root_image: spec.partitions[1].image.clone(),
        root_fs_uuid,
        cosi,
    })
}
