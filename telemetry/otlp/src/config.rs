//! Export settings: daemon flags first, then the standard `OTEL_*` variables.
//!
//! Export is off unless an endpoint is given, by `--otlp-endpoint` or by
//! `OTEL_EXPORTER_OTLP_ENDPOINT`.

use std::time::Duration;

use opentelemetry_sdk::trace::Sampler;

/// Env var: collector endpoint (same as `--otlp-endpoint`); export is off without one.
pub const ENV_OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// Env var: `grpc` (default) or `http/protobuf` (same as `--otlp-protocol`).
pub const ENV_OTLP_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// Env var: export timeout in milliseconds (same as `--otlp-timeout`).
pub const ENV_OTLP_TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
/// Env var: `true` turns export off whatever else is set (the standard kill switch).
pub const ENV_SDK_DISABLED: &str = "OTEL_SDK_DISABLED";
/// Env var: overrides `service.name` (default `tridentd`).
pub const ENV_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
/// Env var: extra resource attributes, `key=value,key=value` (percent-encoded values).
pub const ENV_RESOURCE_ATTRIBUTES: &str = "OTEL_RESOURCE_ATTRIBUTES";
/// Env var: trace sampler name (`always_on`, `always_off`, `traceidratio`,
/// `parentbased_always_on` (default), `parentbased_always_off`, `parentbased_traceidratio`).
pub const ENV_TRACES_SAMPLER: &str = "OTEL_TRACES_SAMPLER";
/// Env var: the sampler's argument (the ratio of the `*traceidratio` samplers).
pub const ENV_TRACES_SAMPLER_ARG: &str = "OTEL_TRACES_SAMPLER_ARG";

/// Env var: metrics collection/export interval, milliseconds (default 10000).
pub const ENV_METRIC_EXPORT_INTERVAL: &str = "OTEL_METRIC_EXPORT_INTERVAL";
/// Env var: delay between span exports, milliseconds (default 1000).
pub const ENV_BSP_SCHEDULE_DELAY: &str = "OTEL_BSP_SCHEDULE_DELAY";
/// Env var: spans queued for export at most (default 4096).
pub const ENV_BSP_MAX_QUEUE_SIZE: &str = "OTEL_BSP_MAX_QUEUE_SIZE";
/// Env var: delay between log exports, milliseconds (default 1000).
pub const ENV_BLRP_SCHEDULE_DELAY: &str = "OTEL_BLRP_SCHEDULE_DELAY";
/// Env var: log records queued for export at most (default 4096).
pub const ENV_BLRP_MAX_QUEUE_SIZE: &str = "OTEL_BLRP_MAX_QUEUE_SIZE";

/// `service.name` unless `OTEL_SERVICE_NAME` says otherwise.
pub const DEFAULT_SERVICE_NAME: &str = "tridentd";
/// Bound on one export request (connect + send + answer).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Spans / log records queued for export at most; beyond that they are dropped and counted.
pub const DEFAULT_MAX_QUEUE: usize = 4096;
/// Records per export request at most.
pub const DEFAULT_MAX_BATCH: usize = 512;
/// How often queued spans and logs are sent.
pub const DEFAULT_BATCH_DELAY: Duration = Duration::from_secs(1);
/// How often metrics are collected and sent.
pub const DEFAULT_METRICS_INTERVAL: Duration = Duration::from_secs(10);

/// Wire protocol of the export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// OTLP/gRPC (tonic), the default.
    Grpc,
    /// OTLP/HTTP with protobuf bodies (hyper).
    HttpProtobuf,
}

impl OtlpProtocol {
    /// Parses the `OTEL_EXPORTER_OTLP_PROTOCOL` spelling.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        match text.trim() {
            "grpc" => Ok(Self::Grpc),
            "http/protobuf" => Ok(Self::HttpProtobuf),
            other => Err(ConfigError::Protocol(other.to_string())),
        }
    }

    /// The `OTEL_EXPORTER_OTLP_PROTOCOL` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Grpc => "grpc",
            Self::HttpProtobuf => "http/protobuf",
        }
    }
}

