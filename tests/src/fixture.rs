//! Test fixtures shared by the end-to-end tests: COSI images of generated
//! content ([`CosiImage`], trident-cosi's fixture writer, what `mkcosi`
//! writes in its fixture mode), the A/B Host Configuration that installs
//! one onto a disk ([`AbHostConfig`]), a temp dir holding an image,
//! disk-image files and configurations ([`InstallFixture`]), and one
//! holding an image and a blank target for StreamDisk
//! ([`StreamDiskFixture`]).
//!
//! Fixtures panic on failure: they are test set-up, and a test that cannot
//! build its fixture must fail loudly.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use trident_cosi::writer::{self, Corruption, FixtureOutput, FixtureSpec};

/// A COSI image of generated content: a GPT disk of `disk_bytes` holding an
/// ESP and a root partition; `seed` decides content and GUIDs (an "update"
/// image uses another seed).
#[derive(Debug, Clone)]
pub struct CosiImage {
    spec: FixtureSpec,
}

impl CosiImage {
    /// A disk of `disk_bytes` with the writer's default ESP (8 MiB).
    pub fn new(disk_bytes: u64, seed: u64) -> Self {
        CosiImage {
            spec: FixtureSpec::new(disk_bytes, seed),
        }
    }

    /// The image the CLI tests install: 24 MiB with a 4 MiB ESP.
    pub fn small(seed: u64) -> Self {
        Self::new(24 << 20, seed).esp_bytes(4 << 20)
    }

    pub fn esp_bytes(mut self, bytes: u64) -> Self {
        self.spec.esp_size = bytes;
        self
    }

    /// Breaks the image on purpose (`None`: intact).
    pub fn corruption(mut self, corruption: Option<Corruption>) -> Self {
        self.spec.corruption = corruption;
        self
    }

    /// Writes the image to `path`.
    pub fn write(&self, path: &Path) -> FixtureOutput {
        writer::write_cosi(&self.spec, path)
            .unwrap_or_else(|e| panic!("write COSI fixture {}: {e}", path.display()))
    }

    /// Writes the plain disk the image describes (intact, whatever the
    /// corruption) to `path`: what a target holds after a good write.
    pub fn write_disk_image(&self, path: &Path) {
        writer::write_disk_image(&self.spec, path)
            .unwrap_or_else(|e| panic!("write disk image {}: {e}", path.display()));
    }
}

/// A hook a Host Configuration script runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptHook {
    PreServicing,
    PostProvision,
}

impl ScriptHook {
    fn key(self) -> &'static str {
        match self {
            ScriptHook::PreServicing => "preServicing",
            ScriptHook::PostProvision => "postProvision",
        }
    }
}

/// The A/B disk-image layout's Host Configuration: one disk `os` holding
/// `esp`, `root-a` and `root-b`, the A/B pair `root` over the two roots,
/// the ESP mounted at /boot/efi and `root` at `/`. Knobs: the image (url,
/// sha384), the device, partition sizes, scripts, an encrypted `/srv`
/// and extra top-level YAML.
#[derive(Debug, Clone)]
pub struct AbHostConfig {
    image_url: String,
    sha384: String,
    device: String,
    esp_size: String,
    root_size: String,
    scripts: Vec<(ScriptHook, String, String)>,
    encrypted_srv: Option<(String, Option<String>)>,
    extra: String,
}

impl AbHostConfig {
    /// Installs the image at `image_url` onto `device`, with an 8M ESP,
    /// 48M roots and an image hash the daemon does not check ("ignored").
    pub fn new(image_url: impl Into<String>, device: impl AsRef<Path>) -> Self {
        AbHostConfig {
            image_url: image_url.into(),
            sha384: "ignored".to_owned(),
            device: device.as_ref().display().to_string(),
            esp_size: "8M".to_owned(),
            root_size: "48M".to_owned(),
            scripts: Vec::new(),
            encrypted_srv: None,
            extra: String::new(),
        }
    }

