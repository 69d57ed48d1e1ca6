//! `storage.encryption`: upstream's PCR names and numbers, and its static
//! rules (microsoft/trident `trident_api/src/config/host/storage/
//! encryption.rs`), each error naming the key path. Which device may be
//! encrypted (a partition or a RAID array, not of type esp, root,
//! root-verity, usr-verity or home) is the storage graph's rule.
//!
//! The keys are sealed directly to the PCRs' values (`systemd-cryptenroll
//! --tpm2-pcrs=`), as upstream does for GRUB images; upstream seals UKI
//! images to a `systemd-pcrlock` policy instead (systemd 255 and later),
//! which is what makes PCRs 4 and 11 survive an update of the bootloader or
//! the UKI. Without it a key sealed to PCR 4 or 11 would not unseal after
//! the first A/B update, so those are refused as unsupported: PCR 7 (the
//! Secure Boot policy) is the one PCR accepted.

use super::{Encryption, HostConfiguration, Pcr};
use crate::error::{Subkind, TridentError};

/// systemd-cryptenroll's names of the PCRs, by number (upstream's `Pcr`).
pub const PCR_NAMES: [(u8, &str); 24] = [
    (0, "platform-code"),
    (1, "platform-config"),
    (2, "external-code"),
    (3, "external-config"),
    (4, "boot-loader-code"),
    (5, "boot-loader-config"),
    (6, "host-platform"),
    (7, "secure-boot-policy"),
    (8, "pcr8"),
    (9, "kernel-initrd"),
    (10, "ima"),
    (11, "kernel-boot"),
    (12, "kernel-config"),
    (13, "sysexts"),
    (14, "shim-policy"),
    (15, "system-identity"),
    (16, "debug"),
    (17, "pcr17"),
    (18, "pcr18"),
    (19, "pcr19"),
    (20, "pcr20"),
    (21, "pcr21"),
    (22, "pcr22"),
    (23, "application-support"),
];

/// The PCRs upstream seals to at all (4, 7, 11).
const UPSTREAM_PCRS: [u8; 3] = [4, 7, 11];
/// The PCRs this daemon seals to (see the module's comment).
pub const SEALABLE_PCRS: [u8; 1] = [7];

impl Pcr {
    /// The PCR's number: from a number 0-23, a name (`secure-boot-policy`)
    /// or upstream's variant name (`Pcr7`).
    pub fn number(&self) -> Option<u8> {
        match self {
            Pcr::Number(n) => (*n < 24).then_some(*n),
            Pcr::Name(name) => PCR_NAMES
                .iter()
                .find(|(_, n)| n == name)
                .map(|(number, _)| *number)
                .or_else(|| {
                    name.strip_prefix("Pcr")
                        .and_then(|n| n.parse::<u8>().ok())
                        .filter(|n| *n < 24)
                }),
        }
    }
}

impl Encryption {
    /// The PCR numbers, sorted and without repeats (valid PCRs only:
    /// validation refuses the others).
    pub fn pcr_numbers(&self) -> Vec<u8> {
        let mut numbers: Vec<u8> = self.pcrs.iter().filter_map(Pcr::number).collect();
        numbers.sort_unstable();
        numbers.dedup();
        numbers
    }

    /// `--tpm2-pcrs=` of systemd-cryptenroll: `7` or `4+7`.
    pub fn tpm2_pcrs_arg(&self) -> String {
        self.pcr_numbers()
            .iter()
            .map(u8::to_string)
            .collect::<Vec<_>>()
            .join("+")
    }

    /// The recovery key file's path (`recoveryKeyUrl` without `file://`).
    pub fn recovery_key_path(&self) -> Option<&str> {
        self.recovery_key_url
            .as_deref()
            .and_then(|url| url.strip_prefix("file://"))
    }
}

#[track_caller]
fn invalid(subkind: Subkind, path: &str, what: String) -> TridentError {
    TridentError::new(subkind, format!("Host Configuration key '{path}': {what}"))
}

/// Upstream's rules for `storage.encryption`: at least one volume and one
/// PCR, PCRs upstream knows and seals to, a `file://` recovery key URL.
pub fn validate_encryption(hc: &HostConfiguration) -> Result<(), TridentError> {
    let Some(encryption) = &hc.storage.encryption else {
        return Ok(());
    };
    const BASE: &str = "storage.encryption";
    if encryption.volumes.is_empty() {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            &format!("{BASE}.volumes"),
            "at least one encrypted volume is required".into(),
        ));
    }
    if encryption.pcrs.is_empty() {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            &format!("{BASE}.pcrs"),
            "at least one PCR is required (7 or secure-boot-policy)".into(),
        ));
    }
    for (i, pcr) in encryption.pcrs.iter().enumerate() {
        let key = format!("{BASE}.pcrs[{i}]");
        let Some(number) = pcr.number() else {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &key,
                format!(
                    "{} is not a PCR: a number 0-23 or a name such as secure-boot-policy",
                    match pcr {
                        Pcr::Number(n) => n.to_string(),
                        Pcr::Name(name) => format!("'{name}'"),
                    }
                ),
            ));
        };
        if !UPSTREAM_PCRS.contains(&number) {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &key,
                format!("PCR {number} is not supported: only PCRs 4, 7 and 11 are"),
            ));
        }
        if !SEALABLE_PCRS.contains(&number) {
            return Err(invalid(
                Subkind::UnsupportedFeature,
                &key,
                format!(
                    "sealing to PCR {number} needs a systemd-pcrlock policy, which this daemon \
                     does not create; instead: 7 (secure-boot-policy)"
                ),
            ));
        }
    }
    if let Some(url) = &encryption.recovery_key_url {
        let key = format!("{BASE}.recoveryKeyUrl");
        match encryption.recovery_key_path() {
            Some(path) if path.starts_with('/') && path.len() > 1 => {}
            Some(_) => {
                return Err(invalid(
                    Subkind::InvalidHostConfiguration,
                    &key,
                    format!("'{url}' must name an absolute path (file:///path/to/key)"),
                ));
            }
            None => {
                let scheme = url.split_once(':').map_or(url.as_str(), |(s, _)| s);
                return Err(invalid(
                    Subkind::InvalidHostConfiguration,
                    &key,
                    format!("'{url}' has scheme '{scheme}': only file:// URLs are supported"),
                ));
            }
        }
    }
    Ok(())
}
