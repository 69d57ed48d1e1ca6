//! The runner: turns a step (an async function doing the servicing work)
//! into a servicing operation with locks, telemetry, datastore history and
//! a `ServicingResponse` stream. See the module docs of `servicing` for how
//! to write a step.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use std::sync::Arc;

use tonic::Status;
use tonic::metadata::MetadataMap;
use tracing::Instrument;
use trident_host::datastore::{OperationEnd, OperationResult};
use trident_host::status::HostStatus;
use trident_host::{ErrorRecord, KebabName, Subkind, TridentError};
use trident_proto::v1::{
    Completed, RebootHandling, RebootStatus, RecordKind, ServicingKind, Started, StatusCode,
    WatchOptions,
};
use trident_telemetry::operation::{Completion, Operation, OperationSpec};
use trident_telemetry::{Bus, Subscription, TraceParent};

use super::engine::{Engine, OperationIds};
use super::status::busy;
use super::stream::{ServicingStream, forward};

/// What a step gets.
#[derive(Debug, Clone)]
pub struct StepContext {
    pub engine: Arc<Engine>,
    pub operation_id: String,
    pub trace_id: String,
    pub rpc: &'static str,
    pub kind: ServicingKind,
}

impl StepContext {
    pub fn ids(&self) -> OperationIds<'_> {
        OperationIds {
            id: &self.operation_id,
            kind: self.kind.kebab_name(),
            rpc: self.rpc,
            trace_id: &self.trace_id,
        }
    }

    /// Commits an intermediate Host Status (one transaction), e.g. the
    /// staged state of a combined stage+finalize operation.
    pub async fn commit_status(&self, status: &HostStatus) -> Result<(), TridentError> {
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
    /// transaction (its `lastError` is cleared). `None`: no state change.
    pub status: Option<HostStatus>,
    pub reboot: Option<RebootRequest>,
    /// `Completed.image_hash` (`sha384:<hex>`).
    pub image_hash: Option<String>,
    /// `Completed.servicing_kind`; defaults to the operation's kind.
    pub servicing_kind: Option<ServicingKind>,
}

/// A failed step.
#[derive(Debug)]
pub struct StepError {
    pub error: TridentError,
    /// State to record with the failure (e.g. ab-update-health-check-failed);
    /// `None` keeps the current state. `lastError` is set by the runner.
    pub status: Option<HostStatus>,
    /// A reboot still wanted after the failure (e.g. back to the old volume).
    pub reboot: Option<RebootRequest>,
}

impl From<TridentError> for StepError {
    fn from(error: TridentError) -> Self {
        StepError {
            error,
            status: None,
            reboot: None,
        }
    }
}

/// Result type of a step.
pub type StepResult = Result<StepOutcome, StepError>;

/// Identifies a servicing request.
#[derive(Debug, Clone)]
pub struct ServicingRequest {
    pub rpc: &'static str,
    pub kind: ServicingKind,
    /// gRPC metadata (for the W3C `traceparent`).
    pub metadata: MetadataMap,
}

/// Starts a servicing operation running `step` and returns its stream.
///
/// Refuses at once with UNAVAILABLE when another operation holds the
/// servicing lock. The step runs in its own task holding the servicing
/// lock and an activity guard; dropping the returned stream (client gone)
/// does not cancel it.
pub fn start<F, Fut>(
    engine: &Arc<Engine>,
    request: ServicingRequest,
    step: F,
) -> Result<ServicingStream, Status>
where
    F: FnOnce(StepContext) -> Fut + Send + 'static,
    Fut: Future<Output = StepResult> + Send + 'static,
{
    let guard = engine
        .servicing_lock
        .try_acquire(request.rpc)
        .map_err(|running| busy(&running))?;
    let activity = engine.activity.guard("servicing operation");
    let op = Operation::start(OperationSpec {
        kind: request.kind,
        rpc: request.rpc,
        parent: TraceParent::from_metadata(&request.metadata),
    });
    guard.set_operation_id(op.id());
    let ctx = StepContext {
        engine: Arc::clone(engine),
        operation_id: op.id().to_owned(),
        trace_id: op.trace_id(),
        rpc: request.rpc,
        kind: request.kind,
    };
    let started = Started {
        operation_id: ctx.operation_id.clone(),
        cursor: op.started_cursor().cloned(),
        trace_id: ctx.trace_id.clone(),
    };
    let subscription = Subscription {
        options: WatchOptions {
            operation_id: ctx.operation_id.clone(),
            ..WatchOptions::default()
        },
        kinds: vec![RecordKind::Log, RecordKind::Progress, RecordKind::Operation],
    };
    let (outcome_tx, outcome_rx) = tokio::sync::oneshot::channel();
    let span = op.span().clone();
    tokio::spawn(
        async move {
            let completed = run_step(ctx, step).await;
            let completion = Completion {
                result: StatusCode::try_from(completed.status).unwrap_or(StatusCode::Failure),
                reboot_status: RebootStatus::try_from(completed.reboot_status)
                    .unwrap_or(RebootStatus::Unspecified),
                error: completed.error.clone(),
            };
            op.complete(completion);
            // Release the lock before the client can see Completed, so a
            // client that starts its next operation right away is not
            // told "busy".
            drop(guard);
            // The handler waits for this before it sends Completed; a
            // disconnected handler is fine.
            let _ = outcome_tx.send(completed);
            drop(activity);
        }
        .instrument(span),
    );
    Ok(forward(started, Bus::current(), subscription, outcome_rx))
}

