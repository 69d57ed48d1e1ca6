//! Servicing operation lifecycle: a root span `servicing_operation` (fields
//! `operation_id`, `kind`, `rpc`) and the operation-started and -completed
//! records that tell a subscriber where an operation begins and ends.
//!
//! ```no_run
//! use trident_proto::v1::{RebootStatus, ServicingKind, StatusCode};
//! use trident_telemetry::operation::{Completion, Operation, OperationSpec};
//! # let bus = trident_telemetry::Bus::in_memory(Default::default());
//! let op = Operation::start(&bus, OperationSpec { kind: ServicingKind::CleanInstall, rpc: "Install", parent: None, continues: None });
//! {
//!     let _in_op = op.span().enter(); // records inside belong to the operation
//!     // ... servicing ...
//! }
//! op.complete(Completion { result: StatusCode::Success, reboot_status: RebootStatus::RebootRequired, ..Completion::default() });
//! ```

use std::sync::Arc;

use trident_proto::v1::{
    Cursor, OperationEvent, OperationRecord, OperationSummary, RebootAction, RebootStatus, Record,
    RecordKind, ServicingKind, StatusCode, TridentError, TridentErrorKind, record,
};

use crate::bus::ring::Entry;
use crate::bus::{Bus, Effect};
use crate::ids::{self, TraceParent};
use crate::span_link::RootSpanIds;

/// Target of the operation's root span and lifecycle log lines.
pub const OPERATION_TARGET: &str = "trident::operation";
/// Name of the operation's root span.
pub const OPERATION_SPAN_NAME: &str = "servicing_operation";

/// What is starting.
#[derive(Clone, Debug)]
pub struct OperationSpec {
    /// Kind of servicing (may be refined later; reported at start).
    pub kind: ServicingKind,
    /// Name of the RPC that started it, e.g. "Install", "UpdateStage".
    pub rpc: &'static str,
    /// The caller's trace position (W3C `traceparent` of the request, see
    /// [`TraceParent::from_metadata`]); the root span becomes its child
    /// (only linked to it when the operation `continues` another).
    pub parent: Option<TraceParent>,
    /// The earlier operation this one settles across its reboot (a commit
    /// after an install, A/B update or rollback finalized): the root span
    /// becomes a child of that operation's root span, in its trace.
    pub continues: Option<Continuation>,
}

/// The trace context of an earlier operation, kept across the reboot (the
/// datastore's operation history), that an operation continues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Continuation {
    /// The earlier operation's id.
    pub operation_id: String,
    /// Its trace id.
    pub trace_id: u128,
    /// Its root span's id.
    pub root_span_id: u64,
}

impl Continuation {
    /// From the texts the datastore keeps (32 and 16 hex digits); `None`
    /// when either is malformed or missing.
    pub fn parse(operation_id: &str, trace_id: &str, root_span_id: &str) -> Option<Continuation> {
        Some(Continuation {
            operation_id: operation_id.to_owned(),
            trace_id: ids::parse_trace_id(trace_id)?,
            root_span_id: ids::parse_span_id(root_span_id)?,
        })
    }

    /// As a parent position: sampled, as the earlier root span was
    /// recorded (its records are in the journal).
    fn as_parent(&self) -> TraceParent {
        TraceParent {
            trace_id: self.trace_id,
            parent_span_id: self.root_span_id,
            flags: 1,
        }
    }
}

impl RootSpanIds {
    /// The ids of a new root span for `spec`: the continued operation's
    /// trace (the caller's span then a link), else the caller's trace, else
    /// a new one.
    fn for_spec(spec: &OperationSpec) -> RootSpanIds {
        let span_id = ids::new_span_id();
        match (&spec.continues, spec.parent) {
            (Some(continues), caller) => RootSpanIds {
                trace_id: continues.trace_id,
                span_id,
                parent: Some(continues.as_parent()),
                link: caller,
            },
            (None, Some(caller)) => RootSpanIds {
                trace_id: caller.trace_id,
                span_id,
                parent: Some(caller),
                link: None,
            },
            (None, None) => RootSpanIds {
                trace_id: ids::new_trace_id(),
                span_id,
                parent: None,
                link: None,
            },
        }
    }
}

