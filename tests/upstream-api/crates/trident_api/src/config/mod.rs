pub(crate) mod host;
pub(crate) mod local;

pub use host::{
    error::{HostConfigurationDynamicValidationError, HostConfigurationStaticValidationError},
    health::{Check, Health, SystemdCheck},
    image::{ImageSha384, OsImage},
    os::{
        additional_files::AdditionalFile,
        extensions::Extension,
        modules::{LoadMode, Module},
        services::Services,
        users::{Password, SshMode, User},
        KernelCommandLine, ManagementOs, Os, Selinux, SelinuxMode, UefiFallbackMode,
    },
    scripts::{Script, ScriptSource, Scripts, ServicingTypeSelection},
    storage::abupdate::{AbUpdate, AbVolumePair},
    storage::{
        disks::{Disk, PartitionTableType},
        encryption::{EncryptedVolume, Encryption},
        filesystem::{FileSystem, FileSystemSource, MountOptions, MountPoint, MountPointInfo},
        filesystem_types::{AdoptedFileSystemType, FileSystemType, NewFileSystemType},
        partitions::{AdoptedPartition, Partition, PartitionSize, PartitionType},
        raid::{Raid, RaidLevel, SoftwareRaidArray},
        swap::Swap,
        verity::{VerityCorruptionOption, VerityDevice},
        Storage,
    },
    trident::Trident,
    HostConfiguration,
};

pub use local::{HostConfigurationSource, Operation, Operations};
