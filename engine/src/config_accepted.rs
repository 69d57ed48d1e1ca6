//! What the engine tells when an operation's Host Configuration has
//! validated, without knowing who listens: the daemon's composition root
//! hands `Engine::new` its legacy bridge, which posts upstream's
//! phonehome/logstream for a configuration that still asks for them.

use std::fmt;
use std::sync::Arc;

use trident_host::config::HostConfiguration;

/// Reads the current Host Status as YAML (redacted), for whoever reports it.
pub type HostStatusYaml = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// Told once per operation, when its Host Configuration has validated.
pub trait ConfigAccepted: Send + Sync + fmt::Debug {
    /// `hc` validated for operation `operation_id` of `rpc`. Must not
    /// block: servicing goes on as soon as it returns.
    fn config_accepted(
        &self,
        hc: &HostConfiguration,
        operation_id: &str,
        rpc: &str,
        host_status: HostStatusYaml,
    );
}
