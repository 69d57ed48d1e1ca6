//! `os.uefiFallback`: what boots when the firmware has no boot variable
//! left (NVRAM reset, the disk moved to another machine). The firmware then
//! loads the removable-media path `EFI/BOOT/BOOTX64.EFI`, and systemd-boot,
//! without its EFI variables, boots `loader.conf`'s default. So in this
//! backend "the fallback boots volume X" means: `EFI/BOOT/BOOTX64.EFI` is
//! the systemd-boot volume X shipped (kept per volume on the ESP as
//! `trident/<volume>/systemd-bootx64.efi`) and `loader.conf` defaults to
//! X's entry. With the EFI variables intact, `LoaderEntryOneShot` (trial)
//! and `LoaderEntryDefault` (committed) decide, as before.
//!
//! Upstream's three modes (microsoft/trident, docs/Explanation/UEFI-Fallback.md):
//!
//! | moment | conservative | optimistic | disabled |
//! |---|---|---|---|
//! | install finalize | volume A | volume A | loader untouched, loader.conf A |
//! | A/B finalize | unchanged (servicing OS) | target | unchanged |
//! | commit | target | unchanged (already target) | loader untouched, loader.conf target |
//!
//! A manual rollback's finalize moves the fallback to the rollback target
//! in conservative and optimistic (upstream's `ManualRollbackAbStaged`). A
//! failed commit points everything back at the old volume (except the
//! loader file in `disabled`).

use trident_host::config::UefiFallbackMode;
use trident_host::status::AbVolume;

/// The UEFI removable-media (fallback) loader path on the ESP.
pub const FALLBACK_LOADER: &str = "EFI/BOOT/BOOTX64.EFI";

/// The systemd-boot binary `volume` shipped, on the ESP.
pub fn volume_loader(volume: AbVolume) -> String {
    format!("trident/{volume}/systemd-bootx64.efi")
}

/// The boot-control moments at which the fallback may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// Install finalize: volume A is the only OS.
    InstallFinalize,
    /// A/B update (or manual rollback) finalize: `target` gets one trial
    /// boot, `active` stays the committed volume.
    TrialFinalize { active: AbVolume, target: AbVolume },
    /// Manual rollback finalize: as upstream, the fallback goes to the
    /// rollback `target` in both conservative and optimistic.
    RollbackFinalize { active: AbVolume, target: AbVolume },
    /// Commit: `volume` booted and is healthy; it becomes the default.
    Commit { volume: AbVolume },
    /// A failed commit: back to `volume`.
    PointBack { volume: AbVolume },
}

/// What changes at one moment (`None`: left as it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FallbackPlan {
    /// Whose systemd-boot becomes `EFI/BOOT/BOOTX64.EFI`.
    pub loader: Option<AbVolume>,
    /// Whose entry `loader.conf` defaults to.
    pub loader_conf: Option<AbVolume>,
    /// `LoaderEntryDefault`: `Some(Some(v))` sets it to `v`, `Some(None)`
    /// clears it. Set while `loader.conf` already names a volume that is
    /// not committed (optimistic), so a failed trial boot with the
    /// variables intact still comes back to the committed one.
    pub default_var: Option<Option<AbVolume>>,
}

/// The plan of `mode` at `moment`.
pub fn plan(mode: UefiFallbackMode, moment: Moment) -> FallbackPlan {
    use UefiFallbackMode::{Conservative, Disabled, Optimistic};
    let loader_unless_disabled = |v: AbVolume| (mode != Disabled).then_some(v);
    match moment {
        Moment::InstallFinalize => FallbackPlan {
            loader: loader_unless_disabled(AbVolume::VolumeA),
            loader_conf: Some(AbVolume::VolumeA),
            default_var: Some(None),
        },
        Moment::RollbackFinalize { active, target } if mode != Disabled => FallbackPlan {
            loader: Some(target),
            loader_conf: Some(target),
            default_var: Some(Some(active)),
        },
        Moment::RollbackFinalize { .. } => FallbackPlan {
            loader: None,
            loader_conf: None,
            default_var: None,
        },
        Moment::TrialFinalize { active, target } => match mode {
            Optimistic => FallbackPlan {
                loader: Some(target),
                loader_conf: Some(target),
                default_var: Some(Some(active)),
            },
            Conservative | Disabled => FallbackPlan {
                loader: None,
                loader_conf: None,
                default_var: None,
            },
        },
        Moment::Commit { volume } => FallbackPlan {
            loader: (mode == Conservative).then_some(volume),
            loader_conf: Some(volume),
            default_var: Some(None),
        },
        Moment::PointBack { volume } => FallbackPlan {
            loader: loader_unless_disabled(volume),
            loader_conf: Some(volume),
            default_var: Some(None),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AbVolume::{VolumeA as A, VolumeB as B};
    use UefiFallbackMode::{Conservative, Disabled, Optimistic};

    const TRIAL: Moment = Moment::TrialFinalize {
        active: A,
        target: B,
    };

    #[test]
    fn conservative_moves_the_fallback_at_commit() {
        assert_eq!(plan(Conservative, Moment::InstallFinalize).loader, Some(A));
        assert_eq!(
            plan(Conservative, TRIAL),
            FallbackPlan {
                loader: None,
                loader_conf: None,
                default_var: None
            }
        );
        let commit = plan(Conservative, Moment::Commit { volume: B });
        assert_eq!((commit.loader, commit.loader_conf), (Some(B), Some(B)));
    }

    #[test]
    fn optimistic_moves_the_fallback_at_finalize_and_keeps_the_old_default_in_nvram() {
        assert_eq!(
            plan(Optimistic, TRIAL),
            FallbackPlan {
                loader: Some(B),
                loader_conf: Some(B),
                default_var: Some(Some(A))
            }
        );
        let commit = plan(Optimistic, Moment::Commit { volume: B });
        assert_eq!(commit.loader, None);
        assert_eq!(commit.default_var, Some(None));
    }

    #[test]
    fn disabled_never_writes_the_fallback_loader() {
        for moment in [
            Moment::InstallFinalize,
            TRIAL,
            Moment::Commit { volume: B },
            Moment::PointBack { volume: A },
        ] {
            assert_eq!(plan(Disabled, moment).loader, None, "{moment:?}");
        }
    }

    #[test]
    fn a_manual_rollback_moves_the_fallback_at_finalize_unless_disabled() {
        let rollback = Moment::RollbackFinalize {
            active: B,
            target: A,
        };
        for mode in [Conservative, Optimistic] {
            assert_eq!(
                plan(mode, rollback),
                FallbackPlan {
                    loader: Some(A),
                    loader_conf: Some(A),
                    default_var: Some(Some(B))
                },
                "{mode:?}"
            );
        }
        assert_eq!(plan(Disabled, rollback).loader, None);
    }

    #[test]
    fn a_failed_commit_points_everything_back() {
        let back = plan(Optimistic, Moment::PointBack { volume: A });
        assert_eq!((back.loader, back.loader_conf), (Some(A), Some(A)));
        assert_eq!(back.default_var, Some(None));
    }
}
