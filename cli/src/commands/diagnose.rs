//! `trident diagnose -o/--output FILE`: one tar archive with
//! - report.json: versions, host facts, servicing state, last error,
//!   operation history, and `not_collected` (what could not be had, why);
//! - `records/<operation>.jsonl`: the bus records of the last operations
//!   (from the daemon), or journal/ (the daemon's journal files, copied as
//!   they are) when the daemon is down;
//! - datastore.sqlite: a redacted copy of the datastore, read directly
//!   (`Datastore::export_redacted`: SQLite's own snapshot, WAL included,
//!   secrets of every row redacted in the copy, never in the live file);
//! - report.html: the newest operation's span waterfall, phases with
//!   throughput, error, recent logs and the Host Status, one self-contained
//!   page (`crate::report::html`);
//! - system/esp-tree.txt (every file of the mounted ESP with its size) and
//!   system/efibootmgr.txt (the UEFI boot variables, `efibootmgr -v`);
//! - with `--journal`: system/journal.txt and system/dmesg.txt; with
//!   `--selinux`: system/selinux-audit.log (see `diagnose_system`).
//!
//! Works with the daemon down: everything it can read from files it reads.
//!
//! Secrets never enter the bundle: before the archive is written
//! (`redact_bundle`), the report and every text file are redacted with
//! the secrets of the stored Host Configurations and every PEM private key
//! body is removed (`trident_host::redact`).

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::client::Channel;
use serde_json::{Value, json};
use tokio_stream::StreamExt;
use trident_host::KebabName;
use trident_host::redact::Secrets;
use trident_host::redact::document::{Scope, redact_value};
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::version_service_client::VersionServiceClient;
use trident_proto::v1::{
    GetBusStatusRequest, ListOperationsRequest, OperationSummary, Record, VersionRequest,
    WatchOptions, WatchRequest, stream_event,
};

use crate::args::DiagnoseArgs;
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::render::event::Event;
use crate::render::json;

/// What goes into the archive, gathered before writing it.
struct Bundle {
    report: serde_json::Map<String, Value>,
    not_collected: Vec<String>,
    files: Vec<(String, Vec<u8>)>,
    /// The newest collected operation and its records (for report.html).
    newest: Option<(String, Vec<Record>)>,
    /// The secrets of the stored Host Configurations (from the datastore).
    secrets: Secrets,
}

impl Bundle {
    fn missing(&mut self, what: &str, why: impl std::fmt::Display) {
        self.not_collected.push(format!("{what}: {why}"));
    }
}

pub async fn run(ctx: &Ctx, args: &DiagnoseArgs) -> CliResult<Exit> {
    let mut bundle = Bundle {
        report: serde_json::Map::new(),
        not_collected: Vec::new(),
        files: Vec::new(),
        newest: None,
        secrets: Secrets::default(),
    };
    bundle.report.insert(
        "generated_at".into(),
        json!(crate::render::format::timestamp(
            std::time::SystemTime::now()
        )),
    );
    bundle.report.insert(
        "client_version".into(),
        json!(super::version::CLIENT_VERSION),
    );
    bundle.report.insert("host".into(), host_facts());
    let daemon_up = collect_from_daemon(ctx, args, &mut bundle).await;
    let datastore = args
        .datastore
        .clone()
        .unwrap_or_else(|| args.state_dir.join("datastore.sqlite"));
    collect_datastore(&datastore, &mut bundle);
    if !daemon_up {
        collect_journal(&args.state_dir.join("journal"), &mut bundle);
    }
    super::diagnose_system::collect_boot_state(&mut bundle.files, &mut bundle.not_collected);
    if args.journal {
        super::diagnose_system::collect_system_journal(
            &mut bundle.files,
            &mut bundle.not_collected,
        );
    }
    if args.selinux {
        super::diagnose_system::collect_selinux_audit(&mut bundle.files, &mut bundle.not_collected);
    }
    let not_collected = std::mem::take(&mut bundle.not_collected);
    bundle
        .report
        .insert("not_collected".into(), json!(not_collected));
    redact_bundle(&mut bundle);
    // Rendered from the redacted report; its records are redacted as text.
    let html = bundle.secrets.redact(&report_html(&bundle)).into_owned();
    bundle.files.push(("report.html".into(), html.into_bytes()));
    let report = serde_json::to_vec_pretty(&Value::Object(bundle.report))
        .map_err(|e| CliError::Local(format!("cannot encode the report: {e}")))?;
    write_archive(&args.output, &report, &bundle.files)?;
    eprintln!("trident: wrote support bundle {}", args.output.display());
    for line in &not_collected {
        eprintln!("trident: not collected: {line}");
    }
    Ok(Exit::Success)
}

