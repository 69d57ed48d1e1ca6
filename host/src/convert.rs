//! The one error of every conversion from a wire message into the host
//! model ([`InvalidMessage`], always naming the field), and the helpers
//! that read a protobuf enum field (an `i32` on the wire) strictly: an
//! unknown value is an error, never a default.
//!
//! The daemon answers these with INVALID_ARGUMENT through the one
//! `TridentError` -> `tonic::Status` mapping (`From<InvalidMessage>` gives
//! an invalid-input `invalid-request` error).

use crate::error::{Subkind, TridentError};
use crate::kebab_name::NoCounterpart;

/// Why a wire message does not convert into the host model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidMessage {
    /// An enum number this build of the API does not know.
    #[error("{field}: {value} is not a known value")]
    UnknownValue { field: &'static str, value: i32 },
    /// A known enum value the host model has no counterpart for.
    #[error("{field}: {source}")]
    NoCounterpart {
        field: &'static str,
        #[source]
        source: NoCounterpart,
    },
    /// A message field that must be set.
    #[error("{field} is required")]
    Missing { field: &'static str },
    /// A value outside what the field can hold (e.g. a timestamp).
    #[error("{field} is out of range")]
    OutOfRange { field: &'static str },
}

impl From<InvalidMessage> for TridentError {
    fn from(err: InvalidMessage) -> Self {
        TridentError::with_source(Subkind::InvalidRequest, err.to_string(), err)
    }
}

/// Reads the enum field `field` as its protobuf enum.
pub fn proto_enum<P: TryFrom<i32>>(field: &'static str, value: i32) -> Result<P, InvalidMessage> {
    P::try_from(value).map_err(|_| InvalidMessage::UnknownValue { field, value })
}

/// Reads the enum field `field` as its host-model counterpart.
pub fn host_enum<P, H>(field: &'static str, value: i32) -> Result<H, InvalidMessage>
where
    P: TryFrom<i32>,
    H: TryFrom<P, Error = NoCounterpart>,
{
    H::try_from(proto_enum::<P>(field, value)?)
        .map_err(|source| InvalidMessage::NoCounterpart { field, source })
}

#[cfg(test)]
mod tests {
    use trident_proto::v1::TridentErrorKind;
    use trident_proto::v1preview::ManualRollbackKind;

    use super::*;
    use crate::error::Category;

    #[test]
    fn an_unknown_enum_value_is_an_error_naming_the_field() {
        let err = proto_enum::<ManualRollbackKind>("kind", 99).unwrap_err();
        assert_eq!(
            err,
            InvalidMessage::UnknownValue {
                field: "kind",
                value: 99
            }
        );
        assert_eq!(err.to_string(), "kind: 99 is not a known value");
    }

    #[test]
    fn unspecified_has_no_host_counterpart() {
        let err = host_enum::<TridentErrorKind, Category>("kind", 0).unwrap_err();
        assert!(matches!(
            err,
            InvalidMessage::NoCounterpart { field: "kind", .. }
        ));
        assert_eq!(
            host_enum::<TridentErrorKind, Category>("kind", TridentErrorKind::InternalError as i32),
            Ok(Category::Internal)
        );
    }

    #[test]
    fn an_invalid_message_is_an_invalid_request() {
        let err = TridentError::from(InvalidMessage::Missing { field: "location" });
        assert_eq!(err.subkind(), Subkind::InvalidRequest);
        assert_eq!(err.message(), "location is required");
        let status = tonic::Status::from(err);
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
    }
}
