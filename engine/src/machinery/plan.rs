//! The steps an operation plans: its top-level progress phases, in order,
//! derived in this one place from the operation's kind and its Host
//! Configuration, and declared to the telemetry bus up front so the
//! overall view says "step 3 of 9" (SWUpdate's "step n of m").
//!
//! Each flow declares its plan once it knows it (after the Host
//! Configuration parsed, i.e. with `validate` done) and drops a step that
//! turns out not to apply (configure and boot files when no new root could
//! be mounted),
//! which declares the new count. A step is a phase id the flow starts
//! with `Phase::start`; the ids here must match those (the e2e tests check
//! that an operation ends with every planned step done).

use trident_host::config::HostConfiguration;

use crate::block_device::raid::RAID_SYNC_PHASE;
use crate::block_device::raid::rebuild::RECOVERY_PHASE;
use crate::extensions::EXTENSIONS_STEP;
use crate::scripts::ServicingType;
use crate::step_ids::{APPLY, BOOT_FILES, CONFIGURE};

/// Whether the configuration has extension images to stage.
fn has_extensions(hc: &HostConfiguration) -> bool {
    !hc.os.sysexts.is_empty() || !hc.os.confexts.is_empty()
}

/// The planned top-level phases of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepPlan {
    steps: Vec<String>,
}

/// What an install or A/B update runs of its stage and finalize halves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halves {
    /// InstallStage / UpdateStage.
    Stage,
    /// Install / Update: stage, then finalize.
    StageAndFinalize,
}

