//! Builds the VM test OS for e2e tests: the `trident.raw` system extension
//! from the freshly built binaries (`packaging/sysext/build.sh`), a version of
//! the Debian test OS carrying it (`tests/vm/build-image.sh`, root filesystem
//! cached across runs), and that version's COSI (mkcosi's pack mode, through
//! the library). Every version built in one work directory carries the same
//! throw-away reverse-connect PKI ([`RcpPki`]), made for that directory.

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
use trident_rcp::TlsFiles;
use trident_rcp::pki::{LeafSpec, TestCa};

use crate::bin_dir;

pub mod cache;

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

/// `trident.raw` from the binaries next to the tests: the shared build's
/// ([`cache`]), made once per build of the binaries, or `dir/trident.raw`
/// with the cache off. Test OS versions built with it share its directory
/// (and its [`RcpPki`]).
pub fn build_sysext(dir: &Path) -> anyhow::Result<PathBuf> {
    if !cache::enabled() {
        return build_sysext_into(dir);
    }
    let build = cache::build_dir()?;
    let _lock = cache::lock(&build)?;
    let out = build.join("trident.raw");
    if out.exists() {
        println!("timing: sysext 0s (shared: {})", out.display());
        return Ok(out);
    }
    cache::prune(&build);
    build_sysext_into(&build)
}

fn build_sysext_into(dir: &Path) -> anyhow::Result<PathBuf> {
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

/// The test OS's identity on the reverse-connect proxy (its hostname too).
pub const RCP_HOST: &str = "trident-test";
/// The name the test OS's agent expects on the orchestrator's certificate.
pub const RCP_SERVER_NAME: &str = "orchestrator.test";

/// A throw-away CA with the orchestrator's certificate and the test OS's
/// (`RCP_HOST`), in the layout `trident-e2e-pki DIR trident-test` writes
/// and `tests/vm/build-image.sh --rcp DIR` reads.
#[derive(Debug, Clone)]
pub struct RcpPki {
    pub dir: PathBuf,
    /// What the VM harness's listener presents and trusts.
    pub orchestrator: TlsFiles,
}

impl RcpPki {
    /// `work/rcp-pki/`, made on first use: every test OS version built in
    /// `work` trusts the same orchestrator.
    pub fn in_dir(work: &Path) -> anyhow::Result<RcpPki> {
        let dir = work.join("rcp-pki");
        let orchestrator = TlsFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("orchestrator.pem"),
            key: dir.join("orchestrator.key"),
        };
        if !orchestrator.key.exists() {
            fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let ca = TestCa::new("trident VM test CA")?;
            ca.write_files(&dir, RCP_HOST, &LeafSpec::dns(RCP_HOST))?;
            // Last: its key is what marks the directory complete.
            ca.write_files(&dir, "orchestrator", &LeafSpec::dns(RCP_SERVER_NAME))?;
        }
        Ok(RcpPki { dir, orchestrator })
    }
}

/// How a test OS boots (`tests/vm/build-image.sh --bootloader`), which the
/// COSI's bootloader metadata says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestBootloader {
    /// systemd-boot with a Type 1 entry (kernel + initrd).
    SystemdBoot,
    /// Debian's signed shim + GRUB (Azure Linux's layout).
    Grub,
    /// systemd-boot with a Unified Kernel Image.
    Uki,
}

impl TestBootloader {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SystemdBoot => "systemd-boot",
            Self::Grub => "grub",
            Self::Uki => "uki",
        }
    }

    /// From `TRIDENT_VM_BOOTLOADER` (default: GRUB, the Azure Linux default).
    pub fn from_env() -> anyhow::Result<Self> {
        match std::env::var("TRIDENT_VM_BOOTLOADER").as_deref() {
            Err(_) | Ok("grub") => Ok(Self::Grub),
            Ok("systemd-boot") => Ok(Self::SystemdBoot),
            Ok("uki") => Ok(Self::Uki),
            Ok(other) => bail!("TRIDENT_VM_BOOTLOADER={other}: grub, systemd-boot or uki"),
        }
    }
}

/// One built version of the test OS.
#[derive(Debug, Clone)]
pub struct TestOs {
    pub version: String,
    pub bootloader: TestBootloader,
    /// Its `/etc/os-release`.
    pub os_release: String,
    pub esp_image: PathBuf,
    pub root_image: PathBuf,
    pub root_fs_uuid: String,
    /// The COSI packed from the two images.
    pub cosi: FixtureOutput,
    /// The reverse-connect PKI it carries (give it to `VmSpec::orchestrator`).
    pub rcp: RcpPki,
    /// What the verity test OS adds ([`build_verity_test_os`]).
    pub verity: Option<VerityTestOs>,
}

