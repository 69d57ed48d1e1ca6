//! Live progress: a state model fed by stream events, and pure renderers.
