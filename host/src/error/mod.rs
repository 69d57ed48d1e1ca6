//! The typed error model: category + subkind, message, source location,
//! a context chain (each message with its own location) and a cause chain.
//!
//! Raise with [`TridentError::new`], wrap foreign errors with
//! [`ResultExt::structured`], add context with [`ContextExt::context`].
//! Locations are captured with `#[track_caller]`, so they name the line of
//! the caller, not this file.

mod kind;
mod record;
mod wire;

use std::error::Error as StdError;
use std::fmt;
use std::panic::Location as CallerLocation;

pub use kind::{Category, Subkind};
pub use record::{ContextEntry, ErrorRecord, SourceLocation, last_error_yaml};

use crate::kebab_name::KebabName;

/// A structured Trident error. Cheap to move (boxed).
pub struct TridentError(Box<Inner>);

struct Inner {
    subkind: Subkind,
    message: String,
    location: SourceLocation,
    /// Outermost first.
    context: Vec<ContextEntry>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl TridentError {
    /// A new error with its own message.
    #[track_caller]
    pub fn new(subkind: Subkind, message: impl Into<String>) -> Self {
        Self::build(subkind, message.into(), None, CallerLocation::caller())
    }

    /// A new error with the subkind's default message.
    #[track_caller]
    pub fn of(subkind: Subkind) -> Self {
        Self::build(
            subkind,
            subkind.default_message().to_owned(),
            None,
            CallerLocation::caller(),
        )
    }

    /// A new error caused by `source`.
    #[track_caller]
    pub fn with_source(
        subkind: Subkind,
        message: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        Self::build(
            subkind,
            message.into(),
            Some(Box::new(source)),
            CallerLocation::caller(),
        )
    }

    fn build(
        subkind: Subkind,
        message: String,
        source: Option<Box<dyn StdError + Send + Sync + 'static>>,
        caller: &'static CallerLocation<'static>,
    ) -> Self {
        Self(Box::new(Inner {
            subkind,
            message: without_url_credentials(message),
            location: SourceLocation::from_caller(caller),
            context: Vec::new(),
            source,
        }))
    }

    /// Adds an outer context message located at the caller.
    #[track_caller]
    pub fn context(mut self, message: impl Into<String>) -> Self {
        self.0.context.insert(
            0,
            ContextEntry {
                message: without_url_credentials(message.into()),
                location: SourceLocation::from_caller(CallerLocation::caller()),
            },
        );
        self
    }

    pub fn category(&self) -> Category {
        self.0.subkind.category()
    }

    pub fn subkind(&self) -> Subkind {
        self.0.subkind
    }

    /// The short message.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    pub fn location(&self) -> &SourceLocation {
        &self.0.location
    }

    /// Context messages, outermost first.
    pub fn context_chain(&self) -> &[ContextEntry] {
        &self.0.context
    }

    /// Messages of the underlying errors, outermost first.
    pub fn causes(&self) -> Vec<String> {
        let mut causes = Vec::new();
        let mut next: Option<&(dyn StdError + 'static)> = match &self.0.source {
            Some(source) => Some(source.as_ref()),
            None => None,
        };
        while let Some(err) = next {
            causes.push(without_url_credentials(err.to_string()));
            next = err.source();
        }
        causes
    }

    /// The full human-readable report: context, message, location, causes.
    pub fn report(&self) -> String {
        self.record().report()
    }

    /// The persistable, cloneable form of this error.
    pub fn record(&self) -> ErrorRecord {
        ErrorRecord {
            category: self.category(),
            subkind: self.subkind().kebab_name().to_owned(),
            message: self.0.message.clone(),
            location: self.0.location.clone(),
            context: self.0.context.clone(),
            causes: self.causes(),
            operation_id: None,
            trace_id: None,
            timestamp: None,
        }
    }
}

/// An error quotes a URL (an image source, an HTTP client's message)
/// without its credentials: a password in `user:PASSWORD@` or a signature
/// in the query string never reaches a report, a log line or the datastore.
fn without_url_credentials(text: String) -> String {
    match crate::redact::url::redact_urls(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(redacted) => redacted,
    }
}

impl fmt::Debug for TridentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TridentError")
            .field("subkind", &self.0.subkind)
            .field("message", &self.0.message)
            .field("location", &self.0.location.to_string())
            .field("context", &self.0.context)
            .field("causes", &self.causes())
            .finish()
    }
}

impl fmt::Display for TridentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.context.first() {
            Some(outer) => write!(f, "{}: {}", outer.message, self.0.message),
            None => f.write_str(&self.0.message),
        }
    }
}

impl StdError for TridentError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.0.source {
            Some(source) => Some(source.as_ref()),
            None => None,
        }
    }
}

impl From<TridentError> for tonic::Status {
    /// The single mapping of an error returned outside a servicing stream.
    fn from(err: TridentError) -> Self {
        tonic::Status::new(err.category().grpc_code(), err.report())
    }
}

/// Turns any `Result<T, E: Error>` into a structured error.
pub trait ResultExt<T> {
    /// Wraps the error as the cause of a `subkind` error with the
    /// subkind's default message.
    #[track_caller]
    fn structured(self, subkind: Subkind) -> Result<T, TridentError>;

    /// Wraps the error as the cause of a `subkind` error with `message`.
    #[track_caller]
    fn structured_msg(
        self,
        subkind: Subkind,
        message: impl Into<String>,
    ) -> Result<T, TridentError>;
}

impl<T, E: StdError + Send + Sync + 'static> ResultExt<T> for Result<T, E> {
    #[track_caller]
    fn structured(self, subkind: Subkind) -> Result<T, TridentError> {
        let caller = CallerLocation::caller();
        self.map_err(|e| {
            TridentError::build(
                subkind,
                subkind.default_message().to_owned(),
                Some(Box::new(e)),
                caller,
            )
        })
    }

    #[track_caller]
    fn structured_msg(
        self,
        subkind: Subkind,
        message: impl Into<String>,
    ) -> Result<T, TridentError> {
        let caller = CallerLocation::caller();
        self.map_err(|e| TridentError::build(subkind, message.into(), Some(Box::new(e)), caller))
    }
}

/// Adds context to a `Result<T, TridentError>`.
pub trait ContextExt<T> {
    #[track_caller]
    fn context(self, message: impl Into<String>) -> Result<T, TridentError>;

    /// Like `context`, computing the message only on error.
    #[track_caller]
    fn with_context<M: Into<String>>(self, f: impl FnOnce() -> M) -> Result<T, TridentError>;
}

impl<T> ContextExt<T> for Result<T, TridentError> {
    #[track_caller]
    fn context(self, message: impl Into<String>) -> Result<T, TridentError> {
        let caller = CallerLocation::caller();
        self.map_err(|e| e.context_at(message.into(), caller))
    }

    #[track_caller]
    fn with_context<M: Into<String>>(self, f: impl FnOnce() -> M) -> Result<T, TridentError> {
        let caller = CallerLocation::caller();
        self.map_err(|e| e.context_at(f().into(), caller))
    }
}

impl TridentError {
    fn context_at(mut self, message: String, caller: &'static CallerLocation<'static>) -> Self {
        self.0.context.insert(
            0,
            ContextEntry {
                message: without_url_credentials(message),
                location: SourceLocation::from_caller(caller),
            },
        );
        self
    }
}

#[cfg(test)]
mod tests;
