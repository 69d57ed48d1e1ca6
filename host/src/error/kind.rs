//! Error categories (the seven upstream kinds) and subkinds (kebab-case
//! variant names, each belonging to exactly one category).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::kebab_name::KebabName;

/// The upstream error category. Decides the CLI exit code and the gRPC
/// status code of an error returned outside a servicing stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    ExecutionEnvironmentMisconfiguration,
    HealthChecks,
    Initialization,
    Internal,
    InvalidInput,
    Servicing,
    UnsupportedConfiguration,
}

impl Category {
    /// gRPC status code for an error returned outside a servicing stream
    /// (wire doc, "Error model facts").
    pub fn grpc_code(self) -> tonic::Code {
        match self {
            Self::InvalidInput => tonic::Code::InvalidArgument,
            Self::Internal => tonic::Code::Internal,
            Self::ExecutionEnvironmentMisconfiguration
            | Self::Initialization
            | Self::UnsupportedConfiguration => tonic::Code::FailedPrecondition,
            Self::Servicing | Self::HealthChecks => tonic::Code::Unknown,
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kebab_name())
    }
}

/// Declares [`Subkind`]: variant, category, kebab-case name, default message.
macro_rules! subkinds {
    ($($variant:ident => $category:ident, $name:literal, $message:literal;)*) => {
        /// What went wrong, precisely. Each subkind belongs to one category.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Subkind {
            $($variant,)*
        }

        impl Subkind {
            pub fn category(self) -> Category {
                match self { $(Self::$variant => Category::$category,)* }
            }

            /// Message used when the error is raised without its own.
            pub fn default_message(self) -> &'static str {
                match self { $(Self::$variant => $message,)* }
            }

            /// Every subkind, for tests and documentation.
            pub const ALL: &'static [Subkind] = &[$(Self::$variant,)*];
        }

        /// The `error` key of `get last-error`, the `subkind` on the wire.
        impl KebabName for Subkind {
            fn kebab_name(self) -> &'static str {
                match self { $(Self::$variant => $name,)* }
            }
        }
    };
}

