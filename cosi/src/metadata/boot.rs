//! The OS side of `metadata.json`: architecture, installed packages and the
//! bootloader with its entries, as typed data for the boot work (which
//! bootloader to configure, which UKI or config each entry points at).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The OS architecture. `osArch` is case-insensitive and accepts the common
/// aliases (`x64`, `amd64`, `aarch64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsArch {
    X86_64,
    Arm64,
}

impl OsArch {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::X86_64 => "x86_64",
            Self::Arm64 => "arm64",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "x86_64" | "x64" | "amd64" => Some(Self::X86_64),
            "arm64" | "aarch64" => Some(Self::Arm64),
            _ => None,
        }
    }
}

impl fmt::Display for OsArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for OsArch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for OsArch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown architecture {text:?}, expected x86_64 (x64, amd64) or arm64 (aarch64)"
            ))
        })
    }
}

/// One installed package (RPM name, version, release, arch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OsPackage {
    pub name: String,
    pub version: String,
    pub release: String,
    /// `x86_64`, `aarch64`, `noarch`, ... as RPM's `%{ARCH}`.
    pub arch: String,
}

/// The OS's bootloader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bootloader {
    #[serde(rename = "type")]
    pub bootloader_type: BootloaderType,
    /// Required for systemd-boot, absent (or null) for grub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub systemd_boot: Option<SystemdBoot>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BootloaderType {
    Grub,
    SystemdBoot,
}

impl BootloaderType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Grub => "grub",
            Self::SystemdBoot => "systemd-boot",
        }
    }
}

/// systemd-boot's `loader/entries/*.conf` on the ESP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemdBoot {
    pub entries: Vec<SystemdBootEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemdBootEntry {
    #[serde(rename = "type")]
    pub entry_type: SystemdBootEntryType,
    /// Absolute path (from the root filesystem) of the UKI or config.
    pub path: String,
    /// The kernel command line.
    pub cmdline: String,
    /// The kernel release.
    pub kernel: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SystemdBootEntryType {
    /// A UKI started directly.
    UkiStandalone,
    /// A UKI started through a config entry.
    UkiConfig,
    /// A classic kernel + initrd config entry.
    Config,
}
