//! Every request message the daemon accepts: the first byte picks the
//! message, the rest is its protobuf encoding. Decoding (what tonic's prost
//! codec does) and the checks the handlers apply to a decoded request
//! (enum values, the Host Configuration text, Watch options) either accept
//! it or refuse it; never a panic. A start-up check fails the target if
//! the API gains a request message this table does not decode.
#![no_main]

use std::collections::BTreeSet;
use std::sync::Once;

use libfuzzer_sys::fuzz_target;
use prost::Message;
use trident_proto::{v1, v1preview};

type Check = fn(&[u8]);

/// The Host Configuration text the way the servicing handlers read it.
fn config(c: Option<v1::HostConfiguration>) {
    if let Some(c) = c
        && !c.config.trim().is_empty()
    {
        let _ = trident_host::config::parse(&c.config);
    }
}

fn reboot(r: Option<v1::RebootManagement>) {
    if let Some(r) = r {
        let _ = v1::RebootHandling::try_from(r.handling);
    }
}

fn rollback_kind(kind: i32) {
    let _ = v1preview::ManualRollbackKind::try_from(kind);
}

fn watch_options(o: Option<v1::WatchOptions>) {
    let Some(o) = o else { return };
    let _ = v1::LogLevel::try_from(o.min_level);
}

/// Decodes `T` and, when it decodes, runs `then` on it.
fn decode<T: Message + Default>(bytes: &[u8], then: impl FnOnce(T)) {
    if let Ok(msg) = T::decode(bytes) {
        // Re-encoding what was accepted must not panic either.
        let _ = msg.encode_to_vec();
        then(msg);
    }
}

macro_rules! table {
    ($($name:literal => $ty:ty => $then:expr),* $(,)?) => {
        const TABLE: &[(&str, Check)] = &[
            $(($name, |b| decode::<$ty>(b, $then))),*
        ];
    };
}

table! {
    "trident.v1.CommitRequest" => v1::CommitRequest => |m| reboot(m.reboot),
    "trident.v1.GetHostStatusRequest" => v1::GetHostStatusRequest => |_| {},
    "trident.v1.VersionRequest" => v1::VersionRequest => |_| {},
    "trident.v1.StreamDiskRequest" => v1::StreamDiskRequest => |m| reboot(m.reboot),
    "trident.v1.UpdateRequest" => v1::UpdateRequest => |m| {
        config(m.stage.and_then(|s| s.config));
        reboot(m.finalize.and_then(|f| f.reboot));
    },
    "trident.v1.StageUpdateRequest" => v1::StageUpdateRequest => |m| config(m.config),
    "trident.v1.FinalizeUpdateRequest" => v1::FinalizeUpdateRequest => |m| reboot(m.reboot),
    "trident.v1.WatchLogsRequest" => v1::WatchLogsRequest => |m| watch_options(m.options),
    "trident.v1.WatchTracesRequest" => v1::WatchTracesRequest => |m| watch_options(m.options),
    "trident.v1.WatchProgressRequest" => v1::WatchProgressRequest => |m| watch_options(m.options),
    "trident.v1.WatchErrorsRequest" => v1::WatchErrorsRequest => |m| watch_options(m.options),
    "trident.v1.WatchRequest" => v1::WatchRequest => |m| {
        watch_options(m.options);
        for k in m.kinds {
            let _ = v1::RecordKind::try_from(k);
        }
    },
    "trident.v1.GetLastErrorRequest" => v1::GetLastErrorRequest => |_| {},
    "trident.v1.GetBusStatusRequest" => v1::GetBusStatusRequest => |_| {},
    "trident.v1.ListOperationsRequest" => v1::ListOperationsRequest => |_| {},
    "trident.v1.ListBootsRequest" => v1::ListBootsRequest => |_| {},
    "trident.v1.RollbackRequest" => v1::RollbackRequest => |m| {
        let _ = v1::ManualRollbackKind::try_from(m.kind);
        reboot(m.finalize.and_then(|f| f.reboot));
    },
    "trident.v1.RollbackStageRequest" => v1::RollbackStageRequest => |m| {
        let _ = v1::ManualRollbackKind::try_from(m.kind);
    },
    "trident.v1.RollbackFinalizeRequest" => v1::RollbackFinalizeRequest => |m| reboot(m.reboot),
    "trident.v1preview.CheckRootRequest" => v1preview::CheckRootRequest => |_| {},
    "trident.v1preview.InstallRequest" => v1preview::InstallRequest => |m| {
        config(m.stage.and_then(|s| s.config));
        reboot(m.finalize.and_then(|f| f.reboot));
    },
    "trident.v1preview.StageInstallRequest" => v1preview::StageInstallRequest => |m| config(m.config),
    "trident.v1preview.FinalizeInstallRequest" => v1preview::FinalizeInstallRequest => |m| reboot(m.reboot),
    "trident.v1preview.RebuildRaidRequest" => v1preview::RebuildRaidRequest => |_| {},
    "trident.v1preview.CheckRollbackRequest" => v1preview::CheckRollbackRequest => |m| rollback_kind(m.kind),
    "trident.v1preview.RollbackRequest" => v1preview::RollbackRequest => |m| {
        rollback_kind(m.kind);
        reboot(m.finalize.and_then(|f| f.reboot));
    },
    "trident.v1preview.RollbackStageRequest" => v1preview::RollbackStageRequest => |m| rollback_kind(m.kind),
    "trident.v1preview.RollbackFinalizeRequest" => v1preview::RollbackFinalizeRequest => |m| reboot(m.reboot),
    "trident.v1preview.GetRollbackChainRequest" => v1preview::GetRollbackChainRequest => |_| {},
    "trident.v1preview.GetRollbackTargetRequest" => v1preview::GetRollbackTargetRequest => |_| {},
    "trident.v1preview.GetConfigRequest" => v1preview::GetConfigRequest => |_| {},
    "trident.v1preview.GetLastErrorRequest" => v1preview::GetLastErrorRequest => |_| {},
    "trident.v1preview.GetServicingStateRequest" => v1preview::GetServicingStateRequest => |_| {},
    "trident.v1preview.GetActiveVolumeRequest" => v1preview::GetActiveVolumeRequest => |_| {},
    "trident.v1preview.ValidateHostConfigurationRequest" => v1preview::ValidateHostConfigurationRequest => |m| config(m.config),
    "trident.v1preview.GetRequiredServicingTypeRequest" => v1preview::GetRequiredServicingTypeRequest => |m| config(m.config),
}

/// Every method input type of every service in the API's descriptor set.
fn request_types() -> BTreeSet<String> {
    let set = prost_types::FileDescriptorSet::decode(trident_proto::FILE_DESCRIPTOR_SET)
        .expect("the API's own descriptor set decodes");
    set.file
        .iter()
        .flat_map(|f| f.service.iter())
        .flat_map(|s| s.method.iter())
        .filter_map(|m| m.input_type.as_deref())
        .map(|t| t.trim_start_matches('.').to_owned())
        .filter(|t| t.starts_with("trident."))
        .collect()
}

static COVERAGE: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    COVERAGE.call_once(|| {
        let known: BTreeSet<String> = TABLE.iter().map(|(n, _)| (*n).to_owned()).collect();
        let missing: Vec<_> = request_types().difference(&known).cloned().collect();
        assert!(
            missing.is_empty(),
            "request messages without a decoder here: {missing:?}"
        );
    });
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let (_, check) = TABLE[usize::from(pick) % TABLE.len()];
    check(body);
});
