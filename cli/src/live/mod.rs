//! The live view of a running operation: the one loop that reads any
//! daemon stream into it ([`read`]), following an operation through Watch
//! with resume ([`follow`]), through its servicing stream with a Watch
//! fallback ([`servicing_stream`]), and the driver that draws it
//! ([`progress`]).

pub mod follow;
pub mod progress;
pub mod read;
pub mod servicing_stream;
