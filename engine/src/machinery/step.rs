//! The building blocks every flow's steps use: blocking work inside the
//! operation's span, script groups as phases, the validate phase, the
//! next Host Status row. Beneath the flows (install, update, commit,
//! rollback, stream disk), above the runner.

use std::sync::Arc;

use trident_host::status::HostStatus;
use trident_host::{ContextExt, ResultExt, Subkind, TridentError};

use super::TRIDENT_VERSION;
use super::runner::StepContext;
use crate::extensions::{self, Staged, StagingDir};
use crate::scripts::{self, ScriptEnv};

/// A fresh Host Status row based on `current`, stamped with our version.
pub fn next_status(current: &HostStatus) -> HostStatus {
    let mut next = current.clone();
    next.trident_version = TRIDENT_VERSION.to_owned();
    next
}

/// Runs blocking work (disk I/O) on the blocking pool inside the current
/// span, so its progress and logs belong to the operation.
pub async fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> Result<R, TridentError> + Send + 'static,
) -> Result<R, TridentError> {
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(f))
        .await
        .structured(Subkind::TaskFailed)?
}

/// Runs one script group as a progress phase (skipped when no script of
/// the group is selected for this servicing).
pub async fn script_phase(
    group: &'static str,
    scripts: &[trident_host::config::Script],
    env: &ScriptEnv,
) -> Result<(), TridentError> {
    let selected = env.servicing_type.selected(scripts);
    if selected == 0 {
        return Ok(());
    }
    let phase = trident_telemetry::progress::Phase::start(
        format!("scripts/{group}"),
        format!("Run {group} scripts"),
        trident_telemetry::progress::Unit::Items,
        Some(selected as u64),
    );
    scripts::run_scripts(group, scripts, env)
        .await
        .with_context(|| format!("Running {group} scripts"))?;
    phase.set(selected as u64);
    phase.done();
    Ok(())
}

/// Parses the request's Host Configuration as the "validate" phase, then
/// tells the engine's [`ConfigAccepted`] (the daemon's legacy bridge: a
/// configuration that still sets upstream's phonehome/logstream is bridged
/// for this operation).
///
/// [`ConfigAccepted`]: crate::config_accepted::ConfigAccepted
pub fn validate_phase(
    ctx: &StepContext,
    yaml: &str,
) -> Result<trident_host::config::ValidatedConfig, TridentError> {
    let phase = trident_telemetry::progress::Phase::start(
        "validate",
        "Validate Host Configuration",
        trident_telemetry::progress::Unit::Items,
        Some(1),
    );
    let validated = trident_host::config::parse_validated(yaml)?;
    let hc = validated.config();
    for warning in trident_host::config::warnings(hc, yaml) {
        tracing::warn!("{warning}");
    }
    trident_host::redact::known::remember(&trident_host::redact::Secrets::of_config(hc));
    phase.set(1);
    phase.done();
    let engine = ctx.engine.clone();
    ctx.engine.config_accepted.config_accepted(
        hc,
        &ctx.operation_id,
        ctx.rpc,
        Arc::new(move || engine.host_status().ok()?.redacted().ok()?.to_yaml().ok()),
    );
    Ok(validated)
}

/// Stages the extension images of `os` in the operation's staging
/// directory (those the running OS's `running` configuration placed on
/// this host are used from there): the `extensions` phase. The directory
/// goes when the returned guard is dropped.
pub async fn stage_extensions(
    ctx: &StepContext,
    os: &trident_host::config::Os,
    running: Option<&trident_host::config::Os>,
) -> Result<(Vec<Staged>, StagingDir), TridentError> {
    let staging = StagingDir::new(ctx.engine.extension_staging_dir(&ctx.operation_id));
    let (dir, host_root) = (staging.path().to_path_buf(), ctx.engine.host_root.clone());
    let (os, running, sources) = (os.clone(), running.cloned(), ctx.engine.sources.clone());
    let staged =
        blocking(move || extensions::stage(&os, running.as_ref(), &host_root, &dir, &sources))
            .await?;
    Ok((staged, staging))
}
