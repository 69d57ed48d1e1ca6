//! The integration tests of `trident-host`, one binary: one module per former
//! test file.

mod fixtures;
mod storage_graph_samples;
mod upstream_samples;
