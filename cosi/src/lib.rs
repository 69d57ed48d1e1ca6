//! The COSI 1.2 image format.
