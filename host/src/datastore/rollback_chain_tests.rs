//! Upstream's own scenarios (`manual_rollback/utils.rs` tests, v0.27.0),
//! checked at every provisioned row of each history: the chain's length
//! and the kind of its first rollback, as upstream asserts them, and here
//! also which row each rollback restores (its `installIndex` is set to the
//! row's position).

use super::*;

const A: Option<AbVolume> = Some(AbVolume::VolumeA);
const B: Option<AbVolume> = Some(AbVolume::VolumeB);
const NONE: &str = "";
const OLD: &str = "0.19.0";
const MIN: &str = "0.21.0";
const NEW: &str = "0.27.0";
use ServicingState::{
    AbUpdateFinalized as AB_FINAL, AbUpdateHealthCheckFailed as AB_HC_FAIL,
    AbUpdateStaged as AB_STAGE, CleanInstallFinalized as CI_FINAL,
    ManualRollbackAbFinalized as MR_AB_FINAL, ManualRollbackAbStaged as MR_AB_STAGE,
    ManualRollbackRuntimeStaged as MR_RU_STAGE, Provisioned as PROV,
    RuntimeUpdateStaged as RU_STAGE,
};

/// One row: volume, state, version, whether it has a last error, and for
/// a provisioned row the rows its chain restores (`None`: not checked).
type Step = (
    Option<AbVolume>,
    ServicingState,
    &'static str,
    bool,
    Option<&'static [u32]>,
);

fn s(volume: Option<AbVolume>, state: ServicingState, version: &'static str) -> Step {
    (volume, state, version, false, None)
}

fn p(volume: Option<AbVolume>, version: &'static str, expect: &'static [u32]) -> Step {
    (volume, PROV, version, false, Some(expect))
}

fn rows(steps: &[Step]) -> Vec<Option<ChainRow>> {
    steps
        .iter()
        .enumerate()
        .map(|(i, (volume, state, version, error, _))| {
            Some(ChainRow {
                servicing_state: *state,
                trident_version: (*version).to_owned(),
                has_last_error: *error,
                spec: None,
                ab_active_volume: *volume,
                install_index: u32::try_from(i).unwrap(),
            })
        })
        .rev()
        .collect()
}

/// At every row: a non-provisioned newest row has no chain; a provisioned
/// one restores exactly the rows it names, the first an A/B rollback when
/// it changes the volume.
fn check(steps: &[Step]) {
    for end in 1..=steps.len() {
        let history = rows(&steps[..end]);
        let chain = rollback_chain(&history).unwrap();
        let (volume, state, _, _, expect) = steps[end - 1];
        if state != PROV {
            assert!(chain.is_empty(), "row {}: {chain:?}", end - 1);
            continue;
        }
        let Some(expect) = expect else { continue };
        let restored: Vec<u32> = chain.iter().map(|item| item.install_index).collect();
        assert_eq!(restored, expect, "row {}", end - 1);
        if let Some(first) = chain.first() {
            let restores = &steps[first.install_index as usize];
            assert_eq!(first.kind == RollbackKind::Ab, restores.0 != volume);
        }
    }
}

#[test]
fn updates_then_a_manual_ab_rollback() {
    check(&[
        s(None, CI_FINAL, MIN),
        s(None, CI_FINAL, MIN),
        p(A, MIN, &[]),
        s(A, RU_STAGE, MIN),
        p(A, MIN, &[2]),
        s(A, RU_STAGE, MIN),
        p(A, MIN, &[4, 2]),
        s(A, AB_STAGE, MIN),
        s(A, AB_FINAL, MIN),
        p(B, MIN, &[6, 4, 2]),
        s(B, AB_STAGE, MIN),
        s(B, AB_FINAL, MIN),
        p(A, MIN, &[9]),
        s(A, MR_AB_STAGE, MIN),
        s(A, MR_AB_FINAL, MIN),
        p(B, MIN, &[]),
    ]);
}

