//! X-Ray trace headers: the trace a job keeps from the call that enqueued it, sent to SQS as the
//! `AWSTraceHeader` message system attribute. SQS refuses a value that is not "a correctly
//! formatted X-Ray trace header string", so a caller's header is checked here, where the
//! refusal can name the field, and not at send time, where it would park the job.

/// Longest header taken: three fields of X-Ray's (75 characters with `Root`, `Parent` and
/// `Sampled`) and room for the `Lineage` and `Self` fields Lambda and ALB add.
pub const MAX_TRACE_HEADER_CHARS: usize = 256;

/// Why `header` is not an X-Ray trace header, or `None` when it is: `Key=Value` fields
/// separated by `;`, with `Root=1-{8 hex}-{24 hex}` among them, `Parent` (if any) 16 hex
/// digits and `Sampled` (if any) `0`, `1` or `?`.
/// <https://docs.aws.amazon.com/xray/latest/devguide/xray-concepts.html#xray-concepts-tracingheader>
pub fn problem(header: &str) -> Option<String> {
    let chars = header.chars().count();
    if chars > MAX_TRACE_HEADER_CHARS {
        return Some(format!(
            "must be at most {MAX_TRACE_HEADER_CHARS} characters, got {chars}"
        ));
    }
    let mut root = false;
    for field in header.split(';') {
        let Some((key, value)) = field.split_once('=') else {
            return Some(format!("must be Key=Value fields separated by ';', got {field:?}"));
        };
        let ok = match key {
            "Root" => {
                root = true;
                is_trace_id(value)
            }
            "Parent" => value.len() == 16 && is_hex(value),
            "Sampled" => matches!(value, "0" | "1" | "?"),
            _ => {
                !key.is_empty()
                    && key.chars().all(|c| c.is_ascii_alphanumeric())
                    && value.chars().all(|c| c.is_ascii_graphic() && c != '=')
            }
        };
        if !ok {
            return Some(format!("has a malformed {key:?} field: {field:?} (an X-Ray trace header is Root=1-xxxxxxxx-xxxxxxxxxxxxxxxxxxxxxxxx[;Parent=16 hex digits][;Sampled=0|1])"));
        }
    }
    (!root).then(|| "must have a Root=1-xxxxxxxx-xxxxxxxxxxxxxxxxxxxxxxxx field (an X-Ray trace header)".to_owned())
}

/// Whether the header records a sampled trace (`Sampled=1`): only then is there a trace to link
/// the job's delivery to. An unsampled one is not kept, and the consumer's own sampling decides.
pub fn is_sampled(header: &str) -> bool {
    header.split(';').any(|f| f == "Sampled=1")
}

/// The invocation's trace header as a job keeps it: well formed and sampled, else nothing.
pub fn kept_from_invocation(header: Option<&str>) -> Option<String> {
    header
        .filter(|h| problem(h).is_none() && is_sampled(h))
        .map(str::to_owned)
}

fn is_trace_id(id: &str) -> bool {
    let mut parts = id.split('-');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some("1"), Some(time), Some(random), None)
            if time.len() == 8 && is_hex(time) && random.len() == 24 && is_hex(random)
    )
}

fn is_hex(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";

    #[test]
    fn headers_that_x_ray_and_lambda_write_are_taken() {
        for h in [
            HEADER,
            "Root=1-5759e988-bd862e3fe1be46a994272793",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=?",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0;Lineage=1:a87bb9cd:0",
            "Self=1-67891234-12456789abcdef012345678;Root=1-67891233-abcdef012345678912345678",
        ] {
            assert_eq!(problem(h), None, "{h}");
        }
    }

    #[test]
    fn malformed_headers_are_refused_with_the_rule() {
        for (h, says) in [
            ("", "Key=Value"),
            ("Parent=53995c3f42cd8ad8;Sampled=1", "must have a Root"),
            ("Root=2-5759e988-bd862e3fe1be46a994272793", "malformed \"Root\""),
            ("Root=1-5759e98-bd862e3fe1be46a994272793", "malformed \"Root\""),
            ("Root=1-5759e988-bd862e3fe1be46a99427279z", "malformed \"Root\""),
            ("Root=1-5759e988-bd862e3fe1be46a994272793-00", "malformed \"Root\""),
            (
                "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f",
                "malformed \"Parent\"",
            ),
            (
                "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=yes",
                "malformed \"Sampled\"",
            ),
            ("Root=1-5759e988-bd862e3fe1be46a994272793;;Sampled=1", "Key=Value"),
            (
                "Root=1-5759e988-bd862e3fe1be46a994272793;Note=a b",
                "malformed \"Note\"",
            ),
        ] {
            let p = problem(h).unwrap_or_else(|| panic!("{h:?} taken"));
            assert!(p.contains(says), "{h:?}: {p}");
        }
        let long = format!("{HEADER};Lineage={}", "a".repeat(MAX_TRACE_HEADER_CHARS));
        assert!(problem(&long).is_some_and(|p| p.contains("at most 256 characters")));
    }

    #[test]
    fn only_a_sampled_well_formed_invocation_trace_is_kept() {
        assert_eq!(kept_from_invocation(Some(HEADER)).as_deref(), Some(HEADER));
        assert_eq!(
            kept_from_invocation(Some(&HEADER.replace("Sampled=1", "Sampled=0"))),
            None
        );
        assert_eq!(
            kept_from_invocation(Some("Root=1-5759e988-bd862e3fe1be46a994272793")),
            None
        );
        assert_eq!(kept_from_invocation(Some("Root=nonsense;Sampled=1")), None);
        assert_eq!(kept_from_invocation(None), None);
    }
}
