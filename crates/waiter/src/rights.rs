//! Who may do what, on which queue (issue 73): the rights of the alias an invocation came
//! through, read from the invoked function ARN (lambda_runtime's `Context::invoked_function_arn`,
//! the ARN the caller named, qualifier included).
//!
//! IAM's grant on an alias is the wall AWS enforces; this is the second one, against a grant
//! wider than meant (`function:NAME:*` covers every alias and version).
//! - Unqualified (`function:NAME`): every action on every queue, for operators. An invocation
//!   without an ARN (local tooling) counts as unqualified.
//! - A class alias: `send`, `view`, `operate` for every queue of the stack, or
//!   `{queue key}--{class}` for one queue (`alias_key`: `orders--send`, `jobs-fifo--view`).
//! - Any other qualifier (a version, `$LATEST`, an alias the stack did not make): nothing.

use sqs_waiter_contract::ErrorType;

use crate::config::{Config, QueueName};

pub use sqs_waiter_contract::rights::{alias_key, alias_name, class_alias, Class, QUEUE_CLASS_SEPARATOR, RIGHTS};

/// The actions that name no single queue: a batch (each job is checked), `queues` (filtered to
/// an alias's queue) and the preview of a rule (computed, nothing read). Any other action
/// without a queue is refused to a queue's alias.
const QUEUELESS: &[&str] = &["enqueue", "queues", "preview"];

/// What an invocation may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rights {
    /// Unqualified: everything.
    Full,
    /// Through a class alias, for one queue or every one.
    Alias {
        alias: String,
        class: Class,
        queue: Option<QueueName>,
    },
    /// Through a qualifier that is no class alias of this stack: nothing.
    None { qualifier: String },
}

impl Rights {
    /// The rights of an invocation of the function ARN `invoked`, for the stack's queues.
    pub fn of_invoked_arn(invoked: &str, config: &Config) -> Rights {
        // arn:partition:lambda:region:account:function:name[:qualifier]
        let parts: Vec<&str> = invoked.split(':').collect();
        let qualifier = match parts.as_slice() {
            ["arn", _, "lambda", _, _, "function", _, qualifier] => *qualifier,
            ["arn", _, "lambda", _, _, "function", _] => return Rights::Full,
            // No ARN at all: local tooling (lambda_runtime's placeholder when the header is
            // missing, cargo lambda watch's `function-arn`); Lambda always sends one.
            _ if !invoked.starts_with("arn:") => return Rights::Full,
            // An ARN of another shape is none Lambda sends: no rights, rather than every right.
            _ => invoked,
        };
        let none = || Rights::None {
            qualifier: qualifier.to_owned(),
        };
        let (class, queue) = match class_alias(qualifier) {
            Some((class, None)) => (class, None),
            Some((class, Some(key))) => match config.queues.iter().find(|q| alias_key(q.as_str()) == key) {
                Some(q) => (class, Some(q.clone())),
                None => return none(),
            },
            None => return none(),
        };
        Rights::Alias {
            alias: qualifier.to_owned(),
            class,
            queue,
        }
    }

    /// Whether `action` on `queue` (`None`: an action on no queue) is allowed; the refusal
    /// names the alias, the action and the queue.
    pub fn check(&self, action: &str, queue: Option<&QueueName>) -> Result<(), AccessDenied> {
        let denied = |why: String| self.denied(action, queue.map(|q| q.as_str().to_owned()), why);
        match self {
            Rights::Full => Ok(()),
            Rights::None { qualifier } => Err(denied(format!(
                "`{qualifier}` is none of the stack's aliases (send, view, operate, or {{queue}}--send, {{queue}}--view); \
                 a version or another alias has no rights"
            ))),
            Rights::Alias { class, queue: only, .. } => {
                if !class.allows(action) {
                    return Err(denied(format!(
                        "the {} class may call {}",
                        class.as_str(),
                        allowed_actions(*class)
                    )));
                }
                match (only, queue) {
                    (Some(only), Some(q)) if only != q => Err(denied(format!("it serves queue {only} only"))),
                    (Some(only), None) if !QUEUELESS.contains(&action) => {
                        Err(denied(format!("it serves queue {only} only")))
                    }
                    _ => Ok(()),
                }
            }
        }
    }

    /// Whether the class may call `action` at all, whatever the queue: checked before the
    /// request is parsed, so that a call outside its class learns nothing of the stack (which
    /// queues it serves) from a refusal of its fields.
    pub fn check_action(&self, action: &str) -> Result<(), AccessDenied> {
        match self {
            Rights::Full => Ok(()),
            Rights::Alias { class, .. } if class.allows(action) => Ok(()),
            // Refused: no rights, or not the class's (whatever the queue).
            _ => self.check(action, None),
        }
    }

    /// For an alias of one queue, the queue a request or a batch's job names as given
    /// (`wire::queue_as_given`: `None` none, `Err` unreadably), checked before its fields are
    /// parsed: any other queue is refused as outside the alias, whether the stack serves it or
    /// not, so a refusal tells nothing of the stack's queues. No queue passes for the actions
    /// that may name none (the parse answers the rest).
    pub fn check_named_queue(&self, action: &str, named: Option<Result<String, ()>>) -> Result<(), AccessDenied> {
        let Some(only) = self.only_queue() else {
            return Ok(());
        };
        match named {
            Some(Ok(q)) if q == only.as_str() => Ok(()),
            None if QUEUELESS.contains(&action) => Ok(()),
            None => self.check(action, None),
            Some(other) => Err(self.denied(action, other.ok(), format!("it serves queue {only} only"))),
        }
    }

    /// The refusal of `action` on `queue` through this invocation's alias, and why.
    fn denied(&self, action: &str, queue: Option<String>, why: String) -> AccessDenied {
        AccessDenied {
            alias: self.alias().unwrap_or_default().to_owned(),
            action: action.to_owned(),
            queue,
            why,
        }
    }

    /// The alias the invocation came through, if any.
    pub fn alias(&self) -> Option<&str> {
        match self {
            Rights::Full => None,
            Rights::Alias { alias, .. } => Some(alias),
            Rights::None { qualifier } => Some(qualifier),
        }
    }

    /// The one queue the rights are limited to, if they are.
    pub fn only_queue(&self) -> Option<&QueueName> {
        match self {
            Rights::Alias { queue, .. } => queue.as_ref(),
            _ => None,
        }
    }
}

fn allowed_actions(class: Class) -> String {
    class.actions().collect::<Vec<_>>().join(", ")
}

/// An action or a queue outside the invocation's alias. Nothing was stored or sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("alias {alias} may not call {action}{}: {why}", queue.as_ref().map(|q| format!(" on queue {q}")).unwrap_or_default())]
pub struct AccessDenied {
    pub alias: String,
    pub action: String,
    pub queue: Option<String>,
    pub why: String,
}

impl AccessDenied {
    pub const fn kind(&self) -> ErrorType {
        ErrorType::AccessDenied
    }
}

#[cfg(test)]
#[path = "rights_tests.rs"]
mod tests;
