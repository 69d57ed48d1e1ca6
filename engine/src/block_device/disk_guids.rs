//! The GPT disk GUID of each disk the Host Status records (upstream's
//! `diskUuids`), read from the disk itself when asked, so it always names
//! what is on the disk now rather than what was written at install.

use std::collections::BTreeMap;
use std::io::Read;

use trident_cosi::gpt::Gpt;
use trident_host::status::HostStatus;

/// Bytes read from the start of a disk to find its primary GPT: protective
/// MBR, header and a 128-entry array at 4096-byte sectors.
const GPT_PROBE_BYTES: u64 = 4096 * 6;

/// Disk id → GPT disk GUID for every disk of `status`'s layout whose GPT
/// can be read; a disk that cannot be read (gone, not ours any more) is
/// left out and logged. Blocking: reads each disk's first sectors.
pub fn read_disk_guids(status: &HostStatus) -> BTreeMap<String, String> {
    let disks: BTreeMap<&str, &str> = status
        .layout
        .values()
        .map(|partition| (partition.disk_id.as_str(), partition.device.as_str()))
        .collect();
    disks
        .into_iter()
        .filter_map(|(id, device)| match disk_guid(device) {
            Ok(guid) => Some((id.to_owned(), guid)),
            Err(error) => {
                tracing::debug!(disk = %id, %device, %error, "no disk GUID for the Host Status");
                None
            }
        })
        .collect()
}

/// The GPT disk GUID of `device` (512- or 4096-byte sectors), or why not.
pub fn disk_guid(device: &str) -> Result<String, String> {
    read_primary_gpt(device).map(|gpt| gpt.disk_guid.to_string())
}

/// The primary GPT of `device` (512- or 4096-byte sectors), or why not.
/// Blocking: reads the disk's first sectors.
pub fn read_primary_gpt(device: &str) -> Result<Gpt, String> {
    let mut head = Vec::new();
    std::fs::File::open(device)
        .and_then(|file| file.take(GPT_PROBE_BYTES).read_to_end(&mut head))
        .map_err(|error| error.to_string())?;
    [512, 4096]
        .into_iter()
        .find_map(|lba_size| Gpt::parse_primary(&head, lba_size).ok())
        .ok_or_else(|| "no valid GPT".to_owned())
}
