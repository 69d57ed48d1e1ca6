pub mod bytes;
pub mod hash;
pub mod shortcuts;
pub mod version;
