//! The image against the devices: writing a COSI file's filesystem images
//! into the devices they map to, with download / write / verify progress
//! (`write`), and what is checked before a byte is written: the image
//! against the configuration before any disk is touched (`preflight`), the
//! image's dm-verity hash trees (`verity`) and its verity filesystems'
//! block sizes (`verity_blocks`); `cosi_error` maps the COSI reader's errors to ours.
//! An A/B update of an indexed image is written adaptively (`adaptive`,
//! `adaptive_region`: chunks reused from the local volumes, found where
//! they moved through their anchors by `adaptive_scan`, the rest fetched
//! by range; `targets`, where both write); `esp_copy` is the image's ESP
//! copied out for its boot files.
//! Beneath the flows, above the runner and the parts.

pub mod adaptive;
pub mod adaptive_region;
mod adaptive_scan;
#[cfg(test)]
mod adaptive_tests;
pub mod cosi_error;
pub mod esp_copy;
pub mod preflight;
pub mod targets;
pub mod verity;
pub mod verity_blocks;
#[cfg(test)]
mod verity_tests;
pub mod write;