/// Bad export settings.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unsupported OTLP protocol {0:?} (use \"grpc\" or \"http/protobuf\")")]
    Protocol(String),
    #[error("OTLP endpoint {0:?} is not an http:// or https:// URL")]
    Endpoint(String),
    #[error("{0}={1:?} is not a positive whole number")]
    Number(&'static str, String),
    #[error("unknown {ENV_TRACES_SAMPLER} {0:?}")]
    Sampler(String),
    #[error("{ENV_TRACES_SAMPLER_ARG}={0:?} is not a ratio between 0 and 1")]
    SamplerArg(String),
}

/// What the daemon's flags say; `None` means "ask the environment".
#[derive(Debug, Clone, Default)]
pub struct OtlpFlags {
    pub endpoint: Option<String>,
    pub protocol: Option<String>,
    pub timeout: Option<Duration>,
}

/// Resolved export settings.
#[derive(Debug, Clone)]
pub struct OtlpConfig {
    pub endpoint: String,
    pub protocol: OtlpProtocol,
    pub timeout: Duration,
    pub service_name: String,
    /// From `OTEL_RESOURCE_ATTRIBUTES`, in order.
    pub extra_resource: Vec<(String, String)>,
    pub sampler: SamplerChoice,
    pub span_queue: usize,
    pub log_queue: usize,
    pub max_batch: usize,
    pub span_delay: Duration,
    pub log_delay: Duration,
    pub metrics_interval: Duration,
    pub shutdown_timeout: Duration,
}

/// The configured trace sampler, kept printable for the startup log.
#[derive(Debug, Clone, PartialEq)]
pub enum SamplerChoice {
    AlwaysOn,
    AlwaysOff,
    Ratio(f64),
    ParentBasedAlwaysOn,
    ParentBasedAlwaysOff,
    ParentBasedRatio(f64),
}

impl SamplerChoice {
    fn parse(name: &str, arg: Option<&str>) -> Result<Self, ConfigError> {
        let ratio = || -> Result<f64, ConfigError> {
            match arg {
                None => Ok(1.0),
                Some(text) => text
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| ConfigError::SamplerArg(text.to_string())),
            }
        };
        Ok(match name.trim() {
            "always_on" => Self::AlwaysOn,
            "always_off" => Self::AlwaysOff,
            "traceidratio" => Self::Ratio(ratio()?),
            "parentbased_always_on" => Self::ParentBasedAlwaysOn,
            "parentbased_always_off" => Self::ParentBasedAlwaysOff,
            "parentbased_traceidratio" => Self::ParentBasedRatio(ratio()?),
            other => return Err(ConfigError::Sampler(other.to_string())),
        })
    }

    /// The SDK sampler.
    pub fn to_sampler(&self) -> Sampler {
        match *self {
            Self::AlwaysOn => Sampler::AlwaysOn,
            Self::AlwaysOff => Sampler::AlwaysOff,
            Self::Ratio(r) => Sampler::TraceIdRatioBased(r),
            Self::ParentBasedAlwaysOn => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
            Self::ParentBasedAlwaysOff => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
            Self::ParentBasedRatio(r) => {
                Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(r)))
            }
        }
    }
}