/// How it ended. Everything a servicing stream's `Completed` says, so that
/// stream can be built from the bus alone.
#[derive(Clone, Debug, Default)]
pub struct Completion {
    /// Success or failure.
    pub result: StatusCode,
    /// Whether a reboot is needed or started.
    pub reboot_status: RebootStatus,
    /// The error, when it failed.
    pub error: Option<TridentError>,
    /// SHA-384 of the image's metadata (`sha384:<hex>`), when one was written.
    pub image_hash: Option<String>,
    /// The servicing actually done, when it refines the kind it started as.
    pub servicing_kind: Option<ServicingKind>,
    /// With `RebootStarted`: what the daemon does about the reboot.
    pub reboot_action: Option<RebootAction>,
}

/// A running servicing operation. Complete it with
/// [`complete`](Operation::complete); dropping it uncompleted reports a
/// failure (internal error), so a subscriber always sees the end.
#[derive(Debug)]
pub struct Operation {
    id: String,
    trace_id: u128,
    root_span_id: u64,
    continues: Option<String>,
    kind: ServicingKind,
    rpc: &'static str,
    span: tracing::Span,
    bus: Bus,
    started_cursor: Option<Cursor>,
    completed: bool,
}

impl Operation {
    /// Starts an operation on `bus`: opens its root span and publishes its
    /// started record (with a fresh operation id).
    pub fn start(bus: &Bus, spec: OperationSpec) -> Operation {
        let id = uuid::Uuid::new_v4().to_string();
        let root = RootSpanIds::for_spec(&spec);
        let parent_span_id = root
            .parent
            .map(|p| p.parent_span_id_hex())
            .unwrap_or_default();
        let continues = spec.continues.as_ref().map(|c| c.operation_id.clone());
        let mut op = Operation {
            id,
            trace_id: root.trace_id,
            root_span_id: root.span_id,
            continues: continues.clone(),
            kind: spec.kind,
            rpc: spec.rpc,
            // Replaced below: the started record comes first, so a watch of
            // the operation (which starts at that record) sees its root span open.
            span: tracing::Span::none(),
            bus: bus.clone(),
            started_cursor: None,
            completed: false,
        };
        let record = op.record(
            OperationEvent::Started,
            StatusCode::Unspecified,
            RebootStatus::Unspecified,
            None,
        );
        let summary = OperationSummary {
            operation_id: op.id.clone(),
            kind: op.kind as i32,
            rpc: op.rpc.to_owned(),
            running: true,
            trace_id: record.trace_id.clone(),
            started: Some(crate::record::now()),
            continues_operation_id: continues.clone().unwrap_or_default(),
            ..OperationSummary::default()
        };
        op.started_cursor = Some(op.publish(record, Effect::Started(summary)));
        bus.overall()
            .started(&Arc::from(op.id.as_str()), std::time::Instant::now());
        op.span = tracing::info_span!(
            target: OPERATION_TARGET,
            parent: None,
            "servicing_operation",
            operation_id = %op.id,
            kind = spec.kind.as_str_name(),
            rpc = spec.rpc,
            trace_id = %ids::trace_id_hex(root.trace_id),
            parent_span_id = %parent_span_id,
            span_id = %ids::span_id_hex(root.span_id),
            continues_operation_id = continues.as_deref().unwrap_or_default(),
            caller_traceparent = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            result = tracing::field::Empty,
        );
        if let Some(link) = root.link {
            op.span.record("caller_traceparent", link.to_string());
        }
        // OTLP export (when on): the exported root span has the same ids
        // (trace, span, parent) as the bus records, so bus and export agree.
        crate::span_link::link_operation_span(&op.span, &root);
        {
            // Entered, not only named as the parent: layers that read the
            // current span (tracing-journald) take the operation's fields
            // from it.
            let _in_op = op.span.enter();
            tracing::info!(target: OPERATION_TARGET, parent: &op.span, rpc = op.rpc, "servicing operation started");
        }
        op
    }

    /// The operation id (UUID text).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The W3C trace id (32 hex) of the operation's root span.
    pub fn trace_id(&self) -> String {
        ids::trace_id_hex(self.trace_id)
    }

