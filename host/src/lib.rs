#![cfg_attr(test, allow(clippy::unwrap_used))]
//! The host servicing model shared by the daemon and the CLI's offline
//! commands: the error model, the Host Configuration (parse + validate),
//! the Host Status, and the SQLite datastore.

pub mod boot_id;
pub mod config;
pub mod convert;
pub mod datastore;
pub mod error;
pub mod kebab_name;
pub mod names;
pub mod redact;
pub mod status;
pub mod time_util;

pub use convert::InvalidMessage;
pub use error::{Category, ContextExt, ErrorRecord, ResultExt, Subkind, TridentError};
pub use kebab_name::{KebabName, NoCounterpart};
