//! Metric names, units and attribute keys (OpenTelemetry semantic-convention
//! style). After an OTel Collector's Prometheus exporter: dots become
//! underscores, the unit is suffixed (`_seconds`, `_bytes`) and counters end
//! in `_total` — dashboards/ uses those forms.

/// Counter, `{operation}`, attrs `kind`, `result`: completed servicing operations.
pub const OPERATIONS: &str = "trident.servicing.operations";
/// Up-down counter, `{operation}`, attr `kind`: operations running now.
pub const OPERATIONS_ACTIVE: &str = "trident.servicing.operations.active";
/// Histogram, `s`, attrs `kind`, `result`: wall time of a servicing operation.
pub const OPERATION_DURATION: &str = "trident.servicing.operation.duration";
/// Histogram, `s`, attrs `phase`, `state`: wall time of a finished phase.
pub const PHASE_DURATION: &str = "trident.servicing.phase.duration";
/// Counter, `By`: bytes written to disks by servicing
/// (Prometheus: `trident_servicing_disk_written_bytes_total`).
pub const BYTES_WRITTEN: &str = "trident.servicing.disk.written";
/// Counter, `By`: bytes of OS images read; its rate is the image read
/// throughput (Prometheus: `trident_image_read_bytes_total`).
pub const IMAGE_BYTES_READ: &str = "trident.image.read";
/// Counter, `{error}`, attr `category`: error reports.
pub const ERRORS: &str = "trident.errors";
/// Counter, `{record}`, attr `kind`: records published on the bus.
pub const BUS_RECORDS: &str = "trident.bus.records";
/// Counter, `{record}`, attr `kind`: records the bus dropped.
pub const BUS_DROPS: &str = "trident.bus.drops";
/// Up-down counter, `{subscriber}`: bus subscribers now.
pub const BUS_SUBSCRIBERS: &str = "trident.bus.subscribers";
/// Counter, `{record}`, attrs `signal`, `reason`: telemetry the OTLP export lost.
pub const EXPORT_DROPS: &str = "trident.export.drops";
/// Gauges of the newest operation's overall progress (the bus's
/// `OverallProgress`, kept after it finished until the next operation's),
/// attr `kind`. Each is absent while the daemon does not know it (no total,
/// no measured rate, no honest ETA).
/// Gauge, `By`: bytes done.
pub const PROGRESS_DONE: &str = "trident.servicing.progress.done";
/// Gauge, `By`: bytes the operation moves in all.
pub const PROGRESS_PLANNED: &str = "trident.servicing.progress.planned";
/// Gauge, `By/s`: smoothed transfer rate.
pub const PROGRESS_RATE: &str = "trident.servicing.progress.rate";
/// Gauge, `s`: time left (absent once finished).
pub const PROGRESS_ETA: &str = "trident.servicing.progress.eta";
/// Gauge, `{step}`: top-level phases done.
pub const PROGRESS_STEPS_DONE: &str = "trident.servicing.progress.steps.done";
/// Gauge, `{step}`: top-level phases planned (absent without a plan).
pub const PROGRESS_STEPS_PLANNED: &str = "trident.servicing.progress.steps.planned";

/// Every metric the daemon exports, with its unit (the dashboards check uses this list).
pub const ALL: &[(&str, &str)] = &[
    (OPERATIONS, "{operation}"),
    (OPERATIONS_ACTIVE, "{operation}"),
    (OPERATION_DURATION, "s"),
    (PHASE_DURATION, "s"),
    (BYTES_WRITTEN, "By"),
    (IMAGE_BYTES_READ, "By"),
    (ERRORS, "{error}"),
    (BUS_RECORDS, "{record}"),
    (BUS_DROPS, "{record}"),
    (BUS_SUBSCRIBERS, "{subscriber}"),
    (EXPORT_DROPS, "{record}"),
    (PROGRESS_DONE, "By"),
    (PROGRESS_PLANNED, "By"),
    (PROGRESS_RATE, "By/s"),
    (PROGRESS_ETA, "s"),
    (PROGRESS_STEPS_DONE, "{step}"),
    (PROGRESS_STEPS_PLANNED, "{step}"),
];

pub const ATTR_KIND: &str = "kind";
pub const ATTR_RESULT: &str = "result";
pub const ATTR_PHASE: &str = "phase";
pub const ATTR_STATE: &str = "state";
pub const ATTR_CATEGORY: &str = "category";
pub const ATTR_SIGNAL: &str = "signal";
pub const ATTR_REASON: &str = "reason";

/// First segment of a byte-counting phase id (`write/root-a`) that means
/// data written to a disk.
pub const WRITE_PHASE_PREFIXES: &[&str] = &["write"];
/// First segment of a byte-counting phase id that means image data read
/// (StreamDisk's `download`). A `write/*` phase whose parent is not a byte
/// phase (Install, Update) also counts as read: it streams straight from
/// the image.
pub const READ_PHASE_PREFIXES: &[&str] = &["download", "read", "fetch"];
