//! A Host Configuration that passed every check, carrying the block-device
//! graph its validation built, so whoever services it resolves devices
//! through that graph instead of building it again. Only validation
//! ([`super::parse_validated`], [`super::validated`]) makes one.

use super::HostConfiguration;
use super::storage_graph::StorageGraph;

/// A validated Host Configuration and its storage graph.
#[derive(Debug, Clone)]
pub struct ValidatedConfig {
    config: HostConfiguration,
    graph: StorageGraph,
}

impl ValidatedConfig {
    /// Validation's own constructor: `graph` is `config`'s, checked.
    pub(super) fn new(config: HostConfiguration, graph: StorageGraph) -> Self {
        ValidatedConfig { config, graph }
    }

    pub fn config(&self) -> &HostConfiguration {
        &self.config
    }

    /// The block-device graph of [`ValidatedConfig::config`]'s storage.
    pub fn graph(&self) -> &StorageGraph {
        &self.graph
    }

    /// The configuration alone (to record it, or change it).
    pub fn into_config(self) -> HostConfiguration {
        self.config
    }
}