impl StepPlan {
    fn of(steps: &[&str]) -> StepPlan {
        StepPlan {
            steps: steps.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// Install (clean install into volume A) or A/B update (into the
    /// inactive volume): validate, preServicing scripts, partition (install
    /// only), image download and region writes, the new root (mount,
    /// configure, postProvision and postConfigure scripts, boot files),
    /// finalize.
    /// Script groups count only when a script of the group is selected.
    pub fn servicing(hc: &HostConfiguration, kind: ServicingType, halves: Halves) -> StepPlan {
        let scripts = &hc.scripts;
        let group =
            |group: &str, selected: usize| (selected > 0).then(|| format!("scripts/{group}"));
        let mut steps = vec!["validate".to_owned()];
        steps.extend(group("preServicing", kind.selected(&scripts.pre_servicing)));
        if kind == ServicingType::CleanInstall {
            steps.push("partition".to_owned());
            let raid = &hc.storage.raid;
            if !raid.software.is_empty() && raid.sync_timeout.is_some() {
                steps.push(RAID_SYNC_PHASE.to_owned());
            }
        }
        steps.extend(["download", "verify"].map(str::to_owned));
        if has_extensions(hc) {
            steps.push(EXTENSIONS_STEP.to_owned());
        }
        steps.extend(["mount", CONFIGURE].map(str::to_owned));
        steps.extend(group(
            "postProvision",
            kind.selected(&scripts.post_provision),
        ));
        steps.extend(group(
            "postConfigure",
            kind.selected(&scripts.post_configure),
        ));
        steps.push(BOOT_FILES.to_owned());
        if halves == Halves::StageAndFinalize {
            steps.push("finalize".to_owned());
        }
        StepPlan { steps }
    }

    /// A runtime update (onto the running system, no reboot): validate,
    /// preServicing scripts, the extension images, apply (place them,
    /// netplan, merge again), postConfigure scripts.
    pub fn runtime(hc: &HostConfiguration) -> StepPlan {
        let kind = ServicingType::RuntimeUpdate;
        let scripts = &hc.scripts;
        let mut steps = vec!["validate".to_owned()];
        if kind.selected(&scripts.pre_servicing) > 0 {
            steps.push("scripts/preServicing".to_owned());
        }
        if has_extensions(hc) {
            steps.push(EXTENSIONS_STEP.to_owned());
        }
        steps.push(APPLY.to_owned());
        if kind.selected(&scripts.post_configure) > 0 {
            steps.push("scripts/postConfigure".to_owned());
        }
        StepPlan { steps }
    }

    /// InstallFinalize, UpdateFinalize, Rollback, RollbackFinalize: one
    /// step that points the next boot at another volume.
    pub fn finalize() -> StepPlan {
        StepPlan::of(&["finalize"])
    }

    /// Commit of a finalized servicing: the booted volume, health checks.
    pub fn commit() -> StepPlan {
        StepPlan::of(&["check-root", "health-checks"])
    }

    /// RebuildRaid: what to rebuild, the new disks' partitions, the
    /// recovery.
    pub fn rebuild_raid() -> StepPlan {
        StepPlan::of(&["validate", "partition", RECOVERY_PHASE])
    }

    /// StreamDisk: request and metadata, download and write, GPT check.
    pub fn stream_disk() -> StepPlan {
        StepPlan::of(&["validate", "download", "verify"])
    }

    /// The planned phase ids, in order.
    pub fn steps(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().map(String::as_str)
    }

    /// Declares the plan to the telemetry bus (inside the operation's span).
    pub fn declare(&self) {
        trident_telemetry::overall::plan_steps(u32::try_from(self.steps.len()).unwrap_or(u32::MAX));
    }

    /// Drops step `id`, found not to apply, and declares the new count.
    pub fn skip(&mut self, id: &str) {
        let before = self.steps.len();
        self.steps.retain(|s| s != id);
        if self.steps.len() != before {
            tracing::debug!(step = id, "planned step does not apply");
            self.declare();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hc(yaml: &str) -> HostConfiguration {
        trident_host::config::parse(yaml).expect("valid Host Configuration")
    }

    const STORAGE: &str = r#"
image: { url: "file:///img.cosi", sha384: ignored }
storage:
  disks:
  - id: os
    device: /dev/null
    partitions:
    - { id: root, type: root, size: 1G }
  filesystems:
  - { deviceId: root, mountPoint: / }
"#;

    #[test]
    fn an_install_plans_its_phases_in_order() {
        let plan = StepPlan::servicing(
            &hc(STORAGE),
            ServicingType::CleanInstall,
            Halves::StageAndFinalize,
        );
        assert_eq!(
            plan.steps().collect::<Vec<_>>(),
            [
                "validate",
                "partition",
                "download",
                "verify",
                "mount",
                "configure",
                "boot-files",
                "finalize"
            ]
        );
    }

    #[test]
    fn script_groups_are_steps_only_when_this_servicing_selects_a_script() {
        let yaml = format!(
            "{STORAGE}scripts:\n  preServicing:\n  - {{ name: a, runOn: [ab-update], content: 'true' }}\n  postConfigure:\n  - {{ name: b, runOn: [all], content: 'true' }}\n"
        );
        let config = hc(&yaml);
        let install = StepPlan::servicing(&config, ServicingType::CleanInstall, Halves::Stage);
        assert_eq!(
            install.steps().collect::<Vec<_>>(),
            [
                "validate",
                "partition",
                "download",
                "verify",
                "mount",
                "configure",
                "scripts/postConfigure",
                "boot-files"
            ]
        );
        let update =
            StepPlan::servicing(&config, ServicingType::AbUpdate, Halves::StageAndFinalize);
        assert_eq!(
            update.steps().collect::<Vec<_>>(),
            [
                "validate",
                "scripts/preServicing",
                "download",
                "verify",
                "mount",
                "configure",
                "scripts/postConfigure",
                "boot-files",
                "finalize"
            ]
        );
    }

    #[test]
    fn a_runtime_update_plans_extensions_apply_and_its_scripts() {
        let yaml = format!(
            "{STORAGE}os:\n  confexts:\n  - {{ url: 'http://x/c.raw', sha384: {} }}\n\
             scripts:\n  postConfigure:\n  - {{ name: b, runOn: [runtime-update], content: 'true' }}\n  \
             - {{ name: c, runOn: [ab-update], content: 'true' }}\n",
            "a".repeat(96)
        );
        let config = hc(&yaml);
        assert_eq!(
            StepPlan::runtime(&config).steps().collect::<Vec<_>>(),
            ["validate", "extensions", "apply", "scripts/postConfigure"]
        );
        let install = StepPlan::servicing(&config, ServicingType::CleanInstall, Halves::Stage);
        assert_eq!(
            install.steps().collect::<Vec<_>>(),
            [
                "validate",
                "partition",
                "download",
                "verify",
                "extensions",
                "mount",
                "configure",
                "boot-files"
            ]
        );
    }

    #[test]
    fn an_install_with_a_raid_sync_timeout_plans_the_wait_after_partitioning() {
        let yaml = STORAGE.replace(
            "    - { id: root, type: root, size: 1G }\n",
            "    - { id: r1, type: root, size: 1G }\n    - { id: r2, type: root, size: 1G }\n  raid:\n    software:\n    - { id: root, name: root, level: raid1, devices: [r1, r2] }\n    syncTimeout: 60\n",
        );
        let plan = StepPlan::servicing(&hc(&yaml), ServicingType::CleanInstall, Halves::Stage);
        let steps: Vec<&str> = plan.steps().collect();
        assert_eq!(
            steps[..4],
            ["validate", "partition", "raid-sync", "download"]
        );
        // Without syncTimeout the install does not wait, as upstream.
        let no_wait = yaml.replace("    syncTimeout: 60\n", "");
        let plan = StepPlan::servicing(&hc(&no_wait), ServicingType::CleanInstall, Halves::Stage);
        assert!(!plan.steps().any(|s| s == "raid-sync"));
        // An update never creates arrays.
        let plan = StepPlan::servicing(&hc(&yaml), ServicingType::AbUpdate, Halves::Stage);
        assert!(!plan.steps().any(|s| s == "raid-sync"));
    }

    #[test]
    fn a_skipped_step_leaves_the_plan() {
        let mut plan = StepPlan::servicing(&hc(STORAGE), ServicingType::AbUpdate, Halves::Stage);
        plan.skip(CONFIGURE);
        plan.skip(BOOT_FILES);
        plan.skip("not-planned");
        assert_eq!(
            plan.steps().collect::<Vec<_>>(),
            ["validate", "download", "verify", "mount"]
        );
    }
}
