//! The `servicing` test binary of the end-to-end tests: one module per former
//! test file.
//!
//! Servicing through a real daemon onto disk-image files: install, A/B
//! update, commit and rollback, the new root, OS configuration, boot
//! control, StreamDisk and its image sources (file, http, https, oci),
//! hostile COSIs, documents validation refuses, crash consistency and
//! faults, and the secrets servicing must never let out.

mod adaptive_updates;
mod bad_input_cosi;
mod boot_grub;
mod clean_install_safety;
mod crash_consistency;
mod https_image_source;
mod interrupted_operation;
mod oci_image_source;
mod resumable_downloads;
mod script_secrets;
mod secrets_in_parse_errors;
mod secrets_redaction;
mod servicing_additions;
mod servicing_adopted_partitions;
mod servicing_agent_disabled;
mod servicing_cycle;
mod servicing_datastore_handoff;
mod servicing_extensions;
mod servicing_failures;
mod servicing_faults;
mod servicing_hostile_links;
mod servicing_image_preflight;
mod servicing_journal_handoff;
mod servicing_leftovers;
mod servicing_new_root;
mod servicing_os_config;
mod servicing_reboot;
mod servicing_stream_drops;
mod servicing_stream_shutdown;
mod servicing_verity;
mod stream_disk;
mod stream_disk_metadata;
mod stream_disk_target_changes;
mod torn_state;
mod uefi_fallback;
mod upstream_samples;
mod upstream_takeover;
mod validation_document_rules;
mod validation_property;
