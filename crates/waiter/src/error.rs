//! Error types. `InvalidRequest` is the caller's fault and names the field; `PortError` comes from
//! a store or queue adapter and says whether trying again can help.

use sqs_waiter_contract::ErrorType;
use std::error::Error as StdError;

pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// A request that breaks a rule of the contract. Nothing is stored or sent for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {rule}")]
pub struct InvalidRequest {
    pub field: String,
    pub rule: String,
}

impl InvalidRequest {
    pub fn new(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            rule: rule.into(),
        }
    }
}

/// A failure reported by a store or queue adapter.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// The table or queue does not exist (a deployment error, not retryable).
    #[error("{resource} does not exist")]
    NotFound {
        resource: String,
        #[source]
        source: Option<BoxError>,
    },
    /// AWS refused for capacity or rate reasons; retry later.
    #[error("{operation} was throttled")]
    Throttled {
        operation: &'static str,
        #[source]
        source: BoxError,
    },
    /// AWS rejected the request itself (the sender's fault); retrying the same request fails again.
    #[error("{operation} was rejected: {code}")]
    Rejected {
        operation: &'static str,
        code: String,
        #[source]
        source: Option<BoxError>,
    },
    /// Our own bug (an SDK builder refusing what we built): never blamed on the job.
    #[error("{operation}: internal error")]
    Internal {
        operation: &'static str,
        #[source]
        source: BoxError,
    },
    /// Anything else: timeouts, 5xx, connection errors, unmodelled responses.
    #[error("{operation} failed")]
    Transient {
        operation: &'static str,
        #[source]
        source: BoxError,
    },
}

impl PortError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Throttled { .. } | Self::Transient { .. })
    }

    /// Whether the call may have taken effect although it failed (a timeout, a cut connection,
    /// a 5xx): only an answer from the service says for sure that nothing happened.
    pub fn may_have_taken_effect(&self) -> bool {
        matches!(self, Self::Transient { .. })
    }

    /// SQS refused the call for the content of its message(s), not for the queue: a batch with
    /// such an error is sent again entry by entry, and a single entry refused so is parked.
    /// Queue-level refusals (access, KMS, a missing queue) never blame a message.
    pub fn blames_message(&self) -> bool {
        const CONTENT_CODES: &[&str] = &["BatchRequestTooLong", "InvalidParameterValue", "InvalidMessageContents"];
        matches!(self, Self::Rejected { code, .. }
            if CONTENT_CODES.iter().any(|c| code == c || code.strip_prefix("AWS.SimpleQueueService.") == Some(c)))
    }

    /// The Lambda `errorType` it is reported as.
    pub fn kind(&self) -> ErrorType {
        match self {
            Self::NotFound { .. } => ErrorType::ResourceNotFound,
            Self::Throttled { .. } => ErrorType::Throttled,
            Self::Rejected { .. } => ErrorType::Rejected,
            Self::Internal { .. } => ErrorType::InternalError,
            Self::Transient { .. } => ErrorType::DependencyFailure,
        }
    }

    /// The value reported as the Lambda `errorType`.
    pub fn error_type(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// Renders an error with its whole source chain, for the caller-facing message.
pub fn display_chain(err: &(dyn StdError + 'static)) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !out.ends_with(&next) {
            out.push_str(": ");
            out.push_str(&next);
        }
        source = s.source();
    }
    out
}

/// Why an invocation failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error(transparent)]
    Invalid(#[from] InvalidRequest),
    #[error(transparent)]
    Port(#[from] PortError),
    #[error(transparent)]
    Denied(#[from] crate::rights::AccessDenied),
}

impl HandlerError {
    /// The Lambda `errorType` it is reported as.
    pub fn kind(&self) -> ErrorType {
        match self {
            Self::Invalid(_) => ErrorType::InvalidRequest,
            Self::Port(e) => e.kind(),
            Self::Denied(e) => e.kind(),
        }
    }

    /// The Lambda `errorType`.
    pub fn error_type(&self) -> &'static str {
        self.kind().as_str()
    }

    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Port(e) if e.is_retryable())
    }

    /// The Lambda `errorMessage`: the whole source chain, so the caller sees the AWS error code.
    pub fn message(&self) -> String {
        display_chain(self)
    }
}
