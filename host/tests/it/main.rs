//! The integration tests of `trident-host`, one binary: one module per former
//! test file or test binary (`upstream_datastores`, with its own modules).

mod fixtures;
mod storage_graph_samples;
mod upstream_datastores;
mod upstream_samples;
