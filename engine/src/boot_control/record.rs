//! The record backend: boot control by the boot record file, for
//! disk-image targets (see `crate::boot_record`).

use std::path::Path;

use trident_host::TridentError;
use trident_host::status::{AbVolume, HostStatus};

use super::BootControl;
use super::image_boot::ImageBoot;
use crate::boot_record::BootRecordFile;
use crate::new_root::volume::VolumeRoot;

#[derive(Debug)]
pub struct RecordBootControl {
    pub file: BootRecordFile,
}

impl RecordBootControl {
    pub fn new(state_dir: &Path) -> Self {
        Self {
            file: BootRecordFile::new(state_dir),
        }
    }
}

impl BootControl for RecordBootControl {
    fn prepare_volume(
        &self,
        _root: &VolumeRoot<'_>,
        _install: bool,
        _image: &ImageBoot,
    ) -> Result<Vec<String>, TridentError> {
        // Nothing boots from a disk-image file: no boot files needed.
        Ok(Vec::new())
    }

    fn set_next_boot(
        &self,
        _status: &HostStatus,
        volume: AbVolume,
        operation_id: &str,
    ) -> Result<(), TridentError> {
        self.file.set_next_boot(volume, operation_id)
    }

    fn point_next_boot(
        &self,
        _status: &HostStatus,
        volume: AbVolume,
        operation_id: &str,
    ) -> Result<(), TridentError> {
        self.file.point_next_boot(volume, operation_id)
    }

    fn booted(&self, _status: &HostStatus) -> Result<Option<AbVolume>, TridentError> {
        self.file.complete_pending_reboot()
    }

    fn commit(&self, _status: &HostStatus, _volume: AbVolume) -> Result<(), TridentError> {
        // nextBoot already names the committed volume.
        Ok(())
    }

    fn on_start(&self) -> Result<(), TridentError> {
        self.file.complete_pending_reboot().map(|_| ())
    }
}
