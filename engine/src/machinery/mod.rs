//! The engine's machinery: [`Engine`] (the datastore, boot control,
//! reboot and locks every operation shares, built from
//! [`EngineSettings`]), above it [`runner`] (a step made an operation:
//! locks, datastore, bus) and [`step`] (the building blocks of every
//! flow's steps), and [`plan`] (the steps each operation declares up
//! front). The flows (`crate::flows`) sit on top; nothing here names them.

pub mod plan;
pub mod runner;
pub mod step;
pub mod unrecorded;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use trident_cosi::SourceOptions;
use trident_host::datastore::{
    Datastore, OperationEnd, OperationResult, OperationStart, RollbackChainItem, Winner,
};
use trident_host::status::HostStatus;
use trident_host::{ContextExt, ResultExt, Subkind, TridentError};
use trident_telemetry::Bus;

use super::block_device::partuuid::TakeoverLayout;
use super::boot_control::BootControl;
use super::boot_control::record::RecordBootControl;
use super::boot_control::uefi::UefiBootControl;
use super::config_accepted::ConfigAccepted;
use super::keep_alive::KeepAlive;
use super::locks::{ConnectionLock, ServicingLock};
use super::reboot::{self, Reboot};
use super::settings::{BootControlMode, EngineSettings, InstallSafety};

/// File in the state directory remembering a datastore moved by
/// `trident.datastorePath`, so a restarted daemon reopens it.
pub const DATASTORE_REDIRECT_FILE: &str = "datastore-path";
/// Version recorded in the Host Status.
pub const TRIDENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Everything the servicing handlers share.
#[derive(Debug)]
pub struct Engine {
    state_dir: PathBuf,
    datastore_path: Mutex<PathBuf>,
    datastore: Mutex<Option<Datastore>>,
    /// Boot control (`--boot-control`): record file or UEFI.
    pub boot: Box<dyn BootControl>,
    pub reboot: Box<dyn Reboot>,
    pub servicing_lock: ServicingLock,
    pub connection_lock: ConnectionLock,
    /// Held by each running operation so the daemon does not exit as idle.
    pub keep_alive: Arc<dyn KeepAlive>,
    /// Told when an operation's configuration validates (the daemon's
    /// legacy bridge: upstream's phonehome/logstream, deprecated).
    pub config_accepted: Arc<dyn ConfigAccepted>,
    /// The telemetry bus operations and error reports go to.
    bus: Bus,
    /// A failure the datastore could not record, served as `lastError`.
    pub unrecorded_error: unrecorded::UnrecordedError,
    /// What the clean-install safety check reads.
    pub install_safety: InstallSafety,
    /// The running system's root (`--host-root`): where runtime updates act.
    pub host_root: PathBuf,
    /// How every flow opens image sources (timeouts, registry credentials).
    pub sources: SourceOptions,
    /// Set when the daemon's shutdown must stop the running operation.
    pub interrupt: crate::interrupt::Interrupt,
    /// Where the partitions of a Host Status upstream wrote are (found on
    /// the disks by partition UUID, once).
    takeover_layout: TakeoverLayout,
}

impl Engine {
    /// Builds the engine and opens the datastore; operations left running
    /// by a previous daemon (crash, SIGKILL) are marked interrupted now.
    pub fn new(
        settings: EngineSettings,
        bus: Bus,
        keep_alive: Arc<dyn KeepAlive>,
        config_accepted: Arc<dyn ConfigAccepted>,
    ) -> Engine {
        let boot = boot_control_of(&settings);
        let state_dir = settings.state_dir;
        let redirect = std::fs::read_to_string(state_dir.join(DATASTORE_REDIRECT_FILE))
            .ok()
            .map(|s| PathBuf::from(s.trim()))
            .filter(|p| !p.as_os_str().is_empty());
        let interrupt = crate::interrupt::Interrupt::default();
        let sources = trident_cosi::SourceOptions {
            cancel: interrupt.cancel(),
            // Each retry of a download is a warning on the bus.
            on_retry: crate::download_retries::observer(),
            ..settings.sources
        };
        let engine = Engine {
            boot,
            reboot: reboot::from_mode(settings.reboot, settings.reboot_requests_path),
            datastore_path: Mutex::new(redirect.unwrap_or(settings.datastore_path)),
            datastore: Mutex::new(None),
            state_dir,
            servicing_lock: ServicingLock::default(),
            connection_lock: ConnectionLock::default(),
            keep_alive,
            config_accepted,
            bus,
            unrecorded_error: unrecorded::UnrecordedError::default(),
            install_safety: settings.install_safety,
            host_root: settings.host_root,
            sources,
            interrupt,
            takeover_layout: TakeoverLayout::default(),
        };
        // Errors are reported again on every request that needs the datastore.
        if let Err(error) = engine.with_datastore(|_| Ok(())) {
            tracing::error!(error = %error.report(), "datastore unavailable at start");
        }
        if let Err(error) = engine.boot.on_start() {
            tracing::warn!(error = %error.report(), "boot record unreadable at start");
        }
        engine
    }

