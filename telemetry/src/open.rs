//! Opening the bus on a state directory, the daemon's start-up: finish or
//! undo a journal handover a crash cut, load what earlier runs left in the
//! journal, open it, and mark the operations a crash interrupted (before
//! anything else is published). Above the bus, the journal and the
//! interrupted-operation records, so none of them names the others back.

use std::sync::Arc;

use crate::bus::Bus;
use crate::config::BusConfig;
use crate::error::TelemetryError;
use crate::interrupted;
use crate::journal::{Journal, JournalHistory, handover};

impl Bus {
    /// A new bus with a fresh run id. With a journal directory, opens the
    /// journal (creating it), loads what earlier runs left there (operations,
    /// the last error) and starts the journal writer thread.
    pub fn new(config: BusConfig) -> Result<Bus, TelemetryError> {
        let run_id: Arc<str> = Arc::from(uuid::Uuid::new_v4().to_string());
        let (journal, history) = match &config.journal_dir {
            Some(dir) => {
                handover::recover(dir);
                let history = JournalHistory::load(dir)?;
                let journal = Journal::open(dir, &config, run_id.clone())?;
                (Some(journal), Some(history))
            }
            None => (None, None),
        };
        let interrupted = history
            .as_ref()
            .map(JournalHistory::interrupted)
            .unwrap_or_default();
        let bus = Bus::assemble(run_id, config, journal, history);
        // Before anything else is published: the journal, ListOperations
        // and GetLastError all say these ended, failed, and why.
        for op in &interrupted {
            interrupted::mark(&bus, op);
        }
        Ok(bus)
    }
}
