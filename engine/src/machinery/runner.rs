//! The runner: turns a step (an async function doing the servicing work)
//! into a servicing operation with locks, telemetry and datastore history.
//! Everything a client sees of the operation goes to the bus (records, the
//! error report, the completed record); the gRPC layer streams it from
//! there. See the module docs of `servicing` for how to write a step.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tracing::Instrument;
use trident_host::datastore::{OperationEnd, OperationResult};
use trident_host::status::{HostStatus, ServicingState};
use trident_host::{ErrorRecord, KebabName, Subkind, TridentError as HostError};
use trident_proto::v1::{
    RebootAction, RebootHandling, RebootStatus, ServicingKind, Started, StatusCode,
};
use trident_telemetry::TraceParent;
use trident_telemetry::operation::{Completion, Continuation, Operation, OperationSpec};

use super::Engine;
use crate::locks::RunningOperation;
use trident_host::datastore::OperationStart;

/// What a step gets.
#[derive(Debug, Clone)]
pub struct StepContext {
    pub engine: Arc<Engine>,
    pub operation_id: String,
    pub trace_id: String,
    /// Id (16 hex) of the operation's root span (kept in the datastore).
    pub root_span_id: String,
    pub rpc: &'static str,
    pub kind: ServicingKind,
}

impl StepContext {
    pub fn ids(&self) -> OperationStart<'_> {
        OperationStart {
            id: &self.operation_id,
            kind: self.kind.kebab_name(),
            rpc: self.rpc,
            trace_id: &self.trace_id,
            root_span_id: &self.root_span_id,
        }
    }

    /// Commits an intermediate Host Status (one transaction), e.g. the
    /// staged state of a combined stage+finalize operation.
    pub async fn commit_status(&self, status: &HostStatus) -> Result<(), HostError> {
        let _write = self.engine.connection_lock.write().await;
        self.engine
            .with_datastore(|ds| ds.save_status(status, Some(&self.operation_id)))
    }
}

/// A reboot the step asks for once its state is committed.
#[derive(Debug, Clone)]
pub struct RebootRequest {
    pub reason: String,
    /// From the request's `RebootManagement`; CALLER_HANDLES_REBOOT means
    /// "report REBOOT_REQUIRED, do not act".
    pub handling: RebootHandling,
}

/// A successful step.
#[derive(Debug, Clone, Default)]
pub struct StepOutcome {
    /// New Host Status, committed with the operation's end in one
    /// transaction (its `lastError` is cleared unless `keep_last_error`).
    /// `None`: no state change.
    pub status: Option<HostStatus>,
    pub reboot: Option<RebootRequest>,
    /// `Completed.image_hash` (`sha384:<hex>`).
    pub image_hash: Option<String>,
    /// `Completed.servicing_kind`; defaults to the operation's kind.
    pub servicing_kind: Option<ServicingKind>,
    /// Keep `status.last_error` as the step left it instead of clearing it
    /// (settling after a failed update: the error says why).
    pub keep_last_error: bool,
}

/// A failed step.
#[derive(Debug)]
pub struct StepError {
    pub error: HostError,
    /// State to record with the failure (e.g. ab-update-health-check-failed);
    /// `None` keeps the current state. `lastError` is set by the runner.
    pub status: Option<HostStatus>,
    /// A reboot still wanted after the failure (e.g. back to the old volume).
    pub reboot: Option<RebootRequest>,
}

impl From<HostError> for StepError {
    fn from(error: HostError) -> Self {
        StepError {
            error,
            status: None,
            reboot: None,
        }
    }
}

/// Result type of a step.
pub type StepResult = Result<StepOutcome, StepError>;

/// Tells from the current Host Status that a request has nothing to do,
/// with the outcome to report (no state change).
pub type NothingToDo = fn(&HostStatus) -> Option<StepOutcome>;

/// Tells from the current Host Status that a request settles the operation
/// that recorded it (a commit after a finalize): the new operation then
/// continues that operation's trace.
pub type Settles = fn(&HostStatus) -> bool;

