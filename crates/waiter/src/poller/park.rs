//! Parking what SQS refused for good (a `SenderFault`): a job moves to the parked partition;
//! a series' occurrence is parked alone, under its own id, and the series goes on (issue 60).

use tracing::error;

use super::drain::PartitionRun;
use crate::error::display_chain;
use crate::ports::{Clock, JobStore, MessageQueue, ParkInfo, StoredJob};

impl<S: JobStore, Q: MessageQueue, C: Clock> PartitionRun<'_, S, Q, C> {
    pub(super) async fn park(&mut self, job: &StoredJob, code: String, message: String) {
        let info = ParkInfo {
            parked_at: self.d.clock.now(),
            code,
            message,
        };
        if let (Some(o), Some(occurrence)) = (job.job.occurrence, job.job.occurrence_as_job()) {
            // The occurrence is parked, not the series, which goes on (issue 60, defect 7).
            // Its edition is the series', so a run after a crash parks the same copy again.
            let occurrence = StoredJob {
                job: occurrence,
                ..job.clone()
            };
            match self.d.store.park_occurrence(&occurrence, &info).await {
                Ok(true) => {
                    error!(queue = %self.queue, job_id = %occurrence.job.job_id, code = %info.code, reason = %info.message, "occurrence parked: SQS rejected its message permanently; the series goes on");
                    self.summary.parked += 1;
                    self.move_past(job, o, None);
                }
                Ok(false) => {
                    error!(queue = %self.queue, job_id = %occurrence.job.job_id, code = %info.code, "parking refused: the parked partition holds another job with this id; the series stays where it is");
                    self.summary.failed += 1;
                    self.left_behind = true;
                }
                Err(e) => {
                    error!(queue = %self.queue, job_id = %occurrence.job.job_id, error = %display_chain(&e), "parking the occurrence failed; the series stays where it is");
                    self.summary.failed += 1;
                    self.left_behind = true;
                }
            }
            return;
        }
        match self.d.store.park(job, &info).await {
            Ok(false) => {
                error!(queue = %self.queue, job_id = %job.job.job_id, code = %info.code, "parking refused: the parked partition holds another job with this id; job stays stored");
                self.summary.failed += 1;
                self.left_behind = true;
            }
            Ok(true) => {
                error!(queue = %self.queue, job_id = %job.job.job_id, code = %info.code, reason = %info.message, "parked: SQS rejected the message permanently");
                self.summary.parked += 1;
            }
            Err(e) => {
                error!(queue = %self.queue, job_id = %job.job.job_id, error = %display_chain(&e), "parking failed; job stays stored");
                self.summary.failed += 1;
                self.left_behind = true;
            }
        }
    }
}
