//! Message bodies as services send them, for the benches that count bytes: JSON order events
//! with nested objects, ids, prices and free text, padded with a random token to an exact size.
//! Runs of one character (`"x".repeat(n)`) would make compression look free.

/// A JSON order event of exactly `bytes` bytes (or `{"order":i}` where that is longer), the same
/// for the same `i`.
pub fn json_body(i: usize, bytes: usize) -> String {
    let plain = format!("{{\"order\":{i}}}");
    if bytes <= plain.len() {
        return plain;
    }
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let tiers = ["bronze", "silver", "gold", "platinum"];
    let adjectives = [
        "red", "large", "organic", "wireless", "steel", "compact", "vintage", "quiet",
    ];
    let nouns = [
        "kettle", "lamp", "charger", "backpack", "notebook", "speaker", "blender", "chair",
    ];
    let customer = rng.below(100_000);
    let mut s = format!(
        "{{\"order\":{i},\"event\":\"order.placed\",\"placed_at\":\"2026-11-27T{:02}:{:02}:{:02}Z\",\
         \"customer\":{{\"id\":\"c-{customer}\",\"email\":\"user{customer}@example.com\",\"tier\":\"{}\"}},\"items\":[",
        rng.below(24),
        rng.below(60),
        rng.below(60),
        tiers[rng.below(4) as usize],
    );
    // Room for the closing `],"ref":"` and `"}` and a token of a few characters at least.
    let tail = "],\"ref\":\"\"}".len() + 8;
    let mut first = true;
    loop {
        let item = format!(
            "{}{{\"sku\":\"SKU-{:05}\",\"name\":\"{} {}\",\"qty\":{},\"unit_price\":\"{}.{:02}\",\"currency\":\"EUR\"}}",
            if first { "" } else { "," },
            rng.below(100_000),
            adjectives[rng.below(8) as usize],
            nouns[rng.below(8) as usize],
            rng.below(9) + 1,
            rng.below(500) + 1,
            rng.below(100),
        );
        if s.len() + item.len() + tail > bytes {
            break;
        }
        s.push_str(&item);
        first = false;
    }
    s.push_str("],\"ref\":\"");
    let token = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    while s.len() + 2 < bytes {
        s.push(char::from(token[rng.below(token.len() as u64) as usize]));
    }
    s.push_str("\"}");
    // A body shorter than the smallest event with a token gets one cut short: still `bytes` long.
    s.truncate(bytes);
    s
}

/// `bytes` of random printable ASCII (fixed seed): text deflate saves only about a fifth on, so
/// a stored body of it stays about as large as given.
pub fn incompressible_text(bytes: usize) -> String {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    (0..bytes).map(|_| char::from(b' ' + rng.below(95) as u8)).collect()
}

struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_json_of_the_size_asked_and_differ_by_order() {
        let short = json_body(7, 200);
        assert_eq!(short.len(), 200);
        serde_json::from_str::<serde_json::Value>(&short).expect("JSON");
        for bytes in [900, 1000, 4000, 65_536] {
            let body = json_body(7, bytes);
            assert_eq!(body.len(), bytes);
            let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            assert_eq!(v["order"], 7);
            assert!(v["items"].as_array().is_some_and(|a| !a.is_empty()), "{body}");
            assert_ne!(json_body(8, bytes), body);
            assert_eq!(json_body(7, bytes), body);
        }
        assert_eq!(json_body(999, 13), "{\"order\":999}");
        let noise = incompressible_text(10_000);
        assert_eq!(noise.len(), 10_000);
        let deflated = miniz_oxide::deflate::compress_to_vec(noise.as_bytes(), 6);
        assert!(deflated.len() > 8_000, "{} bytes deflated", deflated.len());
    }
}