/// [`Settles`] of a finalize: it continues the trace of the stage it
/// finalizes (install, A/B update or rollback), so stage, finalize and the
/// commit after the reboot are one trace.
pub fn finalizes_staged(status: &HostStatus) -> bool {
    matches!(
        status.servicing_state,
        ServicingState::CleanInstallStaged
            | ServicingState::AbUpdateStaged
            | ServicingState::ManualRollbackAbStaged
    )
}

/// Identifies a servicing request.
#[derive(Debug, Clone)]
pub struct ServicingRequest {
    pub rpc: &'static str,
    pub kind: ServicingKind,
    /// The caller's W3C `traceparent`, when it sent one.
    pub parent: Option<TraceParent>,
    /// Checked under the servicing lock before anything else: when it
    /// finds nothing to do, the lock is released at once and the operation
    /// is only recorded (a commit at boot on installer media must not keep
    /// an orchestrator's install waiting).
    pub nothing_to_do: Option<NothingToDo>,
    /// Checked with `nothing_to_do`: whether the request continues the
    /// trace of the operation that recorded the current Host Status.
    pub settles: Option<Settles>,
}

/// Starts a servicing operation running `step`; returns what the stream's
/// `Started` says. The operation's records, its error report and its
/// completed record (everything `Completed` says) go to the bus.
///
/// Refuses at once, naming the running operation, when another operation
/// holds the servicing lock. The operation is recorded as running in the
/// datastore before this returns, so a crash after the client saw
/// `Started` is always found (and marked interrupted) by the next start.
/// The step runs in its own task holding the servicing lock and a
/// keep-alive guard; a client that goes away does not cancel it.
pub async fn start<F, Fut>(
    engine: &Arc<Engine>,
    request: ServicingRequest,
    step: F,
) -> Result<Started, RunningOperation>
where
    F: FnOnce(StepContext) -> Fut + Send + 'static,
    Fut: Future<Output = StepResult> + Send + 'static,
{
    let guard = engine.servicing_lock.try_acquire(request.rpc)?;
    let (quick, continues) = if request.nothing_to_do.is_some() || request.settles.is_some() {
        let _read = engine.connection_lock.read().await;
        let status = engine.host_status().ok();
        let quick = request
            .nothing_to_do
            .zip(status.as_ref())
            .and_then(|(check, status)| check(status));
        let continues = request
            .settles
            .zip(status.as_ref())
            .filter(|(settles, status)| quick.is_none() && settles(status))
            .and_then(|_| continued_operation(engine));
        (quick, continues)
    } else {
        (None, None)
    };
    // Nothing to do: the lock is held no longer than the check.
    let guard = if quick.is_some() {
        drop(guard);
        None
    } else {
        Some(guard)
    };
    let keep_alive = engine.keep_alive.hold("servicing operation");
    let op = Operation::start(
        engine.bus(),
        OperationSpec {
            kind: request.kind,
            rpc: request.rpc,
            parent: request.parent,
            continues,
        },
    );
    if let Some(guard) = &guard {
        guard.set_operation_id(op.id());
    }
    let ctx = StepContext {
        engine: Arc::clone(engine),
        operation_id: op.id().to_owned(),
        trace_id: op.trace_id(),
        root_span_id: op.root_span_id(),
        rpc: request.rpc,
        kind: request.kind,
    };
    let started = Started {
        operation_id: ctx.operation_id.clone(),
        cursor: op.started_cursor().cloned(),
        trace_id: ctx.trace_id.clone(),
    };
    let span = op.span().clone();
    let recorded = record_started(&ctx).instrument(span.clone()).await;
    tokio::spawn(async move {
        let engine = ctx.engine.clone();
        let operation_id = ctx.operation_id.clone();
        // Only the step runs in a clone of the operation's span, dropped
        // once the step is done: completing the operation then closes the
        // span before the completed record, so that record is the
        // operation's last and a client that reads the operation once its
        // stream ended sees all of it (it used to race the span's close).
        let (completion, reboot_now) = run_step(ctx, recorded, quick, step).instrument(span).await;
        // Release the lock before the completed record, which ends the
        // client's stream: a client that starts its next operation
        // right away is not told "busy".
        drop(guard);
        op.complete(completion);
        if let Some(request) = reboot_now {
            reboot_after_completed(&engine, &operation_id, &request).await;
        }
        drop(keep_alive);
    });
    Ok(started)
}