#[test]
fn an_ab_rollback_skips_the_runtime_updates_after_the_update() {
    check(&[
        s(None, CI_FINAL, MIN),
        p(A, MIN, &[]),
        s(A, AB_STAGE, MIN),
        s(A, AB_FINAL, MIN),
        p(B, MIN, &[1]),
        s(B, RU_STAGE, MIN),
        p(B, MIN, &[4, 1]),
        s(B, RU_STAGE, MIN),
        p(B, MIN, &[6, 4, 1]),
        s(B, MR_AB_STAGE, MIN),
        s(B, MR_AB_FINAL, MIN),
        p(A, MIN, &[]),
    ]);
}

#[test]
fn a_runtime_rollback_in_progress_has_no_chain() {
    check(&[
        s(None, CI_FINAL, MIN),
        p(A, MIN, &[]),
        s(A, RU_STAGE, MIN),
        p(A, MIN, &[1]),
        s(A, MR_RU_STAGE, MIN),
        p(A, MIN, &[]),
        s(A, RU_STAGE, MIN),
        p(A, MIN, &[5]),
    ]);
}

#[test]
fn offline_initialize_then_an_ab_update() {
    check(&[
        p(A, MIN, &[]),
        p(A, MIN, &[]),
        s(A, AB_STAGE, MIN),
        s(A, AB_FINAL, MIN),
        p(B, MIN, &[1]),
    ]);
}

#[test]
fn rows_of_old_or_unversioned_agents_end_the_chain() {
    for old in [OLD, NONE, "not-semver", "0.21", "01.21.0"] {
        check(&[
            s(None, CI_FINAL, old),
            p(A, old, &[]),
            s(A, AB_STAGE, old),
            s(A, AB_FINAL, old),
            p(B, old, &[]),
        ]);
    }
    check(&[
        s(None, CI_FINAL, NONE),
        p(A, NONE, &[]),
        s(A, RU_STAGE, NONE),
        p(A, OLD, &[]),
        s(A, RU_STAGE, OLD),
        p(A, MIN, &[]),
        s(A, RU_STAGE, MIN),
        p(A, MIN, &[5]),
        s(A, RU_STAGE, NEW),
        p(A, NEW, &[7, 5]),
    ]);
}

#[test]
fn a_health_check_failure_ends_the_chain_and_an_error_stops_it() {
    check(&[
        s(A, CI_FINAL, MIN),
        p(A, MIN, &[]),
        s(A, AB_STAGE, MIN),
        s(A, AB_FINAL, MIN),
        p(B, MIN, &[1]),
        s(B, AB_STAGE, MIN),
        s(B, AB_FINAL, MIN),
        (B, AB_HC_FAIL, MIN, true, None),
        s(B, AB_HC_FAIL, MIN),
        p(B, MIN, &[]),
        (B, PROV, MIN, true, Some(&[])),
        p(B, MIN, &[]),
        s(B, AB_STAGE, MIN),
        s(B, AB_FINAL, MIN),
        p(A, MIN, &[11]),
    ]);
    // A staged row with a last error cannot be rolled back.
    check(&[
        p(A, MIN, &[]),
        (A, AB_STAGE, MIN, true, None),
        s(A, AB_FINAL, MIN),
        p(B, MIN, &[]),
    ]);
}

#[test]
fn an_unreadable_row_ends_the_chain_and_an_unreadable_newest_row_is_an_error() {
    let mut history = rows(&[
        p(A, MIN, &[]),
        s(A, AB_STAGE, MIN),
        s(A, AB_FINAL, MIN),
        p(B, MIN, &[]),
    ]);
    history[3] = None;
    assert_eq!(rollback_chain(&history).unwrap().len(), 0);
    history[0] = None;
    let error = rollback_chain(&history).unwrap_err();
    assert_eq!(error.subkind(), Subkind::InvalidRollbackExpectation);
}

#[test]
fn versions_compare_on_major_minor_patch_only() {
    for ok in ["0.21.0", "0.21.0-1.azl3", "0.27.0+tridentd.0.1.0", "1.0.0"] {
        assert!(version_allows_rollback(ok), "{ok}");
    }
    for not in [
        "", "0.20.9", "0.21", "0.21.0.1", "v0.21.0", "0.21.0-", "0.021.0",
    ] {
        assert!(!version_allows_rollback(not), "{not}");
    }
}