impl OtlpConfig {
    /// Flags win over the environment; `Ok(None)` when export is off (no endpoint).
    /// `env` looks a variable up (`std::env::var` in the daemon, a map in tests).
    pub fn resolve(
        flags: &OtlpFlags,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, ConfigError> {
        let env = Environment(env);
        if env.disabled() {
            return Ok(None);
        }
        let Some(endpoint) = endpoint(flags, &env)? else {
            return Ok(None);
        };
        let protocol = match flags
            .protocol
            .clone()
            .or_else(|| env.text(ENV_OTLP_PROTOCOL))
        {
            Some(text) => OtlpProtocol::parse(&text)?,
            None => OtlpProtocol::Grpc,
        };
        let timeout = match flags.timeout {
            Some(t) => t,
            None => env.millis(ENV_OTLP_TIMEOUT, DEFAULT_TIMEOUT)?,
        };
        Ok(Some(Self {
            endpoint,
            protocol,
            timeout,
            service_name: env
                .text(ENV_SERVICE_NAME)
                .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string()),
            extra_resource: env
                .text(ENV_RESOURCE_ATTRIBUTES)
                .map(|text| parse_resource_attributes(&text))
                .unwrap_or_default(),
            sampler: env.sampler()?,
            span_queue: env.number(ENV_BSP_MAX_QUEUE_SIZE, DEFAULT_MAX_QUEUE as u64)? as usize,
            log_queue: env.number(ENV_BLRP_MAX_QUEUE_SIZE, DEFAULT_MAX_QUEUE as u64)? as usize,
            max_batch: DEFAULT_MAX_BATCH,
            span_delay: env.millis(ENV_BSP_SCHEDULE_DELAY, DEFAULT_BATCH_DELAY)?,
            log_delay: env.millis(ENV_BLRP_SCHEDULE_DELAY, DEFAULT_BATCH_DELAY)?,
            metrics_interval: env.millis(ENV_METRIC_EXPORT_INTERVAL, DEFAULT_METRICS_INTERVAL)?,
            // The final flush waits for one export at most.
            shutdown_timeout: timeout,
        }))
    }

    /// The URL of one signal: gRPC takes the endpoint as is, OTLP/HTTP appends `/v1/<signal>`.
    pub fn signal_url(&self, signal: &str) -> String {
        match self.protocol {
            OtlpProtocol::Grpc => self.endpoint.clone(),
            OtlpProtocol::HttpProtobuf => format!("{}/v1/{signal}", self.endpoint),
        }
    }
}

/// `OTEL_RESOURCE_ATTRIBUTES` syntax: `k=v,k2=v2`, values percent-encoded; bad pairs skipped.
pub fn parse_resource_attributes(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let key = key.trim();
            (!key.is_empty()).then(|| (key.to_string(), percent_decode(value.trim())))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied(),
            bytes.get(i + 2).copied(),
        ) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The collector endpoint (the flag first, then the environment), without
/// a trailing `/`; `Ok(None)` when neither is set (export off).
fn endpoint<F>(flags: &OtlpFlags, env: &Environment<F>) -> Result<Option<String>, ConfigError>
where
    F: Fn(&str) -> Option<String>,
{
    let Some(endpoint) = flags
        .endpoint
        .clone()
        .filter(|e| !e.trim().is_empty())
        .or_else(|| env.text(ENV_OTLP_ENDPOINT))
    else {
        return Ok(None);
    };
    let endpoint = endpoint.trim().trim_end_matches('/').to_string();
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        return Err(ConfigError::Endpoint(endpoint));
    }
    Ok(Some(endpoint))
}

/// The standard `OTEL_*` variables, read through a lookup function; a
/// variable set to blanks counts as unset.
struct Environment<F>(F);

impl<F: Fn(&str) -> Option<String>> Environment<F> {
    fn text(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|v| !v.trim().is_empty())
    }

    /// `OTEL_SDK_DISABLED=true`: export off whatever else is set.
    fn disabled(&self) -> bool {
        self.text(ENV_SDK_DISABLED)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// A positive number, or `default` when unset.
    fn number(&self, name: &'static str, default: u64) -> Result<u64, ConfigError> {
        match self.text(name) {
            None => Ok(default),
            Some(text) => text
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(ConfigError::Number(name, text)),
        }
    }

    /// A positive number of milliseconds, or `default` when unset.
    fn millis(&self, name: &'static str, default: Duration) -> Result<Duration, ConfigError> {
        Ok(Duration::from_millis(
            self.number(name, default.as_millis() as u64)?,
        ))
    }

    fn sampler(&self) -> Result<SamplerChoice, ConfigError> {
        match self.text(ENV_TRACES_SAMPLER) {
            Some(name) => SamplerChoice::parse(&name, self.text(ENV_TRACES_SAMPLER_ARG).as_deref()),
            None => Ok(SamplerChoice::ParentBasedAlwaysOn),
        }
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