    /// Installs the local COSI file `image` (a `file://` url).
    pub fn file(image: &Path, device: impl AsRef<Path>) -> Self {
        Self::new(format!("file://{}", image.display()), device)
    }

    /// The image's metadata hash the daemon checks.
    pub fn sha384(mut self, sha384: impl Into<String>) -> Self {
        self.sha384 = sha384.into();
        self
    }

    /// Partition sizes, as the Host Configuration spells them (e.g. "32M").
    pub fn sizes(mut self, esp: &str, root: &str) -> Self {
        self.esp_size = esp.to_owned();
        self.root_size = root.to_owned();
        self
    }

    /// Adds a script `name` running `content` at `hook`.
    pub fn script(mut self, hook: ScriptHook, name: &str, content: &str) -> Self {
        self.scripts
            .push((hook, name.to_owned(), content.to_owned()));
        self
    }

    /// Adds a `size` partition `secret` holding the LUKS2 volume `srv`
    /// (`/dev/mapper/srv`, sealed to PCR 7, a new ext4 at `/srv`), with
    /// the recovery key file `recovery_key` when given.
    pub fn encrypted_srv(mut self, size: &str, recovery_key: Option<&Path>) -> Self {
        let key = recovery_key.map(|p| p.display().to_string());
        self.encrypted_srv = Some((size.to_owned(), key));
        self
    }

    /// Appends `yaml` (whole top-level sections, e.g. `os:` or `health:`,
    /// but no `scripts:` when [`AbHostConfig::script`] is used).
    pub fn extra(mut self, yaml: &str) -> Self {
        self.extra.push_str(yaml);
        self
    }

    pub fn yaml(&self) -> String {
        let mut text = format!(
            r#"image:
  url: {url}
  sha384: {sha384}
storage:
  disks:
  - id: os
    device: {device}
    partitionTableType: gpt
    partitions:
    - {{ id: esp, type: esp, size: {esp} }}
    - {{ id: root-a, type: root, size: {root} }}
    - {{ id: root-b, type: root, size: {root} }}
{secret}  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: esp, mountPoint: {{ path: /boot/efi, options: umask=0077 }} }}
  - {{ deviceId: root, mountPoint: / }}
{srv}"#,
            url = self.image_url,
            sha384 = self.sha384,
            device = self.device,
            esp = self.esp_size,
            root = self.root_size,
            secret = self.encryption_yaml(),
            srv = if self.encrypted_srv.is_some() {
                "  - { deviceId: srv, source: new, type: ext4, mountPoint: /srv }\n"
            } else {
                ""
            },
        );
        if !self.scripts.is_empty() {
            text.push_str("scripts:\n");
        }
        for hook in [ScriptHook::PreServicing, ScriptHook::PostProvision] {
            let mut scripts = self
                .scripts
                .iter()
                .filter(|(h, _, _)| *h == hook)
                .peekable();
            if scripts.peek().is_some() {
                let _ = writeln!(text, "  {}:", hook.key());
            }
            for (_, name, content) in scripts {
                // A Rust debug string is a valid YAML double-quoted scalar.
                let _ = writeln!(text, "  - name: {name}\n    content: {content:?}");
            }
        }
        text.push_str(&self.extra);
        text
    }

    /// The `secret` partition and `storage.encryption` of
    /// [`AbHostConfig::encrypted_srv`] (the partition line goes on the
    /// disk, the section after it).
    fn encryption_yaml(&self) -> String {
        let Some((size, key)) = &self.encrypted_srv else {
            return String::new();
        };
        let recovery = key
            .as_ref()
            .map(|k| format!("    recoveryKeyUrl: file://{k}\n"))
            .unwrap_or_default();
        format!(
            "    - {{ id: secret, type: linux-generic, size: {size} }}\n  encryption:\n{recovery}    pcrs: [secure-boot-policy]\n    volumes:\n    - {{ id: srv, deviceName: srv, deviceId: secret }}\n"
        )
    }

    /// Writes the configuration to `path` and returns it.
    pub fn write(&self, path: &Path) -> PathBuf {
        std::fs::write(path, self.yaml())
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path.to_owned()
    }
}