/// The verity test OS's own parts (`build-image.sh --verity`): its root is
/// packed `verity=yes` (its hash tree the partition after it), `/boot` and
/// `/var` are filesystem images of their own.
#[derive(Debug, Clone)]
pub struct VerityTestOs {
    pub boot_image: PathBuf,
    pub boot_fs_uuid: String,
    pub var_image: PathBuf,
    pub var_fs_uuid: String,
    /// A file of the root (`/usr/share/trident-test/canary`) made of lines
    /// `<canary_pattern>NNNNN`: nothing else in the image holds the pattern,
    /// so a test finds the file's blocks on the data partition by it.
    pub canary: String,
    pub canary_pattern: String,
}

/// The GPT type of an XBOOTLDR partition (`/boot`), the Discoverable
/// Partitions Specification's.
const PART_TYPE_XBOOTLDR: &str = "bc13c2ff-59e6-4262-a352-b275fd6f7172";
/// The GPT type of a `/var` partition, the same specification's.
const PART_TYPE_VAR: &str = "4d21b016-b534-45c2-a9fb-5c16e091fd2d";

fn read_env(path: &Path) -> anyhow::Result<HashMap<String, String>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('='))
        // Values with spaces are single-quoted for the shell that sources it.
        .map(|(k, v)| (k.to_owned(), v.trim_matches('\'').to_owned()))
        .collect())
}

/// Builds test OS `version` booting with `bootloader`, with `sysext`, in
/// `dir/<version>/` and packs it as `dir/<version>.cosi`, with the
/// matching bootloader metadata. Its `trident-rcp` dials the orchestrator
/// of `dir`'s [`RcpPki`].
pub fn build_test_os(
    version: &str,
    bootloader: TestBootloader,
    sysext: &Path,
    dir: &Path,
) -> anyhow::Result<TestOs> {
    build_test_os_with(version, bootloader, sysext, dir, &[])
}

/// [`build_test_os`] with more `build-image.sh` options (e.g.
/// `--systemd-backports`).
pub fn build_test_os_with(
    version: &str,
    bootloader: TestBootloader,
    sysext: &Path,
    dir: &Path,
    options: &[&str],
) -> anyhow::Result<TestOs> {
    build(version, bootloader, sysext, dir, options, false)
}

/// Builds the verity test OS `version` (`build-image.sh --verity`) in
/// `dir/<version>/` and packs it as `dir/<version>.cosi`: ESP (`/boot/efi`),
/// `/boot`, the root packed `verity=yes` (its hash tree the next
/// partition, its root hash in the metadata) and `/var`, the filesystems
/// upstream's `verity` sample takes from an image. Its initrd opens
/// `/dev/mapper/root` from the kernel arguments tridentd writes for a
/// verity root and mounts the `/etc` overlay of `rd.overlayfs=`; each boot
/// prints the verity probe (`TRIDENT-TEST-OS-VERITY ...`) before the ready
/// marker. `bootloader`: GRUB or systemd-boot (not a UKI).
pub fn build_verity_test_os(
    version: &str,
    bootloader: TestBootloader,
    sysext: &Path,
    dir: &Path,
) -> anyhow::Result<TestOs> {
    build(version, bootloader, sysext, dir, &["--verity"], true)
}

fn build(
    version: &str,
    bootloader: TestBootloader,
    sysext: &Path,
    dir: &Path,
    options: &[&str],
    verity: bool,
) -> anyhow::Result<TestOs> {
    let (out, rcp) = build_image(version, bootloader, sysext, dir, options)?;
    let env = read_env(&out.join("image.env"))?;
    let get = |key: &str| {
        env.get(key)
            .cloned()
            .with_context(|| format!("image.env has no {key}"))
    };
    let os_release = fs::read_to_string(out.join("os-release"))?;
    let partition = |image: &str, name: &str, part_type: &str, uuid: &str, mount: &str| {
        let fs = if mount == "/boot/efi" { "vfat" } else { "ext4" };
        anyhow::Ok(ImagePartition::new(
            PathBuf::from(get(image)?),
            name,
            part_type.parse()?,
            fs,
            &get(uuid)?,
            mount,
        ))
    };
    let esp = partition(
        "ESP_IMAGE",
        "esp",
        PART_TYPE_ESP,
        "ESP_FS_UUID",
        "/boot/efi",
    )?;
    let mut root = partition(
        "ROOT_IMAGE",
        "root",
        PART_TYPE_ROOT_X86_64,
        "ROOT_FS_UUID",
        "/",
    )?;
    let (partitions, verity) = if verity {
        root.verity = true;
        let boot = partition(
            "BOOT_IMAGE",
            "boot",
            PART_TYPE_XBOOTLDR,
            "BOOT_FS_UUID",
            "/boot",
        )?;
        let var = partition("VAR_IMAGE", "var", PART_TYPE_VAR, "VAR_FS_UUID", "/var")?;
        let parts = VerityTestOs {
            boot_image: boot.image.clone(),
            boot_fs_uuid: boot.fs_uuid.clone(),
            var_image: var.image.clone(),
            var_fs_uuid: var.fs_uuid.clone(),
            canary: get("CANARY")?,
            canary_pattern: get("CANARY_PATTERN")?,
        };
        (vec![esp, boot, root, var], Some(parts))
    } else {
        (vec![esp, root], None)
    };
    let esp_image = partitions[0].image.clone();
    let root_image = get("ROOT_IMAGE")?.into();
    let root_fs_uuid = get("ROOT_FS_UUID")?;
    let spec = ImagesSpec {
        partitions,
        disk_size: None,
        lba_size: 512,
        zstd_level: writer::DEFAULT_ZSTD_LEVEL,
        os_release: os_release.clone(),
        bootloader: bootloader_metadata(bootloader, &get)?,
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
        bootloader,
        os_release,
        esp_image,
        root_image,
        root_fs_uuid,
        cosi,
        rcp,
        verity,
    })
}