    /// The id (16 hex) of the operation's root span, for the datastore: the
    /// operation that settles this one after a reboot continues it.
    pub fn root_span_id(&self) -> String {
        ids::span_id_hex(self.root_span_id)
    }

    /// The operation's root span; enter it (or `instrument` futures with
    /// it) so records belong to the operation.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Bus cursor of the operation-started record (for
    /// `ServicingResponse.Started.cursor`); always set once started.
    pub fn started_cursor(&self) -> Option<&Cursor> {
        self.started_cursor.as_ref()
    }

    /// Publishes the completed record (its journal write is fsynced) and
    /// closes the root span.
    pub fn complete(mut self, completion: Completion) {
        self.finish(completion);
    }

    fn finish(&mut self, completion: Completion) {
        if self.completed {
            return;
        }
        self.completed = true;
        let failed = completion.result != StatusCode::Success;
        self.span.record("result", completion.result.as_str_name());
        {
            // Entered (see `start`): the caller need not be in the span.
            let _in_op = self.span.enter();
            if failed {
                self.span.record("otel.status_code", "ERROR");
                let message = completion
                    .error
                    .as_ref()
                    .map(|e| e.error_message.as_str())
                    .unwrap_or("");
                tracing::error!(target: OPERATION_TARGET, parent: &self.span, rpc = self.rpc, error = message, "servicing operation failed");
            } else {
                tracing::info!(target: OPERATION_TARGET, parent: &self.span, rpc = self.rpc, "servicing operation completed");
            }
        }
        let id: Arc<str> = Arc::from(self.id.as_str());
        self.bus
            .derive_overall(&id, |tracker, now| tracker.finished(&id, now));
        // Close the root span (unless the caller still holds clones of it)
        // before the completed record, which is the operation's last.
        drop(std::mem::replace(&mut self.span, tracing::Span::none()));
        let mut record = self.record(
            OperationEvent::Completed,
            completion.result,
            completion.reboot_status,
            completion.error,
        );
        record.image_hash = completion.image_hash;
        record.servicing_kind = completion.servicing_kind.map(|kind| kind as i32);
        record.reboot_action = completion.reboot_action.map(|action| action as i32);
        let summary = OperationSummary {
            operation_id: self.id.clone(),
            running: false,
            result: record.result,
            reboot_status: record.reboot_status,
            completed: Some(crate::record::now()),
            ..OperationSummary::default()
        };
        self.publish(record, Effect::Completed(summary));
    }

    fn record(
        &self,
        event: OperationEvent,
        result: StatusCode,
        reboot_status: RebootStatus,
        error: Option<TridentError>,
    ) -> OperationRecord {
        OperationRecord {
            event: event as i32,
            operation_id: self.id.clone(),
            kind: self.kind as i32,
            rpc: self.rpc.to_owned(),
            result: result as i32,
            reboot_status: reboot_status as i32,
            trace_id: self.trace_id(),
            error,
            image_hash: None,
            servicing_kind: None,
            reboot_action: None,
            continues_operation_id: match event {
                OperationEvent::Started => self.continues.clone().unwrap_or_default(),
                _ => String::new(),
            },
        }
    }

    fn publish(&self, record: OperationRecord, effect: Effect<'_>) -> Cursor {
        let bus = &self.bus;
        let record = Record {
            cursor: None,
            boot_id: String::new(),
            timestamp: Some(crate::record::now()),
            record: Some(record::Record::Operation(record)),
        };
        let entry = Entry {
            kind: RecordKind::Operation as u8,
            level: 0,
            operation: Some(Arc::from(self.id.as_str())),
            bytes: crate::record::encode(&record),
        };
        bus.cursor(bus.publish(entry, effect))
    }
}

impl Drop for Operation {
    fn drop(&mut self) {
        self.finish(Completion {
            result: StatusCode::Failure,
            reboot_status: RebootStatus::Unspecified,
            error: Some(TridentError {
                kind: TridentErrorKind::InternalError as i32,
                subkind: "operation-abandoned".to_owned(),
                message: "the servicing operation ended without reporting its completion"
                    .to_owned(),
                error_message: "servicing operation abandoned".to_owned(),
                ..TridentError::default()
            }),
            ..Completion::default()
        });
    }
}
