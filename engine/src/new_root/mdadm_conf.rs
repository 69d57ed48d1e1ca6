//! `/etc/mdadm/mdadm.conf` of the new root (upstream's path): one `ARRAY`
//! line per software RAID array the install created, so the installed OS
//! assembles them by UUID under their names (mdadm's last-resort timers,
//! monitoring, a regenerated initramfs). Written only when the host has
//! arrays; an A/B update writes it again into the volume it services.

use std::path::Path;

use trident_host::{ResultExt, Subkind, TridentError};

use super::volume::VolumeRoot;
use crate::block_device::raid::mdadm;

/// The file's text for the host's arrays, or `None` without arrays.
pub fn render(root: &VolumeRoot<'_>) -> Option<String> {
    let arrays = root.devices.raid_arrays();
    if arrays.is_empty() {
        return None;
    }
    let mut text = String::from(
        "# Written by Trident: the software RAID arrays of the Host Configuration\n\
         # (storage.raid.software), created with metadata 1.0 for any homehost.\n",
    );
    for array in arrays.values() {
        text.push_str(&mdadm::conf_line(&array.name, &array.uuid));
        text.push('\n');
    }
    Some(text)
}

/// Configure step: writes NEW_ROOT/etc/mdadm/mdadm.conf (resolved inside
/// the new root).
pub fn write_mdadm_conf(root: &VolumeRoot<'_>) -> Result<(), TridentError> {
    let Some(text) = render(root) else {
        return Ok(());
    };
    root.dir
        .write_file(Path::new("/etc/mdadm/mdadm.conf"), text.as_bytes(), 0o644)
        .structured_msg(
            Subkind::CreateMdadmConf,
            "Cannot write /etc/mdadm/mdadm.conf",
        )?;
    tracing::info!(
        arrays = root.devices.raid_arrays().len(),
        "mdadm.conf written into the new root"
    );
    Ok(())
}
