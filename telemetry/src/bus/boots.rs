//! The host's boots as the bus knows them: those of the journal's records
//! (earlier runs, records handed over from the other root volume) and the
//! current one.

use trident_proto::v1::BootSummary;

use super::Bus;

impl Bus {
    /// Boot id of the host this run lives in (empty if unknown).
    pub fn boot_id(&self) -> &str {
        &self.inner.config.boot_id
    }

    /// Boots of the journal and the current one, oldest first; the current
    /// boot is last, from its first journaled record (at the latest this
    /// run's start) to now.
    pub fn boots(&self) -> Vec<BootSummary> {
        let mut boots = self
            .inner
            .history
            .as_ref()
            .map(|h| h.boots())
            .unwrap_or_default();
        let current_id = self.boot_id();
        let mut current = match boots.iter().position(|b| b.boot_id == current_id) {
            Some(at) => boots.remove(at),
            None => BootSummary {
                boot_id: current_id.to_owned(),
                ..BootSummary::default()
            },
        };
        let started = crate::record::timestamp(self.inner.started);
        let key = |t: &prost_types::Timestamp| (t.seconds, t.nanos);
        if current
            .first
            .as_ref()
            .is_none_or(|f| key(&started) < key(f))
        {
            current.first = Some(started);
        }
        current.last = Some(crate::record::now());
        current.run_ids.push(self.run_id().to_owned());
        current.current = true;
        boots.push(current);
        boots
    }
}
