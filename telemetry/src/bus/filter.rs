//! Watch filters: which records of the ring a subscriber receives.

use std::collections::HashSet;
use std::sync::Arc;

use trident_proto::v1::{LogLevel, Record, RecordKind, WatchOptions, record};

use super::ring::Entry;

/// A subscriber's filter, checked first on ring metadata (cheap) and then
/// on the decoded record.
#[derive(Debug)]
pub(crate) struct WatchFilter {
    kinds: u8,
    /// Most verbose log level wanted (`LogLevel as u8`); 0 = all.
    max_level: u8,
    target_prefixes: Vec<String>,
    operation: Option<Arc<str>>,
    span_name: Option<String>,
    /// Span ids (hex) of spans named `span_name` and their descendants.
    span_scope: HashSet<String>,
    /// Only records of this boot (journal replays check it per record).
    boot: Option<String>,
    /// Whether the ring (this run) is in the wanted boot; true without one.
    ring_in_boot: bool,
}

impl WatchFilter {
    /// The filter of `options`; `current_boot` is the boot of this run.
    pub fn new(options: &WatchOptions, kinds: u8, current_boot: &str) -> Self {
        let boot = (!options.boot_id.is_empty()).then(|| options.boot_id.clone());
        let max_level = match LogLevel::try_from(options.min_level) {
            Ok(LogLevel::Unspecified) | Err(_) => 0,
            Ok(level) => level as u8,
        };
        WatchFilter {
            kinds,
            max_level,
            target_prefixes: options.target_prefixes.clone(),
            operation: (!options.operation_id.is_empty())
                .then(|| Arc::from(options.operation_id.as_str())),
            span_name: (!options.span_name.is_empty()).then(|| options.span_name.clone()),
            span_scope: HashSet::new(),
            ring_in_boot: boot.as_deref().is_none_or(|b| b == current_boot),
            boot,
        }
    }

    /// The boot the subscriber is limited to.
    pub fn boot(&self) -> Option<&str> {
        self.boot.as_deref()
    }

    /// Whether this run's records (the ring) can match at all.
    pub fn ring_in_boot(&self) -> bool {
        self.ring_in_boot
    }

    /// Whether records must be decoded to be checked (target or span
    /// filters); otherwise the ring metadata decides.
    pub fn needs_decode(&self) -> bool {
        !self.target_prefixes.is_empty() || self.span_name.is_some()
    }

    /// Whether the subscriber is limited to spans of a name.
    pub fn has_span_name(&self) -> bool {
        self.span_name.is_some()
    }

    /// The operation the subscriber is limited to.
    pub fn operation(&self) -> Option<&str> {
        self.operation.as_deref()
    }

    /// Checks what the ring knows without decoding.
    pub fn accepts_entry(&self, entry: &Entry) -> bool {
        if !self.ring_in_boot || self.kinds & (1 << entry.kind) == 0 {
            return false;
        }
        if entry.kind == RecordKind::Log as u8
            && self.max_level != 0
            && entry.level > self.max_level
        {
            return false;
        }
        match &self.operation {
            Some(op) => entry.operation.as_deref() == Some(&**op),
            None => true,
        }
    }

    /// Checks a decoded record (targets, span scope). Also applies the
    /// cheap checks, for records that did not come from the ring.
    pub fn accepts_record(&mut self, record: &Record) -> bool {
        if !self.matches_static(record) {
            return false;
        }
        let Some(name) = &self.span_name else {
            return true;
        };
        match &record.record {
            Some(record::Record::Log(log)) => self.span_scope.contains(&log.span_id),
            Some(record::Record::Span(span)) => {
                let inside = span.name == *name || self.span_scope.contains(&span.parent_span_id);
                if inside {
                    self.span_scope.insert(span.span_id.clone());
                }
                inside
            }
            _ => true,
        }
    }

    /// Every check except the span scope (which needs the records in order).
    pub fn matches_static(&self, record: &Record) -> bool {
        let kind = crate::record::kind_of(record);
        if self.kinds & (1 << (kind as u8)) == 0 {
            return false;
        }
        if let Some(op) = &self.operation
            && crate::record::operation_of(record) != &**op
        {
            return false;
        }
        match &record.record {
            Some(record::Record::Log(log)) => {
                (self.max_level == 0 || log.level <= i32::from(self.max_level))
                    && self.target_ok(&log.target)
            }
            Some(record::Record::Span(span)) => self.target_ok(&span.target),
            _ => true,
        }
    }

    fn target_ok(&self, target: &str) -> bool {
        self.target_prefixes.is_empty()
            || self
                .target_prefixes
                .iter()
                .any(|p| target.starts_with(p.as_str()))
    }
}
