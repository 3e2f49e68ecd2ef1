//! The due-time histogram of `stats`, drawn as inline SVG (no script, no image files).

use maud::{html, Markup};
use sqs_waiter_client::Bucket;

const WIDTH: u32 = 480;
const HEIGHT: u32 = 90;

/// One bar per bucket, scaled to the largest; each bar has its count and time as a tooltip.
pub(crate) fn histogram(buckets: &[Bucket]) -> Markup {
    let max = buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let n = u32::try_from(buckets.len()).unwrap_or(u32::MAX).max(1);
    let slot = WIDTH / n;
    let bar = slot.saturating_sub(2).max(1);
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    let label = format!("{total} jobs due over the next {} buckets", buckets.len());
    html! {
        svg.histogram role="img" aria-label=(label) width=(WIDTH) height=(HEIGHT + 14) viewBox={"0 0 " (WIDTH) " " (HEIGHT + 14)} {
            @for (i, b) in buckets.iter().enumerate() {
                @let h = ((b.count as f64 / max as f64) * f64::from(HEIGHT)).round() as u32;
                @let x = u32::try_from(i).unwrap_or(0) * slot;
                rect x=(x) y=(HEIGHT - h) width=(bar) height=(h.max(u32::from(b.count > 0))) {
                    title { (b.count) " due from " (crate::layout::time(b.from)) }
                }
            }
            text x="0" y=(HEIGHT + 12) { "now" }
            text x=(WIDTH) y=(HEIGHT + 12) text-anchor="end" { "later" }
        }
    }
}
