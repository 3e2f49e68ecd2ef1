use aws_sdk_lambda::error::{DisplayErrorContext, SdkError};
use aws_sdk_lambda::operation::invoke::InvokeError;
use serde_json::Value;
use sqs_waiter_contract::ErrorType;

/// Why a call failed: the function's `errorType` (one variant each), or Lambda's refusal of the
/// invocation, or a reply that does not read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request broke a rule; nothing was stored or sent. `field` is the first word of the
    /// function's message (`delay_seconds`, `message_attributes.kind.data_type`, `queue`).
    #[error("{field}: {message}")]
    InvalidRequest {
        /// The field the function named.
        field: String,
        /// The rule it broke.
        message: String,
    },
    /// DynamoDB or SQS throttled, or a transaction conflicted.
    #[error("throttled: {message}")]
    Throttled {
        /// The function's `errorMessage`.
        message: String,
    },
    /// DynamoDB or SQS failed, or the invocation's deadline came first.
    #[error("a dependency failed: {message}")]
    DependencyFailure {
        /// The function's `errorMessage`, with the AWS error's source chain.
        message: String,
    },
    /// A table or queue of the deployment is missing.
    #[error("a resource is missing: {message}")]
    ResourceNotFound {
        /// The function's `errorMessage`, naming the resource.
        message: String,
    },
    /// AWS refused the function's own request (for example access denied).
    #[error("rejected by AWS: {message}")]
    Rejected {
        /// The function's `errorMessage`, with AWS's error code.
        message: String,
    },
    /// The function built a request an SDK refused (a bug in the function).
    #[error("internal error in the function: {message}")]
    Internal {
        /// The function's `errorMessage`.
        message: String,
    },
    /// The alias the function was called through does not allow this action or this queue
    /// (docs/security.md): call through one that does. Never worth retrying as is.
    #[error("access denied: {message}")]
    AccessDenied {
        /// The function's `errorMessage`, naming the alias, the action and the queue.
        message: String,
    },
    /// The function failed with an `errorType` that is not ours: it crashed, timed out, or is
    /// not an sqs-waiter `enqueue` function.
    #[error("the function failed with {error_type}: {message}")]
    Function {
        /// Lambda's `errorType` (for example `Runtime.ExitError`).
        error_type: String,
        /// Lambda's `errorMessage`.
        message: String,
    },
    /// Lambda did not run the function (no such function, access denied, throttled, unreachable).
    #[error("invoking {function}: {}", DisplayErrorContext(.source.as_ref()))]
    Invoke {
        /// The function's name.
        function: String,
        /// The SDK's error.
        source: Box<SdkError<InvokeError, aws_sdk_lambda::config::http::HttpResponse>>,
    },
    /// The request could not be written as JSON.
    #[error("writing the {action} request: {source}")]
    Encode {
        /// The request's action.
        action: &'static str,
        /// serde_json's error.
        source: serde_json::Error,
    },
    /// The reply is not what the contract describes (a function of another version?).
    #[error("reading the {action} reply: {source}")]
    Decode {
        /// The request's action.
        action: &'static str,
        /// serde_json's error.
        source: serde_json::Error,
    },
}

impl Error {
    /// The function's `errorType`, when the function answered with one of ours.
    pub fn error_type(&self) -> Option<ErrorType> {
        match self {
            Self::InvalidRequest { .. } => Some(ErrorType::InvalidRequest),
            Self::Throttled { .. } => Some(ErrorType::Throttled),
            Self::DependencyFailure { .. } => Some(ErrorType::DependencyFailure),
            Self::ResourceNotFound { .. } => Some(ErrorType::ResourceNotFound),
            Self::Rejected { .. } => Some(ErrorType::Rejected),
            Self::Internal { .. } => Some(ErrorType::InternalError),
            Self::AccessDenied { .. } => Some(ErrorType::AccessDenied),
            _ => None,
        }
    }

