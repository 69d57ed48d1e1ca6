use super::*;
use crate::kebab_name::KebabName;
use trident_proto::v1;

#[derive(Debug, thiserror::Error)]
#[error("disk on fire")]
struct Fire(#[source] std::io::Error);

#[test]
fn location_points_at_the_caller_and_context_has_its_own() {
    let line = line!() + 1;
    let err = TridentError::new(Subkind::WriteImage, "write failed");
    assert_eq!(err.location().line, line);
    assert!(err.location().file.ends_with("tests.rs"));
    let r: Result<(), _> = Err(err);
    let ctx_line = line!() + 1;
    let err = r.context("staging update").err().unwrap();
    assert_eq!(err.context_chain()[0].location.line, ctx_line);
    assert_eq!(err.category(), Category::Servicing);
    assert_eq!(err.to_string(), "staging update: write failed");
}

#[test]
fn structured_keeps_the_cause_chain() {
    let io = std::io::Error::other("no space");
    let r: Result<(), Fire> = Err(Fire(io));
    let err = r.structured(Subkind::Io).err().unwrap();
    assert_eq!(err.causes(), vec!["disk on fire", "no space"]);
    assert_eq!(err.message(), Subkind::Io.default_message());
    let proto = v1::TridentError::from(&err.record());
    assert_eq!(proto.kind, v1::TridentErrorKind::InternalError as i32);
    assert_eq!(proto.subkind, "io");
    assert_eq!(proto.causes.len(), 2);
    assert!(proto.message.contains("caused by: no space"));
}

#[test]
fn grpc_codes_follow_the_wire_doc() {
    use tonic::Code;
    assert_eq!(Category::InvalidInput.grpc_code(), Code::InvalidArgument);
    assert_eq!(Category::Internal.grpc_code(), Code::Internal);
    assert_eq!(
        Category::UnsupportedConfiguration.grpc_code(),
        Code::FailedPrecondition
    );
    assert_eq!(
        Category::Initialization.grpc_code(),
        Code::FailedPrecondition
    );
    assert_eq!(
        Category::ExecutionEnvironmentMisconfiguration.grpc_code(),
        Code::FailedPrecondition
    );
    assert_eq!(Category::Servicing.grpc_code(), Code::Unknown);
    assert_eq!(Category::HealthChecks.grpc_code(), Code::Unknown);
    let status: tonic::Status = TridentError::of(Subkind::UnknownKey).into();
    assert_eq!(status.code(), Code::InvalidArgument);
}

#[test]
fn record_round_trips_through_proto() {
    let err = TridentError::of(Subkind::HealthCheckFailed).context("commit");
    let rec = err.record().stamped("op-1", "0123");
    let back = ErrorRecord::try_from(&v1::TridentError::from(&rec)).unwrap();
    assert_eq!(back.subkind, "health-check-failed");
    assert_eq!(back.category, Category::HealthChecks);
    assert_eq!(back.context, rec.context);
    assert_eq!(back.operation_id.as_deref(), Some("op-1"));
    assert!(back.timestamp.is_some());
}

#[test]
fn last_error_yaml_has_the_upstream_keys() {
    assert_eq!(last_error_yaml(None), "null\n");
    let r: Result<(), _> = Err(std::io::Error::other("boom"));
    let rec = r.structured(Subkind::WriteImage).err().unwrap().record();
    let yaml = last_error_yaml(Some(&rec));
    for key in [
        "message:",
        "error: write-image",
        "category: servicing",
        "location:",
        "cause: boom",
    ] {
        assert!(yaml.contains(key), "{key} missing in {yaml}");
    }
}

#[test]
fn subkind_names_are_unique_kebab_case() {
    let mut seen = std::collections::HashSet::new();
    for k in Subkind::ALL {
        assert!(seen.insert(k.kebab_name()));
        assert!(
            k.kebab_name()
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-')
        );
        assert_eq!(k.kebab_name().parse::<Subkind>(), Ok(*k));
    }
}

#[test]
fn a_wire_error_with_an_unknown_kind_names_the_field() {
    let rec = TridentError::of(Subkind::WriteImage).record();
    let mut wire = v1::TridentError::from(&rec);
    wire.kind = 42;
    assert_eq!(
        ErrorRecord::try_from(&wire),
        Err(crate::InvalidMessage::UnknownValue {
            field: "kind",
            value: 42
        })
    );
    wire.kind = v1::TridentErrorKind::Unspecified as i32;
    let err = ErrorRecord::try_from(&wire).unwrap_err();
    assert!(err.to_string().starts_with("kind: "), "{err}");
}

#[test]
fn a_wire_error_without_a_location_is_refused() {
    let rec = TridentError::of(Subkind::WriteImage)
        .context("stage")
        .record();
    let mut wire = v1::TridentError::from(&rec);
    wire.context[0].location = None;
    assert_eq!(
        ErrorRecord::try_from(&wire),
        Err(crate::InvalidMessage::Missing {
            field: "context.location"
        })
    );
    wire.location = None;
    assert_eq!(
        ErrorRecord::try_from(&wire),
        Err(crate::InvalidMessage::Missing { field: "location" })
    );
}

#[test]
fn the_bus_report_carries_the_record() {
    let rec = TridentError::of(Subkind::ScriptFailed)
        .context("finalize")
        .record()
        .stamped("op-2", "abcd");
    let report = v1::ErrorReport::from(&rec);
    assert_eq!(report.category, v1::TridentErrorKind::ServicingError as i32);
    assert_eq!(report.subkind, "script-failed");
    assert_eq!(report.operation_id, "op-2");
    assert_eq!(report.context.len(), 1);
    assert_eq!(report.report, rec.report());
    assert!(report.timestamp.is_some());
}