    /// The telemetry bus of this daemon.
    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// Where operation `operation_id` downloads extension images before
    /// they are placed (removed afterwards).
    pub fn extension_staging_dir(&self, operation_id: &str) -> PathBuf {
        self.state_dir.join("extensions").join(operation_id)
    }

    /// Where operation `operation_id` mounts its new root (inside the
    /// private state directory; removed after unmounting). Operations
    /// that write a volume or mount a new root call
    /// [`clear_stale_new_roots`](Self::clear_stale_new_roots) first.
    pub fn new_root_dir(&self, operation_id: &str) -> PathBuf {
        self.new_roots_dir().join(operation_id)
    }

    fn new_roots_dir(&self) -> PathBuf {
        self.state_dir.join("new-root")
    }

    /// Cleans what an earlier run left where new roots are mounted (a
    /// daemon killed with a new root mounted): its processes ended, its
    /// mounts unmounted and loop devices detached, its directories
    /// removed; or refuses (`mount-new-root`) naming a mount that cannot
    /// be unmounted. Before anything is written. Blocking.
    pub fn clear_stale_new_roots(&self) -> Result<(), TridentError> {
        let base = self.new_roots_dir();
        let cleared = crate::new_root::stale::clear(&base)?;
        if !cleared.is_empty() {
            tracing::warn!(
                path = %base.display(),
                processes_ended = cleared.ended.len(),
                mounts_unmounted = cleared.unmounted.len(),
                loop_devices_detached = cleared.detached.len(),
                "a new root left by an earlier run was cleaned: {} process(es) ended, \
                 {} mount(s) unmounted ({}), {} loop device(s) detached ({}), {} entr(ies) removed",
                cleared.ended.len(),
                cleared.unmounted.len(),
                cleared
                    .unmounted
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                cleared.detached.len(),
                cleared.detached.join(", "),
                cleared.removed.len(),
            );
        }
        Ok(())
    }

