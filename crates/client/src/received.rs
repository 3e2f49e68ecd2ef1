//! `retry` of a message received with the AWS SDK for SQS (feature `sqs`).

use std::collections::BTreeMap;

use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use base64::Engine as _;

use crate::{attempt_of, job_id_of, MessageAttribute, Retry, RetryPolicy};

/// The `retry` of a received message: its body, its message attributes (so
/// `ReceiveMessage` must ask for them: `message_attribute_names("All")`), the attempt it is
/// (its `waiter.attempt`, 1 without one) and, on a FIFO queue, its group (ask for the system
/// attribute `MessageGroupId`). `job_id` is the id the job was enqueued under; a replayed copy's
/// message names its own (`waiter.job_id`), and that one is retried.
pub fn retry_of(queue: &str, job_id: &str, message: &Message, policy: &RetryPolicy) -> Retry {
    let attributes: BTreeMap<String, MessageAttribute> = message
        .message_attributes()
        .into_iter()
        .flatten()
        .map(|(name, value)| {
            let attribute = MessageAttribute {
                data_type: value.data_type().to_owned(),
                string_value: value.string_value().map(str::to_owned),
                binary_value: value
                    .binary_value()
                    .map(|b| base64::engine::general_purpose::STANDARD.encode(b.as_ref())),
            };
            (name.clone(), attribute)
        })
        .collect();
    let attempt = attempt_of(&attributes);
    let job_id = job_id_of(&attributes, job_id).to_owned();
    let mut retry = Retry::new(queue, &job_id, attempt, message.body().unwrap_or_default())
        .attributes(attributes)
        .policy(policy);
    if let Some(group) = message
        .attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
    {
        retry = retry.group(group.clone());
    }
    retry
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sqs::primitives::Blob;
    use aws_sdk_sqs::types::MessageAttributeValue;

    fn value(data_type: &str, s: Option<&str>, b: Option<&[u8]>) -> MessageAttributeValue {
        MessageAttributeValue::builder()
            .data_type(data_type)
            .set_string_value(s.map(str::to_owned))
            .set_binary_value(b.map(Blob::new))
            .build()
            .unwrap()
    }

    #[test]
    fn a_received_message_is_retried_with_its_body_attributes_attempt_and_group() {
        let message = Message::builder()
            .body("{\"order\":7}")
            .message_attributes("waiter.attempt", value("Number", Some("3"), None))
            .message_attributes("kind", value("String", Some("invoice"), None))
            .message_attributes("raw", value("Binary", None, Some(b"\x00\x01")))
            .attributes(MessageSystemAttributeName::MessageGroupId, "g-1")
            .build();
        let r = retry_of("jobs.fifo", "o-7", &message, &RetryPolicy::default().max_attempts(4));
        assert_eq!((r.attempt, r.message_body.as_str()), (3, "{\"order\":7}"));
        assert_eq!(r.message_group_id.as_deref(), Some("g-1"));
        assert_eq!(r.max_attempts, Some(4));
        assert_eq!(r.message_attributes["raw"].binary_value.as_deref(), Some("AAE="));
        assert_eq!(r.message_attributes["kind"].string_value.as_deref(), Some("invoice"));
        let first = Message::builder().body("x").build();
        let r = retry_of("orders", "o-8", &first, &RetryPolicy::default());
        assert_eq!(r.attempt, 1, "a first delivery is attempt 1");
        assert!(r.message_group_id.is_none() && r.message_attributes.is_empty());
        let copy = Message::builder()
            .body("x")
            .message_attributes("waiter.job_id", value("String", Some("o-8~3"), None))
            .build();
        let r = retry_of("orders", "o-8", &copy, &RetryPolicy::default());
        assert_eq!(
            r.job_id, "o-8~3",
            "a replayed copy is retried under the id its message names"
        );
    }
}
