//! Feeding the overall-progress derivation ([`OverallTracker`], a pure
//! state machine that knows nothing of the bus) and publishing the views it
//! returns as records.

use std::sync::Arc;
use std::time::Instant;

use trident_proto::v1::OverallProgress;

use crate::overall::OverallTracker;

/// Key of the overall record in the bus's latest-state table (re-delivered
/// after a gap, like a phase's latest state).
const LATEST_KEY: &str = "\0overall";

impl super::Bus {
    /// Updates the derivation of `operation` with `update` and publishes
    /// the view it returns, under the derivation's lock so the operation's
    /// overall records reach the ring in the order they were derived.
    pub(crate) fn derive_overall(
        &self,
        operation: &Arc<str>,
        update: impl FnOnce(&mut OverallTracker, Instant) -> Option<OverallProgress>,
    ) {
        let mut tracker = self.overall();
        let Some(view) = update(&mut tracker, Instant::now()) else {
            return;
        };
        let record = trident_proto::v1::Record {
            cursor: None,
            boot_id: String::new(),
            timestamp: Some(crate::record::now()),
            record: Some(trident_proto::v1::record::Record::OverallProgress(view)),
        };
        self.publish(
            super::ring::Entry {
                kind: trident_proto::v1::RecordKind::Progress as u8,
                level: 0,
                operation: Some(operation.clone()),
                bytes: crate::record::encode(&record),
            },
            super::Effect::Progress {
                phase_id: LATEST_KEY,
            },
        );
    }
}
