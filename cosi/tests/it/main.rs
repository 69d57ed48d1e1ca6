//! The integration tests of `trident-cosi`, one binary: one module per
//! former test file, and `common`, the fixtures they share.

mod chunk_index;
mod common;
mod faulty_http;
mod metadata;
mod pack_images;
mod pack_verity;
mod resume;
mod sizes;
mod source;
mod stream_to_target;
mod vectors;
