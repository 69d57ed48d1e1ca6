//! Telemetry of tridentd: a `tracing` layer that turns spans and events into
//! typed records on one in-process bus, the bus itself, and its exporters.