/// The trace context of the operation that recorded the current Host
/// Status, as the datastore kept it across the reboot; `None` (a new trace)
/// when it is not there (an operation of a daemon before root span ids).
fn continued_operation(engine: &Engine) -> Option<Continuation> {
    let row = match engine.with_datastore(|ds| ds.status_operation()) {
        Ok(row) => row?,
        Err(error) => {
            tracing::warn!(error = %error.report(), "cannot read the operation to continue; a new trace starts");
            return None;
        }
    };
    Continuation::parse(&row.id, &row.trace_id, row.root_span_id.as_deref()?)
}

/// Runs the step (unless recording its start failed, or the check found
/// nothing to do: `quick`) and records its end; returns how the operation
/// ended.
async fn run_step<F, Fut>(
    ctx: StepContext,
    recorded: Result<(), HostError>,
    quick: Option<StepOutcome>,
    step: F,
) -> (Completion, Option<RebootRequest>)
where
    F: FnOnce(StepContext) -> Fut,
    Fut: Future<Output = StepResult>,
{
    let result = match (recorded, quick) {
        (Err(error), _) => Err(StepError::from(error)),
        (Ok(()), Some(outcome)) => Ok(outcome),
        (Ok(()), None) => run_catching_panics(&ctx, step).await,
    };
    match result {
        Ok(outcome) => succeeded(&ctx, outcome).await,
        Err(StepError {
            error,
            status,
            reboot,
        }) => failed(&ctx, error, status, reboot).await,
    }
}

/// Records the operation as running in the datastore.
async fn record_started(ctx: &StepContext) -> Result<(), HostError> {
    let ids = ctx.ids();
    let _write = ctx.engine.connection_lock.write().await;
    ctx.engine.with_datastore(|ds| ds.operation_started(&ids))
}

/// Runs the step; a panicking step is recorded like any failure (and the
/// lock is released), not left "running" until the next daemon start.
async fn run_catching_panics<F, Fut>(ctx: &StepContext, step: F) -> StepResult
where
    F: FnOnce(StepContext) -> Fut,
    Fut: Future<Output = StepResult>,
{
    match AssertUnwindSafe(step(ctx.clone())).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(StepError::from(HostError::new(
                Subkind::TaskFailed,
                format!("The servicing step panicked: {what}"),
            )))
        }
    }
}

/// Commits a successful step's state with the operation's end (lastError
/// cleared), then carries out its reboot request.
async fn succeeded(ctx: &StepContext, outcome: StepOutcome) -> (Completion, Option<RebootRequest>) {
    let mut status = outcome.status;
    if let Some(s) = status.as_mut().filter(|_| !outcome.keep_last_error) {
        s.last_error = None;
    }
    let end = OperationEnd {
        result: OperationResult::Success,
        error: None,
    };
    if let Err(error) = commit(ctx, status.as_ref(), &end).await {
        return failed(ctx, error, None, None).await;
    }
    let (reboot_status, reboot_action, reboot_now) = reboot(ctx, outcome.reboot);
    let completion = Completion {
        result: StatusCode::Success,
        reboot_status,
        error: None,
        image_hash: outcome.image_hash,
        servicing_kind: Some(outcome.servicing_kind.unwrap_or(ctx.kind)),
        reboot_action,
    };
    (completion, reboot_now)
}

