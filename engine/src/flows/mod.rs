//! The flows: one file per servicing RPC's steps (install, A/B update and
//! runtime update, commit, rollback, rebuild-raid, StreamDisk), the parts
//! of them more than one flow shares (the new-root step, the datastore
//! handoff) and the read-only answers (`query`). The top layer: nothing
//! else in the engine names a flow; the daemon's gRPC handlers hand them
//! to the runner (`crate::machinery::runner`).

pub mod commit;
mod finalize;
pub mod handoff;
pub mod install;
pub mod new_root_step;
pub mod query;
pub mod rebuild_raid;
pub mod rollback;
pub mod runtime_update;
pub mod stream_disk;
pub mod update;