/// `build-image.sh`'s output directory for `version`, and the PKI its
/// agent trusts: in the shared build when `sysext` is the shared build's
/// (built there once, under its lock), else in `dir`.
fn build_image(
    version: &str,
    bootloader: TestBootloader,
    sysext: &Path,
    dir: &Path,
    options: &[&str],
) -> anyhow::Result<(PathBuf, RcpPki)> {
    let shared = sysext
        .parent()
        .filter(|p| cache::enabled() && p.starts_with(cache::cache_root()));
    let Some(build) = shared else {
        let out = dir.join(version);
        let rcp = RcpPki::in_dir(dir)?;
        run_build_image(version, bootloader, sysext, &rcp, options, &out)?;
        return Ok((out, rcp));
    };
    let _lock = cache::lock(build)?;
    let rcp = RcpPki::in_dir(build)?;
    let out = cache::version_dir(build, version, bootloader.as_str(), options)?;
    if out.join("image.env").exists() {
        println!(
            "timing: test OS {version} {} (build-image.sh) 0s (shared: {})",
            bootloader.as_str(),
            out.display()
        );
        return Ok((out, rcp));
    }
    // Built aside and renamed: a directory with a name is complete.
    let partial = out.with_extension("partial");
    if partial.exists() {
        fs::remove_dir_all(&partial).with_context(|| format!("removing {}", partial.display()))?;
    }
    run_build_image(version, bootloader, sysext, &rcp, options, &partial)?;
    let env = partial.join("image.env");
    let text = fs::read_to_string(&env)?;
    // image.env names the image files by their path: the final one.
    let partial_text = partial.to_string_lossy().into_owned();
    fs::write(&env, text.replace(&partial_text, &out.to_string_lossy()))?;
    fs::rename(&partial, &out)
        .with_context(|| format!("renaming {} to {}", partial.display(), out.display()))?;
    Ok((out, rcp))
}

fn run_build_image(
    version: &str,
    bootloader: TestBootloader,
    sysext: &Path,
    rcp: &RcpPki,
    options: &[&str],
    out: &Path,
) -> anyhow::Result<()> {
    run(
        &format!("test OS {version} {} (build-image.sh)", bootloader.as_str()),
        Command::new("bash")
            .arg(repo_root().join("tests/vm/build-image.sh"))
            .arg("--sysext")
            .arg(sysext)
            .arg("--rcp")
            .arg(&rcp.dir)
            .arg("--bootloader")
            .arg(bootloader.as_str())
            .args(options)
            .arg(version)
            .arg(out),
    )
}

/// The COSI's bootloader section for a test OS, as upstream's COSI 1.2
/// documents it: `grub` alone, or `systemd-boot` with the image's entry
/// (a Type 1 `config` or a `uki-standalone`), from its `image.env`.
fn bootloader_metadata(
    bootloader: TestBootloader,
    get: &dyn Fn(&str) -> anyhow::Result<String>,
) -> anyhow::Result<Bootloader> {
    let entry_type = match bootloader {
        TestBootloader::Grub => {
            return Ok(Bootloader {
                bootloader_type: BootloaderType::Grub,
                systemd_boot: None,
            });
        }
        TestBootloader::SystemdBoot => SystemdBootEntryType::Config,
        TestBootloader::Uki => SystemdBootEntryType::UkiStandalone,
    };
    Ok(Bootloader {
        bootloader_type: BootloaderType::SystemdBoot,
        systemd_boot: Some(SystemdBoot {
            entries: vec![SystemdBootEntry {
                entry_type,
                path: get("BOOT_ENTRY")?,
                kernel: get("KERNEL_RELEASE")?,
                cmdline: get("CMDLINE")?,
            }],
        }),
    })
}