/// Records a failure as the last error (with `status` or the current
/// state), reports it on the bus, carries out a wanted reboot.
async fn failed(
    ctx: &StepContext,
    error: HostError,
    status: Option<HostStatus>,
    reboot_request: Option<RebootRequest>,
) -> (Completion, Option<RebootRequest>) {
    let record: ErrorRecord = error.record().stamped(&ctx.operation_id, &ctx.trace_id);
    tracing::error!(error = %record.report(), "servicing step failed");
    ctx.engine.bus().report_error(record.to_report());
    let status = match status {
        Some(s) => Ok(s),
        None => ctx.engine.host_status(),
    };
    let end = OperationEnd {
        result: OperationResult::Failure,
        error: Some(record.clone()),
    };
    let committed = match status {
        Ok(mut s) => {
            s.last_error = Some(record.clone());
            commit(ctx, Some(&s), &end).await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = committed {
        tracing::error!(error = %e.report(), "could not record the failure in the datastore");
        ctx.engine.unrecorded_error.set(&record, &e);
    }
    let (reboot_status, reboot_action, reboot_now) = reboot(ctx, reboot_request);
    let completion = Completion {
        result: StatusCode::Failure,
        reboot_status,
        error: Some(record.to_proto()),
        image_hash: None,
        servicing_kind: Some(ctx.kind),
        reboot_action,
    };
    (completion, reboot_now)
}

async fn commit(
    ctx: &StepContext,
    status: Option<&HostStatus>,
    end: &OperationEnd,
) -> Result<(), HostError> {
    let _write = ctx.engine.connection_lock.write().await;
    ctx.engine
        .with_datastore(|ds| ds.commit(status, Some(&ctx.operation_id), Some(end)))?;
    ctx.engine.unrecorded_error.clear();
    Ok(())
}

/// What `Completed.reboot_status` says, what the daemon does about a
/// started reboot (`Completed.reboot_action`), and the reboot to carry out
/// once `Completed` is published (only a performed one). A request Trident
/// handles is always `REBOOT_STARTED`, as upstream's server answers it;
/// `--reboot record|none` only decide that nothing actually reboots.
fn reboot(
    ctx: &StepContext,
    request: Option<RebootRequest>,
) -> (RebootStatus, Option<RebootAction>, Option<RebootRequest>) {
    let Some(request) = request else {
        return (RebootStatus::RebootNotRequired, None, None);
    };
    if request.handling == RebootHandling::CallerHandlesReboot {
        tracing::info!(reason = %request.reason, "reboot required; the caller handles it");
        return (RebootStatus::RebootRequired, None, None);
    }
    match ctx
        .engine
        .reboot
        .request(&ctx.operation_id, &request.reason)
    {
        Ok(RebootAction::Performed) => (
            RebootStatus::RebootStarted,
            Some(RebootAction::Performed),
            Some(request),
        ),
        Ok(action) => (RebootStatus::RebootStarted, Some(action), None),
        Err(error) => {
            tracing::error!(error = %error.report(), "reboot request failed");
            (RebootStatus::RebootRequired, None, None)
        }
    }
}

/// After `Completed` (REBOOT_STARTED) is published: journal fsynced,
/// filesystems synced (the datastore's transactions are already durable),
/// then the reboot itself.
async fn reboot_after_completed(engine: &Arc<Engine>, operation_id: &str, request: &RebootRequest) {
    let engine = engine.clone();
    let (id, reason) = (operation_id.to_owned(), request.reason.clone());
    let done = tokio::task::spawn_blocking(move || {
        engine.bus().flush();
        nix::unistd::sync();
        engine.reboot.carry_out(&id, &reason)
    })
    .await;
    match done {
        Ok(Ok(())) => {}
        // After the operation completed: outside its span, named by id.
        Ok(Err(error)) => {
            tracing::error!(operation_id, error = %error.report(), "reboot failed");
        }
        Err(error) => tracing::error!(operation_id, %error, "reboot task failed"),
    }
}