    pub fn datastore_path(&self) -> PathBuf {
        self.datastore_path
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn slot(&self) -> MutexGuard<'_, Option<Datastore>> {
        self.datastore
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the open datastore, opening it (and recovering
    /// interrupted operations) on first use. Calls are short; they run on
    /// the async worker under a std mutex.
    pub fn with_datastore<R>(
        &self,
        f: impl FnOnce(&mut Datastore) -> Result<R, TridentError>,
    ) -> Result<R, TridentError> {
        let mut slot = self.slot();
        if slot.is_none() {
            let path = self.datastore_path();
            let mut ds = Datastore::open(&path)?;
            let interrupted = ds.recover_interrupted()?;
            for op in interrupted {
                tracing::warn!(
                    operation_id = %op.id,
                    rpc = %op.rpc,
                    "operation of a previous daemon run was interrupted; marked failed"
                );
            }
            // The OTLP export redacts the stored configurations' secrets
            // from the first record on, not only after the next operation.
            if let Ok(status) = ds.host_status() {
                trident_host::redact::known::remember(&status.secrets());
            }
            *slot = Some(ds);
        }
        let Some(ds) = slot.as_mut() else {
            return Err(TridentError::of(Subkind::OpenDatastore));
        };
        // A datastore damaged while we serve fails as at start (and is
        // reopened, hence checked again, on the next use).
        let checked = ds.check_files().and_then(|()| {
            let result = f(ds);
            match &result {
                Err(_) => ds.verify().and(result),
                Ok(_) => result,
            }
        });
        if checked
            .as_ref()
            .is_err_and(|e| e.subkind() == Subkind::OpenDatastore)
        {
            *slot = None;
        }
        checked
    }

    /// Tells the redaction of exported telemetry the secrets of the stored
    /// Host Status (read-only: the datastore is opened, and interrupted
    /// operations recovered, on first use). Nothing when there is none.
    pub fn remember_stored_secrets(&self) {
        if let Ok(status) =
            Datastore::open_read_only(self.datastore_path()).and_then(|ds| ds.host_status())
        {
            trident_host::redact::known::remember(&status.secrets());
        }
    }

    /// The current Host Status; for a host upstream Trident serviced, with
    /// the place of each partition it names by partition UUID, read from
    /// the disks (`block_device::partuuid`).
    pub fn host_status(&self) -> Result<HostStatus, TridentError> {
        let mut status = self.with_datastore(|ds| ds.host_status())?;
        self.takeover_layout.fill(&mut status);
        self.unrecorded_error.overlay(&mut status);
        Ok(status)
    }

    /// The manual-rollback chain, newest first, computed from the Host
    /// Status history as upstream computes it.
    pub fn rollback_chain(&self) -> Result<Vec<RollbackChainItem>, TridentError> {
        self.with_datastore(|ds| ds.rollback_chain())
    }

    /// At start: what an operator should know of a datastore upstream
    /// Trident wrote (a host taken over, fields of a newer upstream kept
    /// unread) as warnings, and, for a Host Status upstream wrote, where
    /// its partitions are (read from the disks now, so a disk that cannot
    /// be found is said at start). Nothing when the datastore is ours.
    pub fn report_upstream_datastore(&self) {
        let notes = self.with_datastore(|ds| Ok((ds.upstream_notes()?, ds.winner()?)));
        match notes {
            Ok((notes, winner)) => {
                for note in notes {
                    tracing::warn!(datastore = %self.datastore_path().display(), "{note}");
                }
                if let Winner::Upstream(row) = winner {
                    tracing::info!(row, "taking over the host as upstream Trident left it");
                    if let Err(error) = self.host_status() {
                        tracing::warn!(error = %error.report(), "upstream Trident's Host Status");
                    }
                }
            }
            Err(error) => {
                tracing::warn!(error = %error.report(), "reading upstream Trident's table");
            }
        }
    }

    /// Moves servicing to the datastore at `path` (trident.datastorePath of
    /// an install). The old file keeps its history; the move is remembered
    /// in STATE_DIR/datastore-path.
    /// The running operation `op` is closed in the old datastore (result
    /// success: its work continues in the new one) and reopened in the new.
    pub fn switch_datastore(
        &self,
        path: &Path,
        op: &OperationStart<'_>,
    ) -> Result<(), TridentError> {
        if path == self.datastore_path() {
            return Ok(());
        }
        let mut ds = Datastore::open(path).context("Switching to trident.datastorePath")?;
        ds.operation_started(op)?;
        self.with_datastore(|old| {
            let end = OperationEnd {
                result: OperationResult::Success,
                error: None,
            };
            old.commit(None, Some(op.id), Some(&end))
        })?;
        std::fs::write(
            self.state_dir.join(DATASTORE_REDIRECT_FILE),
            path.to_string_lossy().as_bytes(),
        )
        .structured(Subkind::Io)
        .context("Remembering trident.datastorePath")?;
        *self.slot() = Some(ds);
        *self
            .datastore_path
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = path.to_path_buf();
        tracing::info!(path = %path.display(), "datastore moved to trident.datastorePath");
        Ok(())
    }
}

/// The boot-control backend selected by `--boot-control`.
fn boot_control_of(settings: &EngineSettings) -> Box<dyn BootControl> {
    match settings.boot_control {
        BootControlMode::Record => Box::new(RecordBootControl::new(&settings.state_dir)),
        BootControlMode::Uefi => Box::new(
            UefiBootControl::new(&settings.efivars).with_kernel_stat(&settings.kernel_stat),
        ),
    }
}
