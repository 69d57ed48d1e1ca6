//! `file://` and `http(s)://` sources as plain byte streams (the scheme
//! dispatch is in `source/mod.rs`); `http.rs` resumes a broken download,
//! `identity.rs` tells one file's answers from another's, `resume.rs`
//! keeps the retry bookkeeping it shares with `oci://` pulls.

mod http;
mod identity;
mod ranges;
pub(crate) mod resume;

pub use ranges::{RangeReader, RangeStream};

use std::fs::File;
use std::io::Read;

use super::options::SourceOptions;
use crate::error::CosiError;

/// A readable image stream.
pub(crate) type ImageStream = Box<dyn Read + Send>;

/// `file:///abs/path` (`path` the part after the scheme) or a bare
/// absolute path.
pub(super) fn open_file(url: &str, path: &str) -> Result<ImageStream, CosiError> {
    // file://host/path is not supported; file:///path has an empty host.
    if !path.starts_with('/') {
        return Err(CosiError::UnsupportedUrl {
            url: url.to_owned(),
        });
    }
    let file = File::open(path).map_err(|source| CosiError::Open {
        url: url.to_owned(),
        source,
    })?;
    Ok(Box::new(file))
}

/// `http(s)://...`, within `options`' timeouts, resumed after a break
/// within its resume policy.
pub(super) fn open_http(url: &str, options: &SourceOptions) -> Result<ImageStream, CosiError> {
    Ok(Box::new(http::HttpDownload::open(url, options)?))
}
