use serde::{Deserialize, Serialize};

/// The `errorType` of a failed invocation, and the `error.type` of a failed job in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ErrorType {
    /// The request broke a rule; the message starts with the field (`delay_seconds: must not be
    /// negative`). Nothing was stored or sent.
    InvalidRequest,
    /// DynamoDB or SQS throttled, or a transaction conflicted. Retry.
    Throttled,
    /// DynamoDB or SQS failed or was out of reach, or the invocation's deadline came first. Retry
    /// with the same `job_id`.
    DependencyFailure,
    /// A table or queue the deployment names does not exist.
    ResourceNotFound,
    /// AWS refused the request itself (for example access denied).
    Rejected,
    /// The function built a request an SDK refused: a bug, never the job's.
    InternalError,
    /// The alias the function was invoked through does not allow this action, or this queue
    /// (docs/security.md); the message names the alias, the action and the queue. Nothing was
    /// stored or sent.
    AccessDenied,
    /// A type this contract does not know, in a newer function's batch reply (`Failure`): its
    /// `retryable` says what to do. Never sent by this function, so not in `ALL` or the schema.
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Unknown,
}

impl ErrorType {
    /// Every error type, in the order they are declared.
    pub const ALL: [ErrorType; 7] = [
        Self::InvalidRequest,
        Self::Throttled,
        Self::DependencyFailure,
        Self::ResourceNotFound,
        Self::Rejected,
        Self::InternalError,
        Self::AccessDenied,
    ];

    /// The name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "InvalidRequest",
            Self::Throttled => "Throttled",
            Self::DependencyFailure => "DependencyFailure",
            Self::ResourceNotFound => "ResourceNotFound",
            Self::Rejected => "Rejected",
            Self::InternalError => "InternalError",
            Self::AccessDenied => "AccessDenied",
            Self::Unknown => "Unknown",
        }
    }

    /// Whether the same request may succeed if sent again (with the same `job_id`).
    pub const fn is_retryable(self) -> bool {
        matches!(self, Self::Throttled | Self::DependencyFailure)
    }

    /// Whether the caller's request was refused (broke a rule, or is outside its alias), as
    /// opposed to a failure on the function's side: never worth an alarm.
    pub const fn is_refusal(self) -> bool {
        matches!(self, Self::InvalidRequest | Self::AccessDenied)
    }

    /// The type named `name`, if it is one of ours.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

impl std::fmt::Display for ErrorType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One job of a batch that failed: `{"status": "error", "error": {...}}` in `results`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Failure {
    #[serde(rename = "type")]
    /// The error's `errorType`.
    pub error_type: ErrorType,
    /// The error message, naming the field and the rule for `InvalidRequest`.
    pub message: String,
    /// Whether the same request may succeed if sent again.
    pub retryable: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_only_transient_ones_retry() {
        for t in ErrorType::ALL {
            assert_eq!(ErrorType::parse(t.as_str()), Some(t));
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        assert_eq!(ErrorType::parse("Runtime.ExitError"), None);
        let retryable: Vec<_> = ErrorType::ALL.into_iter().filter(|t| t.is_retryable()).collect();
        assert_eq!(retryable, [ErrorType::Throttled, ErrorType::DependencyFailure]);
    }
}
