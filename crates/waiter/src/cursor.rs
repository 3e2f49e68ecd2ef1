//! Opaque paging cursors: versioned, and bound to the queue and listing they were made for, so
//! a forged or corrupted cursor is refused by name instead of reading another queue's data.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::config::QueueName;
use crate::error::InvalidRequest;

const VERSION: u8 = 1;
const FIELD: &str = "cursor";

#[derive(Serialize, Deserialize)]
struct Body {
    v: u8,
    /// The queue.
    q: String,
    /// The listing ("parked", ...).
    l: String,
    /// Where the next page starts (after this job id).
    a: String,
}

/// A cursor for `listing` on `queue`, continuing after `after`.
pub fn encode(queue: &QueueName, listing: &str, after: &str) -> String {
    let body = Body {
        v: VERSION,
        q: queue.as_str().to_owned(),
        l: listing.to_owned(),
        a: after.to_owned(),
    };
    let json = serde_json::to_vec(&body).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

/// Reads a cursor made by `encode` for the same queue and listing.
pub fn decode(queue: &QueueName, listing: &str, cursor: &str) -> Result<String, InvalidRequest> {
    let bad = |rule: &str| InvalidRequest::new(FIELD, rule);
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor.trim())
        .map_err(|_| bad("is not a cursor this function returned (not base64url)"))?;
    let body: Body =
        serde_json::from_slice(&bytes).map_err(|_| bad("is not a cursor this function returned (corrupted)"))?;
    if body.v != VERSION {
        return Err(bad(&format!(
            "has version {}; this function reads version {VERSION}",
            body.v
        )));
    }
    if body.q != queue.as_str() || body.l != listing {
        return Err(bad(&format!(
            "was made for another listing ({} of queue {:?})",
            body.l, body.q
        )));
    }
    Ok(body.a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_foreign_or_corrupted_cursors() {
        let q = QueueName::parse("orders").unwrap();
        let other = QueueName::parse("billing").unwrap();
        let c = encode(&q, "parked", "job-7");
        assert_eq!(decode(&q, "parked", &c).unwrap(), "job-7");
        for (queue, listing, cursor) in [
            (&other, "parked", c.clone()),
            (&q, "list", c.clone()),
            (&q, "parked", format!("{c}x")),
            (&q, "parked", "!!!".to_owned()),
            (&q, "parked", String::new()),
            (&q, "parked", encode(&q, "parked", "a").replace('e', "f")),
        ] {
            let e = decode(queue, listing, &cursor).expect_err(&cursor);
            assert_eq!(e.field, "cursor");
        }
    }
}
