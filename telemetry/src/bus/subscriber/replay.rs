//! Records from the journal, delivered before the ring: an earlier run's
//! rest after a cursor (with its unjournaled sequences as PREVIOUS_RUN
//! gaps), or an operation's records no longer in the ring.

use trident_proto::v1::{GapReason, Record};

use super::{Out, Prelude, Subscriber, cursor, gap_event};
use crate::journal::{ReplayRequest, replay_step};

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
        let Some((records, mut request)) = self.read_journal_chunk(request, flush).await else {
            return;
        };
        let first = request.after + 1;
        let expected = self.deliver_replayed(records, &request, previous_run);
        request.position.expected = expected;
        if !request.position.done {
            self.preludes.push_front(Prelude::Replay {
                request,
                flush: false,
                previous_run,
            });
        } else if previous_run && expected == first {
            self.report_run_rest_missing(&request);
        }
    }

    /// The next chunk of a replay, read off the async runtime (after
    /// fsyncing what is queued when `flush`). `None` without a journal.
    async fn read_journal_chunk(
        &self,
        mut request: Box<ReplayRequest>,
        flush: bool,
    ) -> Option<(Vec<Record>, Box<ReplayRequest>)> {
        let dir = self.bus.config().journal_dir.clone()?;
        let bus = self.bus.clone();
        tokio::task::spawn_blocking(move || {
            if flush {
                bus.flush();
            }
            let records = replay_step(&dir, &mut request);
            (records, request)
        })
        .await
        .ok()
    }

    /// Queues the replayed records the filter accepts; for an earlier run's
    /// rest, the sequences missing between them as PREVIOUS_RUN gaps.
    /// Returns the sequence expected next.
    fn deliver_replayed(
        &mut self,
        records: Vec<Record>,
        request: &ReplayRequest,
        previous_run: bool,
    ) -> u64 {
        let run_id = request.run_id.clone().unwrap_or_default();
        let mut expected = request.position.expected.max(request.after + 1);
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
                self.push_record(record);
            }
        }
        expected
    }

    /// Nothing of an earlier run after the cursor is on disk: one
    /// PREVIOUS_RUN gap up to that run's last known sequence, unless the
    /// cursor was already at it.
    fn report_run_rest_missing(&mut self, request: &ReplayRequest) {
        let run_id = request.run_id.clone().unwrap_or_default();
        let first = request.after + 1;
        let head = self
            .bus
            .inner()
            .history
            .as_ref()
            .and_then(|h| h.run_head(&run_id));
        let last = head.filter(|h| *h > request.after).unwrap_or(first);
        let count = head.map_or(0, |h| h.saturating_sub(request.after));
        if head.is_none_or(|h| h > request.after) {
            self.push_event(gap_event(
                cursor(&run_id, first),
                cursor(&run_id, last),
                count,
                GapReason::PreviousRun,
            ));
        }
    }
}
