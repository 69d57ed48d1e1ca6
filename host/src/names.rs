//! The one place where the host model's enums are spelled: their kebab-case
//! names (Host Status YAML, the datastore, `get last-error`, the CLI's
//! output) and their protobuf counterparts. The daemon and the CLI use
//! these instead of writing the names again.
//!
//! Host enum -> proto is total (`From`); proto -> host is `TryFrom`, failing
//! with [`NoCounterpart`] for UNSPECIFIED and for values the host model does
//! not have (the runtime-update states).

use trident_proto::v1::{ServicingKind, TridentErrorKind};
use trident_proto::v1preview::{AbVolumeState, ServicingState as ProtoState};

use crate::error::Category;
use crate::kebab_name::{KebabName, NoCounterpart};
use crate::status::{AbVolume, ServicingState};

/// Declares, for a host enum, each variant's kebab-case name and its
/// protobuf counterpart: one table, three impls (KebabName, From, TryFrom).
macro_rules! host_enum {
    ($host:ident <=> $proto:ident { $($variant:ident = $name:literal <=> $wire:ident,)* }) => {
        impl KebabName for $host {
            fn kebab_name(self) -> &'static str {
                match self { $(Self::$variant => $name,)* }
            }
        }

        impl From<$host> for $proto {
            fn from(value: $host) -> Self {
                match value { $($host::$variant => $proto::$wire,)* }
            }
        }

        impl TryFrom<$proto> for $host {
            type Error = NoCounterpart;
            fn try_from(value: $proto) -> Result<Self, NoCounterpart> {
                match value {
                    $($proto::$wire => Ok(Self::$variant),)*
                    #[allow(unreachable_patterns)]
                    other => Err(NoCounterpart(other.as_str_name())),
                }
            }
        }
    };
}

host_enum! {
    Category <=> TridentErrorKind {
        ExecutionEnvironmentMisconfiguration = "execution-environment-misconfiguration"
            <=> ExecutionEnvironmentMisconfigurationError,
        HealthChecks = "health-checks" <=> HealthChecksError,
        Initialization = "initialization" <=> InitializationError,
        Internal = "internal" <=> InternalError,
        InvalidInput = "invalid-input" <=> InvalidInputError,
        Servicing = "servicing" <=> ServicingError,
        UnsupportedConfiguration = "unsupported-configuration" <=> UnsupportedConfigurationError,
    }
}

host_enum! {
    ServicingState <=> ProtoState {
        NotProvisioned = "not-provisioned" <=> NotProvisioned,
        CleanInstallStaged = "clean-install-staged" <=> InstallStaged,
        CleanInstallFinalized = "clean-install-finalized" <=> InstallFinalized,
        AbUpdateStaged = "ab-update-staged" <=> UpdateAbStaged,
        AbUpdateFinalized = "ab-update-finalized" <=> UpdateAbFinalized,
        AbUpdateHealthCheckFailed = "ab-update-health-check-failed" <=> UpdateAbHealthCheckFailed,
        ManualRollbackAbStaged = "manual-rollback-ab-staged" <=> ManualRollbackAbStaged,
        ManualRollbackAbFinalized = "manual-rollback-ab-finalized" <=> ManualRollbackAbFinalized,
        RuntimeUpdateStaged = "runtime-update-staged" <=> UpdateRuntimeStaged,
        ManualRollbackRuntimeStaged = "manual-rollback-runtime-staged" <=> ManualRollbackRuntimeStaged,
        Provisioned = "provisioned" <=> Provisioned,
    }
}

host_enum! {
    AbVolume <=> AbVolumeState {
        VolumeA = "volume-a" <=> VolumeA,
        VolumeB = "volume-b" <=> VolumeB,
    }
}

/// The host model has no servicing-kind enum of its own: the daemon works
/// with the protobuf one, and this is its name in the datastore, on the
/// bus and in the CLI's output.
impl KebabName for ServicingKind {
    fn kebab_name(self) -> &'static str {
        match self {
            Self::Unspecified => "unspecified",
            Self::NoneRequired => "none-required",
            Self::RuntimeUpdate => "runtime-update",
            Self::AbUpdate => "ab-update",
            Self::CleanInstall => "clean-install",
            Self::ManualRollbackAb => "manual-rollback-ab",
            Self::ManualRollbackRuntime => "manual-rollback-runtime",
        }
    }
}

