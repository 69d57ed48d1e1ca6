//! What a support engineer opens: the span tree of an operation as Chrome
//! trace-event JSON (`trident traces --format chrome`, for Perfetto) and the
//! self-contained `report.html` of `trident diagnose`. Both are built from
//! records and data the CLI already fetches; nothing here talks to the
//! daemon.

pub mod chrome;
mod escape;
pub mod html;
mod html_sections;
pub mod spans;
mod waterfall;
