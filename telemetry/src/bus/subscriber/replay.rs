//! Records from the journal, delivered before the ring: an earlier run's
//! rest after a cursor (with its unjournaled sequences as PREVIOUS_RUN
//! gaps), or an operation's records no longer in the ring.

use trident_proto::v1::GapReason;

use super::{Out, Prelude, Subscriber, cursor, gap_event, record_event};
use crate::journal::replay_step;

impl Subscriber {
    /// Runs one step of a prelude: an event, or the next chunk of a journal
    /// replay (re-queued until the replay is done, so memory stays bounded).
    pub(super) async fn run_prelude(&mut self, prelude: Prelude) {
        let (request, flush, previous_run) = match prelude {
            Prelude::Event(event) => {
                self.pending.push_back(Out::Event(event));
                return;
            }
            Prelude::Replay {
                request,
                flush,
                previous_run,
            } => (request, flush, previous_run),
        };
        let Some(dir) = self.bus.config().journal_dir.clone() else {
            return;
        };
        let bus = self.bus.clone();
        let Ok((records, mut request)) = tokio::task::spawn_blocking(move || {
            if flush {
                bus.flush();
            }
            let mut request = request;
            let records = replay_step(&dir, &mut request);
            (records, request)
        })
        .await
        else {
            return;
        };
        let run_id = request.run_id.clone().unwrap_or_default();
        let first = request.after + 1;
        let mut expected = request.position.expected.max(first);
        let report_holes = previous_run && request.operation_id.is_none();
        for record in records {
            let seq = record.cursor.as_ref().map_or(0, |c| c.sequence);
            if report_holes && seq > expected {
                self.push_event(gap_event(
                    cursor(&run_id, expected),
                    cursor(&run_id, seq - 1),
                    seq - expected,
                    GapReason::PreviousRun,
                ));
            }
            expected = seq + 1;
            if self.filter.accepts_record(&record) {
                self.push_event(record_event(record));
            }
        }
        request.position.expected = expected;
        if !request.position.done {
            self.preludes.push_front(Prelude::Replay {
                request,
                flush: false,
                previous_run,
            });
            return;
        }
        if previous_run && expected == first {
            // Nothing of that run after the cursor is on disk.
            let head = self
                .bus
                .inner()
                .history
                .as_ref()
                .and_then(|h| h.run_head(&run_id));
            let last = head.filter(|h| *h > request.after).unwrap_or(expected);
            let count = head.map_or(0, |h| h.saturating_sub(request.after));
            if head.is_none_or(|h| h > request.after) {
                self.push_event(gap_event(
                    cursor(&run_id, expected),
                    cursor(&run_id, last),
                    count,
                    GapReason::PreviousRun,
                ));
            }
        }
    }
}