/// A category as received: its host name, or "unspecified".
impl KebabName for TridentErrorKind {
    fn kebab_name(self) -> &'static str {
        Category::try_from(self).map_or("unspecified", Category::kebab_name)
    }
}

/// A servicing state as received: the host's name, or "unspecified".
impl KebabName for ProtoState {
    fn kebab_name(self) -> &'static str {
        ServicingState::try_from(self).map_or("unspecified", ServicingState::kebab_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_kebab(name: &str) -> bool {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    }

    #[test]
    fn states_map_to_proto_and_back_under_their_serde_names() {
        for state in [
            ServicingState::NotProvisioned,
            ServicingState::CleanInstallStaged,
            ServicingState::CleanInstallFinalized,
            ServicingState::AbUpdateStaged,
            ServicingState::AbUpdateFinalized,
            ServicingState::AbUpdateHealthCheckFailed,
            ServicingState::ManualRollbackAbStaged,
            ServicingState::ManualRollbackAbFinalized,
            ServicingState::RuntimeUpdateStaged,
            ServicingState::ManualRollbackRuntimeStaged,
            ServicingState::Provisioned,
        ] {
            assert_eq!(ServicingState::try_from(ProtoState::from(state)), Ok(state));
            // serde's rename_all spells the YAML; the table must agree with it.
            let yaml = serde_json::to_value(state).unwrap();
            assert_eq!(yaml, state.kebab_name());
            assert_eq!(ProtoState::from(state).kebab_name(), state.kebab_name());
        }
    }

    #[test]
    fn categories_map_to_proto_and_back_under_their_serde_names() {
        for kind in [
            TridentErrorKind::ExecutionEnvironmentMisconfigurationError,
            TridentErrorKind::HealthChecksError,
            TridentErrorKind::InitializationError,
            TridentErrorKind::InternalError,
            TridentErrorKind::InvalidInputError,
            TridentErrorKind::ServicingError,
            TridentErrorKind::UnsupportedConfigurationError,
        ] {
            let category = Category::try_from(kind).unwrap();
            assert_eq!(TridentErrorKind::from(category), kind);
            assert_eq!(
                serde_json::to_value(category).unwrap(),
                category.kebab_name()
            );
        }
    }

    #[test]
    fn volumes_map_to_proto_and_back_under_their_serde_names() {
        for volume in [AbVolume::VolumeA, AbVolume::VolumeB] {
            assert_eq!(AbVolume::try_from(AbVolumeState::from(volume)), Ok(volume));
            assert_eq!(serde_json::to_value(volume).unwrap(), volume.kebab_name());
        }
        assert_eq!(
            AbVolume::try_from(AbVolumeState::NoVolume),
            Err(NoCounterpart("NO_VOLUME"))
        );
    }

    #[test]
    fn unspecified_has_no_counterpart() {
        assert_eq!(
            Category::try_from(TridentErrorKind::Unspecified),
            Err(NoCounterpart("TRIDENT_ERROR_KIND_UNSPECIFIED"))
        );
        assert!(ServicingState::try_from(ProtoState::Unspecified).is_err());
        assert_eq!(
            ServicingState::try_from(ProtoState::UpdateRuntimeStaged),
            Ok(ServicingState::RuntimeUpdateStaged)
        );
        assert_eq!(TridentErrorKind::Unspecified.kebab_name(), "unspecified");
        assert_eq!(
            ProtoState::UpdateRuntimeStaged.kebab_name(),
            "runtime-update-staged"
        );
    }

    #[test]
    fn servicing_kinds_have_kebab_names() {
        for value in 0..=6 {
            let kind = ServicingKind::try_from(value).unwrap();
            assert!(is_kebab(kind.kebab_name()), "{kind:?}");
        }
        assert_eq!(ServicingKind::AbUpdate.kebab_name(), "ab-update");
    }
}