/// The bundle's one redaction boundary: the report (Host Status, last
/// error, operation errors) as a document, every text file as text. The
/// datastore copy is redacted when it is made; the journal segments (daemon
/// down) are binary and hold only bus records, redacted at their source.
fn redact_bundle(bundle: &mut Bundle) {
    let mut report = Value::Object(std::mem::take(&mut bundle.report));
    redact_value(&mut report, &bundle.secrets, Scope::Everywhere);
    if let Value::Object(map) = report {
        bundle.report = map;
    }
    for (name, data) in &mut bundle.files {
        if name.starts_with("journal/") || name == DATASTORE_FILE {
            continue;
        }
        if let Ok(text) = std::str::from_utf8(data)
            && let std::borrow::Cow::Owned(redacted) = bundle.secrets.redact(text)
        {
            *data = redacted.into_bytes();
        }
    }
}

/// `report.html` from what the bundle already holds.
fn report_html(bundle: &Bundle) -> String {
    let (operation_id, records) = match &bundle.newest {
        Some((id, records)) => (id.clone(), records.as_slice()),
        None => (String::new(), &[][..]),
    };
    let generated_at = bundle.report["generated_at"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    crate::report::html::render(&crate::report::html::ReportInput {
        generated_at,
        operation_id,
        records,
        last_error: bundle.report.get("last_error"),
        host_status: bundle.report.get("servicing"),
    })
}

fn host_facts() -> Value {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    json!({
        "hostname": read("/proc/sys/kernel/hostname"),
        "kernel": read("/proc/sys/kernel/osrelease"),
        "os_release": read("/etc/os-release"),
        "uptime": read("/proc/uptime"),
    })
}

/// Daemon version, bus status, operations and their records, last error.
/// Returns whether the daemon answered.
async fn collect_from_daemon(ctx: &Ctx, args: &DiagnoseArgs, bundle: &mut Bundle) -> bool {
    let channel = match ctx.channel().await {
        Ok(channel) => channel,
        Err(err) => {
            bundle.missing("daemon", &err);
            bundle.report.insert(
                "daemon".into(),
                json!({ "reachable": false, "error": err.to_string() }),
            );
            return false;
        }
    };
    collect_version(channel.clone(), bundle).await;
    let mut telemetry = TelemetryServiceClient::new(channel);
    collect_bus_status(&mut telemetry, bundle).await;
    collect_servicing(ctx, bundle).await;
    let operations = collect_history(&mut telemetry, bundle).await;
    let skip = operations.len().saturating_sub(args.operations);
    for op in operations.iter().skip(skip) {
        collect_records(&mut telemetry, &op.operation_id, bundle).await;
    }
    true
}

async fn collect_version(channel: Channel, bundle: &mut Bundle) {
    match VersionServiceClient::new(channel)
        .version(VersionRequest {})
        .await
    {
        Ok(v) => {
            let v = v.into_inner();
            bundle.report.insert(
                "daemon".into(),
                json!({ "reachable": true, "version": v.version, "git_commit": v.git_commit }),
            );
        }
        Err(s) => bundle.missing("daemon version", crate::exit::describe_status(&s)),
    }
}

async fn collect_bus_status(telemetry: &mut TelemetryServiceClient<Channel>, bundle: &mut Bundle) {
    match telemetry.get_bus_status(GetBusStatusRequest {}).await {
        Ok(s) => {
            let s = s.into_inner();
            bundle.report.insert(
                "bus".into(),
                json!({ "run_id": s.run_id, "head_sequence": s.head_sequence,
                        "oldest_sequence": s.oldest_sequence, "ring_records": s.ring_records,
                        "subscribers": s.subscribers,
                        "drops": s.drops.map(|d| json!({"logs": d.logs, "spans": d.spans,
                            "progress": d.progress, "errors": d.errors, "operations": d.operations})) }),
            );
        }
        Err(s) => bundle.missing("bus status", crate::exit::describe_status(&s)),
    }
}

/// The full Host Status (upstream's keys) and last error, as `trident get` shows them.
async fn collect_servicing(ctx: &Ctx, bundle: &mut Bundle) {
    match ctx.host_status_text(crate::args::OutputFormat::Json).await {
        Ok(status) => {
            bundle.report.insert(
                "servicing".into(),
                serde_json::from_str(&status).unwrap_or(Value::Null),
            );
        }
        Err(e) => bundle.missing("servicing state from the daemon", e),
    }
    match super::get::last_error(ctx).await {
        Ok(error) => {
            bundle.report.insert(
                "last_error".into(),
                serde_json::to_value(error).unwrap_or(Value::Null),
            );
        }
        Err(e) => bundle.missing("last error from the daemon", e),
    }
}

/// The operation history into the report; returns the operations.
async fn collect_history(
    telemetry: &mut TelemetryServiceClient<Channel>,
    bundle: &mut Bundle,
) -> Vec<OperationSummary> {
    let operations = match telemetry.list_operations(ListOperationsRequest {}).await {
        Ok(list) => list.into_inner().operations,
        Err(s) => {
            bundle.missing(
                "operation history from the daemon",
                crate::exit::describe_status(&s),
            );
            Vec::new()
        }
    };
    let history: Vec<Value> = operations
        .iter()
        .map(|op| {
            json!({ "operation_id": op.operation_id, "rpc": op.rpc, "running": op.running,
                    "kind": op.kind().kebab_name(),
                    "result": crate::render::format::status(op.result()),
                    "reboot_status": crate::render::format::reboot_status(op.reboot_status()),
                    "trace_id": op.trace_id })
        })
        .collect();
    bundle.report.insert("operations".into(), json!(history));
    operations
}

/// The bus records of one operation, as `records/<id>.jsonl`.
async fn collect_records(
    telemetry: &mut TelemetryServiceClient<Channel>,
    operation_id: &str,
    bundle: &mut Bundle,
) {
    let request = WatchRequest {
        options: Some(WatchOptions {
            operation_id: operation_id.to_string(),
            snapshot: true,
            ..WatchOptions::default()
        }),
        kinds: Vec::new(),
    };
    let mut lines = String::new();
    let mut records = Vec::new();
    match telemetry.watch(request).await {
        Ok(stream) => {
            let mut stream = stream.into_inner();
            while let Some(Ok(response)) = stream.next().await {
                for event in response.events {
                    if let Some(e) = Event::from_stream(&event) {
                        lines.push_str(&json::line(&e));
                        lines.push('\n');
                    }
                    if let Some(stream_event::Event::Record(rec)) = event.event {
                        records.push(rec);
                    }
                }
            }
        }
        Err(s) => bundle.missing(
            &format!("records of {operation_id}"),
            crate::exit::describe_status(&s),
        ),
    }
    bundle
        .files
        .push((format!("records/{operation_id}.jsonl"), lines.into_bytes()));
    // Called oldest first: the last call is the newest operation.
    bundle.newest = Some((operation_id.to_string(), records));
}

/// Name of the datastore copy in the archive.
const DATASTORE_FILE: &str = "datastore.sqlite";

/// A redacted copy of the datastore, plus servicing state and history read
/// from it, and the secrets the rest of the bundle is redacted with. A
/// datastore that cannot be opened is not shipped raw: it would carry
/// every secret.
fn collect_datastore(path: &Path, bundle: &mut Bundle) {
    let store = match trident_host::datastore::Datastore::open_read_only(path) {
        Ok(store) => store,
        Err(e) => {
            bundle.missing(&format!("datastore {}", path.display()), e);
            return;
        }
    };
    match store.host_status() {
        Ok(hs) => bundle.secrets.extend(&hs.secrets()),
        Err(e) => bundle.missing("secrets to redact from the datastore", e),
    }
    match store.export_redacted() {
        Ok(bytes) => bundle.files.push((DATASTORE_FILE.to_string(), bytes)),
        Err(e) => bundle.missing(&format!("redacted copy of datastore {}", path.display()), e),
    }
    if !bundle.report.contains_key("servicing") {
        match store.host_status() {
            Ok(hs) => {
                bundle.report.insert(
                    "servicing".into(),
                    serde_json::to_value(&hs).unwrap_or(Value::Null),
                );
            }
            Err(e) => bundle.missing("Host Status from the datastore", e),
        }
    }
    match store.operations(50) {
        Ok(rows) => {
            let rows: Vec<Value> = rows
                .iter()
                .map(|r| {
                    json!({ "operation_id": r.id, "kind": r.kind, "rpc": r.rpc,
                    "started_at": r.started_at, "ended_at": r.ended_at,
                    "result": r.result.as_str(), "trace_id": r.trace_id,
                    "error": serde_json::to_value(&r.error).unwrap_or(Value::Null) })
                })
                .collect();
            bundle
                .report
                .insert("datastore_operations".into(), json!(rows));
        }
        Err(e) => bundle.missing("operation history from the datastore", e),
    }
    if !bundle.report.contains_key("last_error")
        && let Ok(error) = store.last_error()
    {
        bundle.report.insert(
            "last_error".into(),
            serde_json::to_value(error).unwrap_or(Value::Null),
        );
    }
}

/// The daemon's journal files, as they are (daemon down).
fn collect_journal(dir: &Path, bundle: &mut Bundle) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            bundle.missing(&format!("journal {}", dir.display()), e);
            return;
        }
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        match std::fs::read(entry.path()) {
            Ok(bytes) => bundle.files.push((format!("journal/{name}"), bytes)),
            Err(e) => bundle.missing(&format!("journal file {name}"), e),
        }
    }
}

fn write_archive(path: &Path, report: &[u8], files: &[(String, Vec<u8>)]) -> CliResult<()> {
    // The bundle holds the Host Status and logs: the owner's alone, as the
    // datastore it copies (0600 whatever the umask; an existing file too).
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|file| {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            Ok(file)
        })
        .map_err(|e| CliError::file("cannot create", path, e))?;
    let mut archive = tar::Builder::new(file);
    let mut add = |name: &str, data: &[u8]| -> std::io::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o600);
        header.set_mtime(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        );
        header.set_cksum();
        archive.append_data(&mut header, name, data)
    };
    add("report.json", report).map_err(|e| CliError::file("cannot write", path, e))?;
    for (name, data) in files {
        add(name, data).map_err(|e| CliError::file("cannot write", path, e))?;
    }
    archive
        .into_inner()
        .and_then(|f| f.sync_all())
        .map_err(|e| CliError::file("cannot write", path, e))
}