subkinds! {
    // execution-environment-misconfiguration
    DaemonNotRoot => ExecutionEnvironmentMisconfiguration, "daemon-not-root", "The daemon must run as root";
    TargetDiskMissing => ExecutionEnvironmentMisconfiguration, "target-disk-missing", "Target disk does not exist";
    TargetDiskTooSmall => ExecutionEnvironmentMisconfiguration, "target-disk-too-small", "Target disk is too small for the partition layout";
    // health-checks
    HealthCheckFailed => HealthChecks, "health-check-failed", "A health check failed";
    HealthCheckTimedOut => HealthChecks, "health-check-timed-out", "A health check timed out";
    BootedWrongVolume => HealthChecks, "booted-wrong-volume", "The host did not boot from the expected volume";
    // initialization
    OpenDatastore => Initialization, "open-datastore", "Failed to open the datastore";
    DatastoreMigration => Initialization, "datastore-migration", "Failed to migrate the datastore schema";
    LoadHostStatus => Initialization, "load-host-status", "Failed to load the Host Status";
    // initialization
    CleanInstallSafetyCheck => Initialization, "clean-install-safety-check", "Refusing a clean install onto the disk of the running OS";
    // internal
    DatastoreQuery => Internal, "datastore-query", "Datastore query failed";
    SerializeHostStatus => Internal, "serialize-host-status", "Failed to serialize the Host Status";
    Io => Internal, "io", "I/O error";
    TaskFailed => Internal, "task-failed", "A servicing task failed unexpectedly";
    Interrupted => Internal, "interrupted", "The operation was interrupted (daemon stopped before it completed)";
    // invalid-input
    ParseHostConfiguration => InvalidInput, "parse-host-configuration", "Failed to parse the Host Configuration";
    InvalidHostConfiguration => InvalidInput, "invalid-host-configuration", "The Host Configuration is invalid";
    UnknownKey => InvalidInput, "unknown-key", "Unknown key in the Host Configuration";
    InvalidImageUrl => InvalidInput, "invalid-image-url", "Invalid image URL";
    InvalidImageHash => InvalidInput, "invalid-image-hash", "Invalid image hash";
    ImageHashMismatch => InvalidInput, "image-hash-mismatch", "Image hash does not match";
    InvalidImage => InvalidInput, "invalid-image", "The COSI image is invalid";
    InvalidImageMetadata => InvalidInput, "invalid-image-metadata", "The COSI image's metadata.json is invalid";
    ImageDoesNotMatchConfiguration => InvalidInput, "image-does-not-match-configuration", "The image does not match the Host Configuration";
    InvalidExtension => InvalidInput, "invalid-extension", "An extension image (os.sysexts, os.confexts) is not one systemd can merge";
    ExtensionHashMismatch => InvalidInput, "extension-hash-mismatch", "An extension image does not have the configured SHA-384";
    UnsupportedBootloader => UnsupportedConfiguration, "unsupported-bootloader", "The image's bootloader metadata names a boot setup this daemon does not do";
    ImageNotInRegistry => InvalidInput, "image-not-in-registry", "The OCI registry has no such image (repository, tag or digest)";
    InvalidRequest => InvalidInput, "invalid-request", "Invalid request";
    InvalidServicingState => InvalidInput, "invalid-servicing-state", "The host is not in a state that allows this operation";
    InvalidRollbackState => InvalidInput, "invalid-rollback-state", "The host is not in a state that allows a rollback";
    InvalidRollbackExpectation => InvalidInput, "invalid-rollback-expectation", "The rollback available is not of the kind requested";
    // servicing
    DownloadImage => Servicing, "download-image", "Failed to download the image";
    ApplyOsConfig => Servicing, "apply-os-config", "Failed to apply the OS configuration inside the new root";
    CreatePartitionTable => Servicing, "create-partition-table", "Failed to create the partition table";
    AdoptPartition => Servicing, "adopt-partition", "Failed to adopt an existing partition";
    DownloadExtension => Servicing, "download-extension", "Failed to download an extension image";
    ApplyRuntimeUpdate => Servicing, "apply-runtime-update", "Failed to apply the runtime update to the running system";
    WriteImage => Servicing, "write-image", "Failed to write an image to its partition";
    TargetChanged => Servicing, "target-changed", "The target disk changed while it was written (shrank, was replaced or went away)";
    WriteVerificationFailed => Servicing, "write-verification-failed", "What was read back from the target differs from what was written";
    ScriptFailed => Servicing, "script-failed", "A servicing script failed";
    WriteBootRecord => Servicing, "write-boot-record", "Failed to write the boot record";
    MountNewRoot => Servicing, "mount-new-root", "Failed to mount or unmount the new root";
    ConfigureNewRoot => Servicing, "configure-new-root", "Failed to configure the new root";
    BootControl => Servicing, "boot-control", "Failed to change the boot configuration";
    EfiVariablesUnavailable => ExecutionEnvironmentMisconfiguration, "efi-variables-unavailable", "The UEFI variables (efivarfs) are missing or read-only";
    Reboot => Servicing, "reboot", "Failed to reboot";
    // Software RAID (upstream's names).
    CleanupRaid => Servicing, "cleanup-raid", "Failed to clean up pre-existing RAID arrays";
    CreateRaid => Servicing, "create-raid", "Failed to create software RAID";
    CreateMdadmConf => Servicing, "create-mdadm-conf", "Failed to create mdadm.conf file after RAID creation";
    OpenRaid => Servicing, "open-raid", "Failed to assemble a recorded RAID array";
    RebuildRaid => Servicing, "rebuild-raid", "Failed to rebuild RAID arrays";
    ValidateRebuildRaid => Servicing, "validate-rebuild-raid", "Trident rebuild-raid validation failed";
    // Encryption (upstream's names where upstream has them).
    CleanupEncryption => Servicing, "cleanup-encryption", "Failed to clean up pre-existing LUKS2-encrypted volumes";
    EncryptBlockDevice => Servicing, "encrypt-block-device", "Failed to encrypt and open a block device";
    OpenEncryptedVolume => Servicing, "open-encrypted-volume", "Failed to open a recorded encrypted volume";
    TpmUnsealFailed => Servicing, "tpm-unseal-failed", "The TPM 2.0 did not unseal an encrypted volume's key: the PCRs it is sealed to changed";
    CreateCrypttab => Servicing, "create-crypttab", "Failed to create the crypttab file";
    TpmUnavailable => ExecutionEnvironmentMisconfiguration, "tpm-unavailable", "Encryption requires access to a TPM 2.0 device but one is not accessible";
    InvalidRecoveryKeyFile => InvalidInput, "invalid-recovery-key-file", "The encryption recovery key file (recoveryKeyUrl) is missing or unsafe";
    // unsupported-configuration
    UnsupportedFeature => UnsupportedConfiguration, "unsupported-feature", "The Host Configuration uses a feature this daemon does not support";
    RegistryAccessDenied => ExecutionEnvironmentMisconfiguration, "registry-access-denied", "The OCI registry refused access: credentials missing or refused (see --registry-auth-file)";
    // Raised by the CLI for failures outside a servicing stream (its -e file).
    ConnectDaemon => ExecutionEnvironmentMisconfiguration, "connect-daemon", "Cannot connect to the daemon";
    LoadHostConfiguration => InvalidInput, "load-host-configuration", "Failed to load the Host Configuration";
    DaemonBusy => Servicing, "daemon-busy", "The daemon is busy with another operation";
    Client => Servicing, "client", "The client failed";
}

impl fmt::Display for Subkind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kebab_name())
    }
}

impl std::str::FromStr for Subkind {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Self::ALL
            .iter()
            .copied()
            .find(|k| k.kebab_name() == s)
            .ok_or(())
    }
}