/// Runs the step and records its end; returns the `Completed` message.
async fn run_step<F, Fut>(ctx: StepContext, step: F) -> Completed
where
    F: FnOnce(StepContext) -> Fut,
    Fut: Future<Output = StepResult>,
{
    let engine = Arc::clone(&ctx.engine);
    let ids_started = {
        let ids = ctx.ids();
        let _write = engine.connection_lock.write().await;
        engine.with_datastore(|ds| ds.operation_started(ids.id, ids.kind, ids.rpc, ids.trace_id))
    };
    let result = match ids_started {
        // A panicking step is recorded like any failure (and the lock is
        // released), not left "running" until the next daemon start.
        Ok(()) => match AssertUnwindSafe(step(ctx.clone())).catch_unwind().await {
            Ok(result) => result,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(StepError::from(TridentError::new(
                    Subkind::TaskFailed,
                    format!("The servicing step panicked: {what}"),
                )))
            }
        },
        Err(error) => Err(StepError::from(error)),
    };
    let default_kind = ctx.kind;
    match result {
        Ok(outcome) => {
            let mut status = outcome.status;
            if let Some(s) = status.as_mut() {
                s.last_error = None;
            }
            let end = OperationEnd {
                result: OperationResult::Success,
                error: None,
            };
            if let Err(error) = commit(&ctx, status.as_ref(), &end).await {
                return failed(&ctx, error, None, None, default_kind).await;
            }
            let reboot_status = reboot(&ctx, outcome.reboot.as_ref());
            Completed {
                status: StatusCode::Success as i32,
                error: None,
                reboot_status: reboot_status as i32,
                image_hash: outcome.image_hash,
                servicing_kind: Some(outcome.servicing_kind.unwrap_or(default_kind) as i32),
            }
        }
        Err(StepError {
            error,
            status,
            reboot,
        }) => failed(&ctx, error, status, reboot, default_kind).await,
    }
}

/// Records a failure as the last error (with `status` or the current
/// state), reports it on the bus, carries out a wanted reboot.
async fn failed(
    ctx: &StepContext,
    error: TridentError,
    status: Option<HostStatus>,
    reboot_request: Option<RebootRequest>,
    kind: ServicingKind,
) -> Completed {
    let record: ErrorRecord = error.record().stamped(&ctx.operation_id, &ctx.trace_id);
    tracing::error!(error = %record.report(), "servicing step failed");
    trident_telemetry::errors::report(record.to_report());
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
    }
    let reboot_status = reboot(ctx, reboot_request.as_ref());
    Completed {
        status: StatusCode::Failure as i32,
        error: Some(record.to_proto()),
        reboot_status: reboot_status as i32,
        image_hash: None,
        servicing_kind: Some(kind as i32),
    }
}

async fn commit(
    ctx: &StepContext,
    status: Option<&HostStatus>,
    end: &OperationEnd,
) -> Result<(), TridentError> {
    let _write = ctx.engine.connection_lock.write().await;
    ctx.engine
        .with_datastore(|ds| ds.commit(status, Some(&ctx.operation_id), Some(end)))
}

fn reboot(ctx: &StepContext, request: Option<&RebootRequest>) -> RebootStatus {
    let Some(request) = request else {
        return RebootStatus::RebootNotRequired;
    };
    if request.handling == RebootHandling::CallerHandlesReboot {
        tracing::info!(reason = %request.reason, "reboot required; the caller handles it");
        return RebootStatus::RebootRequired;
    }
    match ctx
        .engine
        .reboot
        .request(&ctx.operation_id, &request.reason)
    {
        Ok(status) => status,
        Err(error) => {
            tracing::error!(error = %error.report(), "reboot request failed");
            RebootStatus::RebootRequired
        }
    }
}