    /// Whether sending the same request again (with the same `job_id`) may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Invoke { source, .. } => match source.as_service_error() {
                Some(e) => {
                    e.is_too_many_requests_exception()
                        || e.is_service_exception()
                        || e.is_resource_not_ready_exception()
                        || e.is_resource_conflict_exception()
                }
                // Timeouts, dropped connections and unreadable responses.
                None => !matches!(source.as_ref(), SdkError::ConstructionFailure(_)),
            },
            other => other.error_type().is_some_and(ErrorType::is_retryable),
        }
    }

    /// Lambda answered that the function does not exist (`ResourceNotFoundException`, or a bare
    /// 404 as cargo lambda watch answers).
    pub fn is_function_missing(&self) -> bool {
        matches!(self, Self::Invoke { source, .. }
            if source.as_service_error().is_some_and(InvokeError::is_resource_not_found_exception)
                || source.raw_response().is_some_and(|r| r.status().as_u16() == 404))
    }

    /// A failed Invoke. Lambda answers a function's error with 200 and `X-Amz-Function-Error`,
    /// but cargo lambda watch answers it with a 500 and the same payload: read as the function's
    /// error too.
    pub(crate) fn from_invoke(
        function: &str,
        source: SdkError<InvokeError, aws_sdk_lambda::config::http::HttpResponse>,
    ) -> Self {
        let payload = source
            .raw_response()
            .filter(|r| r.status().is_server_error())
            .and_then(|r| r.body().bytes())
            .and_then(|b| serde_json::from_slice::<Value>(b).ok());
        if let Some(e) = payload.and_then(|p| Self::from_function_error(None, &p)) {
            return e;
        }
        Self::Invoke {
            function: function.to_owned(),
            source: Box::new(source),
        }
    }

    /// The error a function's reply carries, if it is one: Lambda marks it with
    /// `X-Amz-Function-Error`, and the payload is `{"errorType": ..., "errorMessage": ...}`
    /// (also read without the mark, which some emulators leave out; no reply of ours has
    /// `errorType`).
    pub(crate) fn from_function_error(marked: Option<&str>, payload: &Value) -> Option<Self> {
        let error_type = payload.get("errorType").and_then(Value::as_str);
        let message = payload.get("errorMessage").and_then(Value::as_str);
        if marked.is_none() && (error_type.is_none() || message.is_none()) {
            return None;
        }
        let message = message.map_or_else(|| payload.to_string(), str::to_owned);
        let error_type = error_type.or(marked).unwrap_or("Unhandled").to_owned();
        Some(match ErrorType::parse(&error_type) {
            Some(ErrorType::InvalidRequest) => {
                let (field, rule) = message.split_once(": ").unwrap_or(("request", &message));
                Self::InvalidRequest {
                    field: field.to_owned(),
                    message: rule.to_owned(),
                }
            }
            Some(ErrorType::Throttled) => Self::Throttled { message },
            Some(ErrorType::DependencyFailure) => Self::DependencyFailure { message },
            Some(ErrorType::ResourceNotFound) => Self::ResourceNotFound { message },
            Some(ErrorType::Rejected) => Self::Rejected { message },
            Some(ErrorType::InternalError) => Self::Internal { message },
            Some(ErrorType::AccessDenied) => Self::AccessDenied { message },
            // `parse` never answers `Unknown` (not in `ALL`).
            Some(ErrorType::Unknown) | None => Self::Function { error_type, message },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_error_type_is_its_own_variant_and_says_whether_to_retry() {
        for t in ErrorType::ALL {
            let e = Error::from_function_error(
                Some("Unhandled"),
                &json!({"errorType": t.as_str(), "errorMessage": "queue: must be one of orders"}),
            )
            .unwrap();
            assert_eq!(e.error_type(), Some(t));
            assert_eq!(e.is_retryable(), t.is_retryable(), "{t}");
        }
        let invalid = Error::from_function_error(
            None,
            &json!({"errorType": "InvalidRequest", "errorMessage": "message_attributes.a.data_type: is required"}),
        )
        .unwrap();
        assert!(
            matches!(&invalid, Error::InvalidRequest { field, message } if field == "message_attributes.a.data_type" && message == "is required")
        );
        assert_eq!(invalid.to_string(), "message_attributes.a.data_type: is required");
        let crash = Error::from_function_error(
            Some("Unhandled"),
            &json!({"errorType": "Runtime.ExitError", "errorMessage": "exit status 101"}),
        )
        .unwrap();
        assert!(matches!(&crash, Error::Function { error_type, .. } if error_type == "Runtime.ExitError"));
        assert!(!crash.is_retryable());
        assert!(Error::from_function_error(None, &json!({"status": "scheduled", "job_id": "a"})).is_none());
    }
}
