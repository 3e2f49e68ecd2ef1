//! One `SendMessageBatch` of a partition run: at its instant, clear of a second's end, only
//! while the queue's pause check admits it, and without the entries that started too late.

use chrono::{DateTime, Utc};
use tracing::warn;

use super::call::{Call, Done, Fate};
use super::plan::start_late;
use super::{clear_of_second_end, pin_arrivals, Dispatcher};
use crate::config::QueueName;
use crate::error::display_chain;
use crate::ports::{Clock, JobStore, MessageQueue, OutgoingMessage, PauseGate};

/// Pause checks one send makes before it gives up (each answered too late to admit it).
const MAX_PAUSE_CHECKS: usize = 3;

/// Sends `call` (its `messages`) at `hold` if given, else now; `planned` is when its delays
/// were taken.
pub(super) async fn send_call<'a, S: JobStore, Q: MessageQueue, C: Clock>(
    d: &'a Dispatcher<S, Q, C>,
    gate: &'a PauseGate,
    queue: &'a QueueName,
    call: Call,
    messages: Vec<OutgoingMessage>,
    hold: Option<DateTime<Utc>>,
    planned: DateTime<Utc>,
) -> Done<'a> {
    if let Some(t) = hold {
        d.clock.sleep_until(t).await;
    }
    // The pause check comes before the instant of sending is taken, so that its read never
    // makes a send later than planned; one gone stale meanwhile (a long wait for the second's
    // end) is made again.
    let mut checks = 0;
    let admitted = loop {
        match gate.paused(&d.store, queue).await {
            Ok(None) => {}
            Ok(Some(_)) => break Err(None),
            Err(e) => break Err(Some(e)),
        }
        let sent_at = clear_of_second_end(&d.clock, &call).await;
        if gate.admits(queue) {
            break Ok(sent_at);
        }
        // Checks whose answers come back stale (a store slower than `PAUSE_CHECK_FRESH`, its
        // SDK retries) admit nothing: after a few the batch stays stored for a later run.
        checks += 1;
        if checks == MAX_PAUSE_CHECKS {
            warn!(queue = %queue, "the pause check answered too late to admit the send: the batch stays stored");
            break Err(None);
        }
    };
    let (call, mut messages, sent_at, dropped) = match admitted {
        Ok(sent_at) => (call, messages, sent_at, Vec::new()),
        Err(failed) => {
            if let Some(e) = &failed {
                warn!(queue = %queue, error = %display_chain(e), "pause check failed: the batch stays stored");
            }
            let paused = call.into_iter().map(|(p, _)| (p, Fate::Paused)).collect();
            (Vec::new(), Vec::new(), d.clock.now(), paused)
        }
    };
    pin_arrivals(&call, &mut messages, sent_at);
    // Started after its delays were taken, or after the instant it held for (a slow pause
    // check): what still may go, and when. A held call is FIFO's, without delays; its entries'
    // expiry and windows were judged for the held instant, and are judged again for now.
    let meant_for = hold.unwrap_or(planned);
    let (call, messages, dropped) = if sent_at > meant_for {
        let (call, messages, late) = start_late(call, messages, meant_for, sent_at, queue.is_fifo());
        (call, messages, dropped.into_iter().chain(late).collect())
    } else {
        (call, messages, dropped)
    };
    let result = if messages.is_empty() {
        Ok(Vec::new())
    } else {
        d.queue.send_batch(queue, &messages).await
    };
    Done::Sent {
        call,
        messages,
        sent_at,
        result,
        dropped,
    }
}
