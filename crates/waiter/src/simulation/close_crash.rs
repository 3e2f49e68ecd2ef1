//! A crash at a window's close (the callers' chains mode, seeds with windows): a caller's
//! windowed job due just before the close is sent by a run whose removal hangs until Lambda
//! drops it; after the close, the run that inherits the lease finds it outside its
//! window and moves it to the next opening, marked `maybe_delivered_at` (it may have been
//! delivered); an operator cancels it, which answers `cancelled`, and its consumer retries the
//! delivery it holds, if SQS accepted one. Nothing of the chain may be sent after that
//! `cancelled` (issue 46, defect 7: with history off, the cancel left no record, and the retry
//! scheduled attempt 2).

use crate::ports::Clock;

use super::*;

impl World {
    pub(super) async fn crash_at_close(&mut self, d: &super::deploys::Deployment) {
        if !self.windows_on || self.clock.now() + TimeDelta::seconds(4) > self.window_close {
            return self.cancel_sent_then_retry().await;
        }
        let due = self.window_close - TimeDelta::milliseconds(self.rng.random_range(200..1_500));
        let id = self.enqueue_chain_at(due, true).await;
        // The run that sends it, starting 100 ms before it is due: its removals hang (a call
        // never answered) until Lambda drops it, 0.5-1.5 s in.
        if let Ok(wait) = (due - TimeDelta::milliseconds(100) - self.clock.now()).to_std() {
            tokio::time::sleep(wait).await;
        }
        let crash_after = Duration::from_millis(self.rng.random_range(500..1_500));
        let deadline = self.clock.now() + TimeDelta::seconds(5);
        self.mem.hang_retires.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = tokio::time::timeout(crash_after, d.run(deadline)).await;
        self.mem.hang_retires.store(false, std::sync::atomic::Ordering::SeqCst);
        self.out.crashes += 1;
        // Past the close and the dropped run's lease: the next run inherits.
        if let Ok(wait) = (deadline + TimeDelta::seconds(1) - self.clock.now()).to_std() {
            tokio::time::sleep(wait).await;
        }
        d.run(self.clock.now() + TimeDelta::seconds(30)).await;
        self.cancel_then_retry(&id).await;
    }
}
