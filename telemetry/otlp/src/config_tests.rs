//! Tests of the export settings.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use super::*;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

#[test]
fn export_is_off_without_an_endpoint() {
    let config = OtlpConfig::resolve(&OtlpFlags::default(), env(&[])).unwrap();
    assert!(config.is_none());
}

#[test]
fn sdk_disabled_wins_over_an_endpoint() {
    let flags = OtlpFlags {
        endpoint: Some("http://127.0.0.1:4317".into()),
        ..OtlpFlags::default()
    };
    let config = OtlpConfig::resolve(&flags, env(&[(ENV_SDK_DISABLED, "TRUE")])).unwrap();
    assert!(config.is_none());
}

#[test]
fn standard_variables_turn_export_on_with_grpc_by_default() {
    let config = OtlpConfig::resolve(
        &OtlpFlags::default(),
        env(&[
            (ENV_OTLP_ENDPOINT, "http://collector:4317/"),
            (ENV_SERVICE_NAME, "edge-node"),
            (
                ENV_RESOURCE_ATTRIBUTES,
                "deployment.environment=prod,team=a%2Cb,bad",
            ),
            (ENV_TRACES_SAMPLER, "parentbased_traceidratio"),
            (ENV_TRACES_SAMPLER_ARG, "0.25"),
        ]),
    )
    .unwrap()
    .unwrap();
    assert_eq!(config.endpoint, "http://collector:4317");
    assert_eq!(config.protocol, OtlpProtocol::Grpc);
    assert_eq!(config.service_name, "edge-node");
    assert_eq!(
        config.extra_resource,
        vec![
            ("deployment.environment".into(), "prod".into()),
            ("team".into(), "a,b".into())
        ]
    );
    assert_eq!(config.sampler, SamplerChoice::ParentBasedRatio(0.25));
}

#[test]
fn flags_win_over_the_environment() {
    let flags = OtlpFlags {
        endpoint: Some("http://127.0.0.1:4318".into()),
        protocol: Some("http/protobuf".into()),
        timeout: Some(Duration::from_millis(700)),
    };
    let config = OtlpConfig::resolve(
        &flags,
        env(&[
            (ENV_OTLP_ENDPOINT, "http://other:4317"),
            (ENV_OTLP_PROTOCOL, "grpc"),
        ]),
    )
    .unwrap()
    .unwrap();
    assert_eq!(config.protocol, OtlpProtocol::HttpProtobuf);
    assert_eq!(config.timeout, Duration::from_millis(700));
    assert_eq!(
        config.signal_url("traces"),
        "http://127.0.0.1:4318/v1/traces"
    );
}

#[test]
fn bad_settings_are_clear_errors() {
    let bad = |pairs: &[(&str, &str)]| {
        OtlpConfig::resolve(&OtlpFlags::default(), env(pairs))
            .unwrap_err()
            .to_string()
    };
    assert!(bad(&[(ENV_OTLP_ENDPOINT, "collector:4317")]).contains("not an http"));
    assert!(
        bad(&[
            (ENV_OTLP_ENDPOINT, "http://c:1"),
            (ENV_METRIC_EXPORT_INTERVAL, "soon")
        ])
        .contains("OTEL_METRIC_EXPORT_INTERVAL=\"soon\" is not a positive whole number")
    );
    assert!(
        bad(&[
            (ENV_OTLP_ENDPOINT, "http://c:1"),
            (ENV_OTLP_PROTOCOL, "http/json")
        ])
        .contains("unsupported OTLP protocol")
    );
    assert!(
        bad(&[
            (ENV_OTLP_ENDPOINT, "http://c:1"),
            (ENV_TRACES_SAMPLER, "sometimes")
        ])
        .contains("unknown OTEL_TRACES_SAMPLER")
    );
    assert!(
        bad(&[
            (ENV_OTLP_ENDPOINT, "http://c:1"),
            (ENV_TRACES_SAMPLER, "traceidratio"),
            (ENV_TRACES_SAMPLER_ARG, "2")
        ])
        .contains("ratio")
    );
}
