//! A message body in an item: as given, in `message_body` (S), or deflated, in
//! `message_body_deflate` (B), where that bills fewer write units (issue 45, item 4). DynamoDB
//! bills a write by the KB of the whole item, so a body is deflated only when the item is over
//! 1 KB and the deflated item crosses fewer KB boundaries. An item in the seed's format (a plain
//! `message_body`) reads as always; the body goes to SQS exactly as given, since inflating
//! gives back its bytes.
//!
//! Deflate (RFC 1951, `miniz_oxide`, pure Rust) at level 6, chosen by `make bench` section
//! `compression` on JSON bodies of 1–64 KB against LZ4 and zstd (docs/cost.md "Compressed
//! bodies").

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;

use super::{item_size, Item, A_MESSAGE_BODY};
use crate::limits::{DDB_WRITE_UNIT_BYTES, SQS_MAX_MESSAGE_BYTES};

/// A body deflated: a binary attribute of its own, so that a reader of `message_body` alone
/// (the seed's) never mistakes it for the body.
pub const A_MESSAGE_BODY_DEFLATE: &str = "message_body_deflate";
/// Deflate's level: 6 (zlib's default) was within 2 % of 9's size on the bench's JSON at a third
/// of its time (docs/cost.md "Compressed bodies").
const DEFLATE_LEVEL: u8 = 6;

/// Puts `body` into `item`, whose other attributes are in place: deflated when that makes the
/// item bill fewer write units, else as given.
pub(super) fn put_body(item: &mut Item, body: &str) {
    item.insert(A_MESSAGE_BODY.into(), AttributeValue::S(body.to_owned()));
    let plain = item_size(item);
    if plain <= DDB_WRITE_UNIT_BYTES {
        return;
    }
    let deflated = miniz_oxide::deflate::compress_to_vec(body.as_bytes(), DEFLATE_LEVEL);
    // A string counts its bytes plus one here (`value_size`), a binary its bytes.
    let smaller = plain - (A_MESSAGE_BODY.len() + body.len() + 1) + A_MESSAGE_BODY_DEFLATE.len() + deflated.len();
    if write_units(smaller) < write_units(plain) {
        item.remove(A_MESSAGE_BODY);
        item.insert(A_MESSAGE_BODY_DEFLATE.into(), AttributeValue::B(Blob::new(deflated)));
    }
}

fn write_units(bytes: usize) -> usize {
    bytes.div_ceil(DDB_WRITE_UNIT_BYTES)
}

/// The body of `item`, from whichever attribute holds it; `None` when neither does. Errors name
/// the attribute.
pub fn body_of(item: &Item) -> Result<Option<String>, String> {
    match (item.get(A_MESSAGE_BODY), item.get(A_MESSAGE_BODY_DEFLATE)) {
        (Some(AttributeValue::S(body)), _) => Ok(Some(body.clone())),
        (Some(_), _) => Err(format!("{A_MESSAGE_BODY} is not a string")),
        (None, Some(AttributeValue::B(deflated))) => inflate(deflated.as_ref()).map(Some),
        (None, Some(_)) => Err(format!("{A_MESSAGE_BODY_DEFLATE} is not binary")),
        (None, None) => Ok(None),
    }
}

/// `body_of`, moving a plain body out of the item rather than copying it.
pub(super) fn take_body(item: &mut Item) -> Result<Option<String>, String> {
    match item.remove(A_MESSAGE_BODY) {
        Some(AttributeValue::S(body)) => Ok(Some(body)),
        Some(_) => Err(format!("{A_MESSAGE_BODY} is not a string")),
        None => body_of(item),
    }
}