/// Size of each disk-image file [`InstallFixture::config`] creates.
pub const INSTALL_DISK_BYTES: u64 = 96 << 20;

/// A temp dir with one COSI image (`img.cosi`) and, per name, a disk-image
/// file (`<name>.img`) and a Host Configuration installing the image onto
/// it (`<name>.yaml`).
#[derive(Debug)]
pub struct InstallFixture {
    pub dir: tempfile::TempDir,
    pub cosi: FixtureOutput,
}

impl InstallFixture {
    pub fn new(image: &CosiImage) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let cosi = image.write(&dir.path().join("img.cosi"));
        InstallFixture { dir, cosi }
    }

    /// With [`CosiImage::small`] of seed 1: what the CLI tests install.
    pub fn small() -> Self {
        Self::new(&CosiImage::small(1))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A fresh sparse disk-image file `name` of `bytes`.
    pub fn disk(&self, name: &str, bytes: u64) -> PathBuf {
        let disk = self.path(name);
        std::fs::File::create(&disk)
            .and_then(|f| f.set_len(bytes))
            .unwrap_or_else(|e| panic!("disk image {}: {e}", disk.display()));
        disk
    }

    /// The configuration installing the image onto a fresh `<name>.img`
    /// (32M roots, image hash not checked); finish it and [`Self::write`] it.
    pub fn config(&self, name: &str) -> AbHostConfig {
        let disk = self.disk(&format!("{name}.img"), INSTALL_DISK_BYTES);
        AbHostConfig::file(&self.cosi.path, disk).sizes("8M", "32M")
    }

    /// Writes `config` as `<name>.yaml`.
    pub fn write(&self, name: &str, config: &AbHostConfig) -> PathBuf {
        config.write(&self.path(&format!("{name}.yaml")))
    }
}

/// A temp dir with a COSI image (`image.cosi`) and a blank disk-image
/// file of the image's disk size to StreamDisk it onto (`target.img`).
#[derive(Debug)]
pub struct StreamDiskFixture {
    pub dir: tempfile::TempDir,
    pub cosi: FixtureOutput,
    pub target: PathBuf,
}

impl StreamDiskFixture {
    pub fn new(image: &CosiImage) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let cosi = image.write(&dir.path().join("image.cosi"));
        let target = dir.path().join("target.img");
        std::fs::File::create(&target)
            .and_then(|f| f.set_len(cosi.disk_size))
            .unwrap_or_else(|e| panic!("disk image {}: {e}", target.display()));
        StreamDiskFixture { dir, cosi, target }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_with_scripts_and_extra_sections_is_a_valid_host_configuration() {
        let yaml = AbHostConfig::file(Path::new("/tmp/i.cosi"), "/tmp/disk.img")
            .sizes("8M", "32M")
            .script(ScriptHook::PreServicing, "prep", "echo $((1+1))")
            .extra("os:\n  hostname: fixture\n")
            .yaml();
        let hc = trident_host::config::parse(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        assert_eq!(hc.storage.disks[0].partitions.len(), 3, "{yaml}");
        assert_eq!(hc.os.hostname.as_deref(), Some("fixture"), "{yaml}");
    }

    #[test]
    fn scripts_are_grouped_by_hook_and_quoted() {
        let yaml = AbHostConfig::new("http://h/i.cosi", "/dev/vda")
            .script(ScriptHook::PreServicing, "one", "echo \"a\"")
            .script(ScriptHook::PostProvision, "three", "exit 7")
            .script(ScriptHook::PreServicing, "two", "true")
            .yaml();
        assert!(
            yaml.ends_with(
                "scripts:\n  preServicing:\n  - name: one\n    content: \"echo \\\"a\\\"\"\n  \
                 - name: two\n    content: \"true\"\n  postProvision:\n  - name: three\n    \
                 content: \"exit 7\"\n"
            ),
            "{yaml}"
        );
    }
}
