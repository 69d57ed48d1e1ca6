//! Which of our additions a client opted in to (request header
//! [`ADDITIONS_HEADER`]), and the one place that takes our fields out of
//! upstream's messages for clients that did not.
//!
//! Without the header every upstream message the daemon sends is exactly
//! what upstream Trident sends: none of our fields numbered 1000 and up is
//! set and a servicing stream carries no `progress` or `error_report`
//! member (upstream's Rust client fails an operation on a response it does
//! not know). Handlers fill messages in full and pass them through here.

use tonic::metadata::MetadataMap;
use trident_proto::v1::{Started, TridentError, VersionResponse};
use trident_proto::{
    ADDITION_ALL, ADDITION_DROPS, ADDITION_ERROR_REPORT, ADDITION_IDS, ADDITION_PROGRESS,
    ADDITION_REBOOT_ACTION, ADDITION_WARNINGS, ADDITIONS_HEADER,
};

/// Our additions a client opted in to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Additions {
    /// `ServicingResponse.progress` messages on servicing streams.
    pub progress: bool,
    /// Our 1000+ fields of `Started`, `TridentError` and `VersionResponse`.
    pub ids: bool,
    /// `ServicingResponse.error_report`: the operation's full error report.
    pub error_report: bool,
    /// `Completed.reboot_action`: what the daemon does about a started reboot.
    pub reboot_action: bool,
    /// `ValidateHostConfigurationResponse.warnings`.
    pub warnings: bool,
    /// `ServicingResponse.drops` on servicing streams.
    pub drops: bool,
}

impl Additions {
    /// Every addition (what `all` asks for).
    pub const ALL: Additions = Additions {
        progress: true,
        ids: true,
        error_report: true,
        reboot_action: true,
        warnings: true,
        drops: true,
    };

    /// Reads every `trident-additions` value (comma lists, case-insensitive);
    /// names this daemon does not know are ignored, so newer clients keep
    /// working.
    pub fn from_metadata(metadata: &MetadataMap) -> Additions {
        let names = metadata
            .get_all(ADDITIONS_HEADER)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim);
        names.fold(Additions::default(), Additions::with)
    }

    /// `self` plus the addition `name` (unknown names change nothing).
    fn with(self, name: &str) -> Additions {
        let is = |known: &str| name.eq_ignore_ascii_case(known);
        if is(ADDITION_ALL) {
            Additions::ALL
        } else if is(ADDITION_PROGRESS) {
            Additions {
                progress: true,
                ..self
            }
        } else if is(ADDITION_IDS) {
            Additions { ids: true, ..self }
        } else if is(ADDITION_ERROR_REPORT) {
            Additions {
                error_report: true,
                ..self
            }
        } else if is(ADDITION_REBOOT_ACTION) {
            Additions {
                reboot_action: true,
                ..self
            }
        } else if is(ADDITION_DROPS) {
            Additions {
                drops: true,
                ..self
            }
        } else if is(ADDITION_WARNINGS) {
            Additions {
                warnings: true,
                ..self
            }
        } else {
            self
        }
    }

    /// `started` as this client may see it.
    pub fn started(self, started: Started) -> Started {
        if self.ids {
            started
        } else {
            Started::default()
        }
    }

    /// `error` as this client may see it: upstream's fields 1-5 only
    /// unless it opted in to `ids`.
    pub fn error(self, error: TridentError) -> TridentError {
        if self.ids {
            return error;
        }
        TridentError {
            context: Vec::new(),
            causes: Vec::new(),
            operation_id: String::new(),
            trace_id: String::new(),
            timestamp: None,
            ..error
        }
    }

    /// `response` as this client may see it.
    pub fn version(self, response: VersionResponse) -> VersionResponse {
        if self.ids {
            return response;
        }
        VersionResponse {
            git_commit: String::new(),
            boot_id: String::new(),
            ..response
        }
    }
}

#[cfg(test)]
mod tests {
    use tonic::metadata::MetadataValue;

    use super::*;

    fn of(values: &[&'static str]) -> Additions {
        let mut metadata = MetadataMap::new();
        for value in values {
            metadata.append(ADDITIONS_HEADER, MetadataValue::from_static(value));
        }
        Additions::from_metadata(&metadata)
    }

    #[test]
    fn no_header_means_no_addition() {
        assert_eq!(of(&[]), Additions::default());
    }

    #[test]
    fn names_combine_across_lists_and_headers_and_unknown_ones_are_ignored() {
        let additions = of(&["some-future-thing, PROGRESS", " ids "]);
        assert_eq!(
            additions,
            Additions {
                progress: true,
                ids: true,
                error_report: false,
                reboot_action: false,
                warnings: false,
                drops: false,
            }
        );
        assert_eq!(of(&["error-report,all"]), Additions::ALL);
        assert_eq!(of(&["nothing-we-know"]), Additions::default());
    }

    #[test]
    fn without_ids_an_error_keeps_only_upstream_fields() {
        let full = TridentError {
            kind: 3,
            subkind: "x".into(),
            message: "full".into(),
            error_message: "short".into(),
            causes: vec!["cause".into()],
            operation_id: "op".into(),
            trace_id: "t".into(),
            ..TridentError::default()
        };
        let strict = Additions::default().error(full.clone());
        assert_eq!(strict.message, "full");
        assert!(strict.causes.is_empty() && strict.operation_id.is_empty());
        assert!(strict.trace_id.is_empty());
        assert_eq!(Additions::ALL.error(full.clone()), full);
    }
}
