//! trident-engine: the servicing engine of `tridentd` (install, A/B
//! update, runtime update, commit, rollback, rebuild-raid, StreamDisk on
//! disk-image files or block devices), its locks, the boot record, reboot,
//! scripts and health checks, and the runner that makes a step an
//! operation. No transport here: the daemon's gRPC handlers check requests,
//! hand steps to the runner and stream the operation from the bus; the
//! daemon's composition root builds the [`machinery::Engine`] from
//! [`settings::EngineSettings`] and hands it what it must not know itself
//! ([`keep_alive::KeepAlive`], [`config_accepted::ConfigAccepted`]).
//!
//! # Layers
//!
//! Imports go one way, top to bottom (the e2e test `module_layers` fails on
//! any module that names a module naming it back, at any level):
//!
//! * [`flows`]: `install`, `update`, `runtime_update`, `commit`, `rollback`,
//!   `rebuild_raid`, `stream_disk`, and what they share (`new_root_step`,
//!   `handoff`, `finalize`, `query`);
//! * [`image`]: writing the image into its devices (`write`) and its checks
//!   before a byte is written (`verity`, `verity_blocks`);
//! * [`machinery`]: `step` (blocking work, script phases, the validate
//!   phase, the next Host Status), above `runner` (a step made an
//!   operation), above `Engine` itself (datastore, boot control, reboot,
//!   locks), and `plan` (the steps each operation declares);
//! * the parts the flows drive: `boot_control` (given a
//!   `new_root::volume::VolumeRoot`, never a `NewRoot`), `os_config`,
//!   `extensions` (sysext/confext images: staged, placed, merged again),
//!   `new_storage`, `new_root` (mounts and its tools), `scripts`, `reboot`,
//!   `locks`, `boot_record`, `systemd_check`;
//! * leaves: `install_safety` (the clean-install safety check),
//!   `block_device` (the block-device stack: each layer creates,
//!   opens, closes and records its devices, and resolves "the device of id
//!   X on this host" for all of the above), `settings`, `step_ids`,
//!   `keep_alive`, `config_accepted`.
//!
//! # Writing a step (the runner API)
//!
//! A servicing RPC is a *step*: an async function that gets a
//! [`machinery::runner::StepContext`] and returns a
//! [`machinery::runner::StepResult`]. The handler
//! hands it to [`machinery::runner::start`], which does everything else:
//!
//! ```ignore
//! use trident_engine::machinery::runner::{self, ServicingRequest, StepContext, StepOutcome, StepResult, RebootRequest};
//!
//! async fn stream_disk_step(ctx: StepContext, url: String) -> StepResult {
//!     // Blocking disk I/O: run it with step::blocking(..), which keeps
//!     // the operation's span so logs/progress belong to the operation.
//!     let hash = step::blocking(move || {
//!         let phase = Phase::start("write/disk", "Write disk", Unit::Bytes, Some(total));
//!         // ... phase.add(n) ...; phase.done();
//!         Ok(image_hash)
//!     }).await?;                       // `?` turns a TridentError into a StepError
//!     let mut status = step::next_status(&ctx.engine.host_status()?);
//!     status.servicing_state = ServicingState::CleanInstallFinalized;
//!     Ok(StepOutcome {
//!         status: Some(status),        // committed with the operation's end, ONE transaction
//!         reboot: Some(RebootRequest { reason: "...".into(), handling }), // after the commit
//!         image_hash: Some(hash),      // Completed.image_hash
//!         servicing_kind: None,        // defaults to the request's kind
//!         keep_last_error: false,      // the success clears lastError
//!     })
//! }
//!
//! // in the daemon's gRPC handler (tridentd's `grpc/`), with the caller's traceparent:
//! let meta = ServicingRequest { rpc: "StreamDisk", kind: ServicingKind::CleanInstall, parent, nothing_to_do: None, settles: None };
//! let started = runner::start(&engine, meta, move |ctx| stream_disk_step(ctx, url)).await?;
//! ```
//!
//! [`machinery::runner::start`]:
//! * takes the global servicing lock or refuses at once, naming the
//!   running operation (id, rpc; the gRPC layer answers UNAVAILABLE);
//! * starts the telemetry operation (`trident_telemetry::operation`) with the
//!   caller's W3C `traceparent`, records it in the datastore (running);
//! * runs the step in a spawned task holding the servicing lock and a
//!   keep-alive guard (idle shutdown waits), inside the operation's span — a
//!   client that disconnects does not cancel it;
//! * on success commits `status` (lastError cleared) and the operation end
//!   in one transaction, then carries out the reboot request; on failure
//!   (`Err(StepError)`, or any `TridentError` via `?`) records the error as
//!   last error (with `StepError::status` if the step sets a failure state),
//!   reports it on the bus (`Bus::report_error`);
//! * publishes the operation's completed record (status, error, reboot
//!   status, image hash, servicing kind): the servicing stream, built from
//!   the bus, ends with it as `Completed`.
//!
//! Steps that need an intermediate state (stage+finalize in one RPC) call
//! [`machinery::runner::StepContext::commit_status`]. Queries take
//! `engine.connection_lock` in read mode; the runner takes it in write mode
//! around each state transition (see [`locks`]).
//!
//! # Disk-image targets and the boot record
//!
//! See [`boot_record`] for how "which volume booted" works without
//! rebooting anything.

pub mod block_device;
pub mod boot_control;
pub mod boot_record;
pub mod config_accepted;
pub mod download_retries;
pub mod extensions;
pub mod flows;
pub mod image;
pub mod install_safety;
pub mod interrupt;
pub mod keep_alive;
pub mod locks;
pub mod machinery;
pub mod new_root;
pub mod new_storage;
pub mod os_config;
pub mod reboot;
pub mod scripts;
pub mod settings;
pub mod step_ids;
pub mod systemd_check;
