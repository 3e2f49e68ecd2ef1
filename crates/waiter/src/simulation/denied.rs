//! Calls through class aliases outside their rights (issue 73), among the whole system's steps:
//! each must be refused `AccessDenied` and change nothing, read nothing and send nothing. They
//! are drawn from a schedule of their own (the seed's other draws stay as they were), and a
//! refusal makes no store or queue call.

use rand::rngs::StdRng;

use super::*;
use crate::rights::Rights;

impl World {
    /// Now and then, one refused call: a viewer's change, or a producer's operator action or
    /// job on the other queue.
    pub(super) async fn refused_call(&mut self, draws: &mut StdRng) {
        if !draws.random_bool(0.2) {
            return;
        }
        let id = format!("j{}", draws.random_range(0..self.next_id.max(1)));
        let (alias, request) = match draws.random_range(0..5) {
            0 => ("view", json!({"action": "cancel", "queue": "q", "job_id": id})),
            1 => (
                "view",
                json!({"queue": "q", "job_id": id, "message_body": "never", "delay_seconds": 1}),
            ),
            2 => ("q--send", json!({"action": "pause", "queue": "q"})),
            3 => ("q--send", json!({"action": "trigger", "queue": "q", "job_id": id})),
            _ => (
                "q--send",
                json!({"queue": "f.fifo", "job_id": id, "message_body": "never", "message_group_id": "g0"}),
            ),
        };
        let rights = Rights::of_invoked_arn(
            &format!("arn:aws:lambda:us-east-1:000000000000:function:enqueue:{alias}"),
            &self.waiter.config,
        );
        let before = self.fingerprint();
        let deadline = self.clock.now() + TimeDelta::seconds(30);
        // Boxed: the handler's future is large, and this one lives in every step's.
        let r = Box::pin(self.waiter.respond_as(&request, deadline, None, &rights)).await;
        self.steering.refused += 1;
        if !matches!(r, Err(HandlerError::Denied(_))) {
            self.out
                .violations
                .push(format!("{alias} {request}: answered {r:?}, not AccessDenied"));
        }
        if self.fingerprint() != before {
            self.out
                .violations
                .push(format!("{alias} {request}: refused, and something changed"));
        }
    }

    /// What a refused call must leave as it was: the table's items and records, what SQS got.
    fn fingerprint(&self) -> (usize, usize, usize, usize) {
        let state = self.mem.state.lock().unwrap();
        let versions = state.items.values().map(|j| j.version as usize).sum();
        (state.items.len(), versions, state.history.len(), self.sink.sent().len())
    }
}