/// No body SQS takes is longer, so a longer one is refused rather than held in memory.
fn inflate(deflated: &[u8]) -> Result<String, String> {
    let bytes = miniz_oxide::inflate::decompress_to_vec_with_limit(deflated, SQS_MAX_MESSAGE_BYTES)
        .map_err(|e| format!("{A_MESSAGE_BODY_DEFLATE} does not inflate: {e}"))?;
    String::from_utf8(bytes).map_err(|_| format!("{A_MESSAGE_BODY_DEFLATE} does not inflate to UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item_with(body: &str, rest_bytes: usize) -> Item {
        let mut item = Item::new();
        item.insert("scheduler".into(), AttributeValue::S("orders#0".into()));
        item.insert("padding".into(), AttributeValue::S("p".repeat(rest_bytes)));
        put_body(&mut item, body);
        item
    }

    fn json(bytes: usize) -> String {
        let mut s = String::from("[");
        let mut i = 0u64;
        while s.len() < bytes {
            s.push_str(&format!(
                r#"{{"order":"o-{i}","sku":"sku-{}","qty":{},"price":"{}.99"}},"#,
                i % 37,
                i % 5 + 1,
                i % 90 + 9
            ));
            i += 1;
        }
        s.truncate(bytes - 1);
        s.push(']');
        s
    }

    #[test]
    fn a_compressible_body_over_a_kilobyte_is_deflated_and_reads_back_byte_for_byte() {
        let body = json(4000);
        let item = item_with(&body, 50);
        assert!(!item.contains_key(A_MESSAGE_BODY));
        assert!(item_size(&item) <= 1024, "{} bytes", item_size(&item));
        assert_eq!(body_of(&item).unwrap().as_deref(), Some(body.as_str()));
        let mut taken = item.clone();
        assert_eq!(take_body(&mut taken).unwrap(), Some(body));
    }

    #[test]
    fn a_body_is_kept_as_given_where_deflating_saves_no_write_unit() {
        // Within one KB: never deflated.
        let small = json(900);
        let item = item_with(&small, 50);
        assert_eq!(item.get(A_MESSAGE_BODY), Some(&AttributeValue::S(small)));
        // Over a KB, and random base64 (6 bits a byte: deflate saves about a quarter), so the
        // deflated item still bills the same 2 units: kept.
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut rng = fastrand::Rng::with_seed(45);
        let noise: String = (0..1400).map(|_| char::from(alphabet[rng.usize(..64)])).collect();
        let item = item_with(&noise, 50);
        assert_eq!(write_units(item_size(&item)), 2);
        assert_eq!(item.get(A_MESSAGE_BODY), Some(&AttributeValue::S(noise.clone())));
        assert!(!item.contains_key(A_MESSAGE_BODY_DEFLATE));
        // A body under a KB in an item over one: deflated when that crosses back under.
        let item = item_with(&json(1000), 200);
        assert!(
            item.contains_key(A_MESSAGE_BODY_DEFLATE),
            "1200 bytes bill 2 units, deflated 1"
        );
    }

    #[test]
    fn every_character_sqs_takes_comes_back_as_it_went_in() {
        // Tab, newline, CR, the edges of SQS's character ranges, two- to four-byte UTF-8,
        // repeated so that deflating pays.
        let unit = "\t\n\r \u{7f}\u{80}\u{d7ff}\u{e000}\u{fffd}\u{10000}\u{10ffff}é漢字🙂\"\\{}";
        let body = unit.repeat(200);
        let item = item_with(&body, 10);
        assert!(item.contains_key(A_MESSAGE_BODY_DEFLATE));
        let back = body_of(&item).unwrap().unwrap();
        assert_eq!(back.as_bytes(), body.as_bytes());
    }

    #[test]
    fn a_damaged_or_oversized_deflated_body_is_an_error_naming_the_attribute() {
        let mut item = Item::new();
        item.insert(
            A_MESSAGE_BODY_DEFLATE.into(),
            AttributeValue::B(Blob::new(vec![0xff, 0x00, 0x13])),
        );
        assert!(body_of(&item).unwrap_err().starts_with(A_MESSAGE_BODY_DEFLATE));
        let huge = miniz_oxide::deflate::compress_to_vec(&vec![b'a'; SQS_MAX_MESSAGE_BYTES + 1], 6);
        item.insert(A_MESSAGE_BODY_DEFLATE.into(), AttributeValue::B(Blob::new(huge)));
        assert!(body_of(&item).unwrap_err().contains("does not inflate"));
        let latin1 = miniz_oxide::deflate::compress_to_vec(&[0xe9, 0x41], 6);
        item.insert(A_MESSAGE_BODY_DEFLATE.into(), AttributeValue::B(Blob::new(latin1)));
        assert_eq!(
            body_of(&item).unwrap_err(),
            format!("{A_MESSAGE_BODY_DEFLATE} does not inflate to UTF-8")
        );
        item.insert(A_MESSAGE_BODY_DEFLATE.into(), AttributeValue::S("text".into()));
        assert!(body_of(&item).unwrap_err().ends_with("is not binary"));
        assert_eq!(body_of(&Item::new()).unwrap(), None);
    }
}
