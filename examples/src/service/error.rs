//! What a request can fail with, and the HTTP status each failure maps to.
//!
//! A lock that could not be taken in time is **503 Service Unavailable with
//! `Retry-After`**, not 409 Conflict: nothing is wrong with the request or
//! the state it names, the same request will succeed once the holder
//! commits, and 503 + `Retry-After` is the status clients, proxies and
//! retry middlewares already treat as "come back shortly". 409 is kept for
//! what a retry cannot fix: the state itself says no (not enough money).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hierlock::sea_orm::DbErr;
use hierlock::{ErrorKind, Retryable};
use serde::Serialize;

/// Seconds a client is told to wait after a transient failure.
pub const RETRY_AFTER_SECONDS: u32 = 1;

/// A failed request.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The request itself is wrong (a non-positive amount, a transfer to
    /// the same resource).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// No such resource in this account.
    #[error("resource {id} not found in account {user}/{account}")]
    NotFound {
        /// The user in the path.
        user: i64,
        /// The account in the path.
        account: i64,
        /// The resource asked for.
        id: i64,
    },
    /// The paying resource has less than the amount.
    #[error("resource {id} holds {balance}, cannot pay {amount}")]
    InsufficientFunds {
        /// The paying resource.
        id: i64,
        /// Its balance.
        balance: i64,
        /// The amount asked for.
        amount: i64,
    },
    /// Taking the locks or running a statement failed; hierlock's error
    /// types both (a statement's lock conflict is a `LockTimeout` or a
    /// `Deadlock` too).
    #[error(transparent)]
    Storage(#[from] hierlock::Error),
}

impl From<DbErr> for ServiceError {
    fn from(err: DbErr) -> Self {
        ServiceError::Storage(err.into())
    }
}

impl Retryable for ServiceError {
    /// Only storage failures hierlock calls retryable (lock timeouts,
    /// deadlocks, lost connections) are run again by `hierlock::retry`.
    fn is_retryable(&self) -> bool {
        matches!(self, ServiceError::Storage(err) if err.is_retryable())
    }
}

/// The JSON body of an error response.
#[derive(Debug, Serialize)]
struct ErrorBody {
    /// A machine-readable name, e.g. `lock_timeout`.
    kind: &'static str,
    /// The error's text.
    error: String,
}

impl ServiceError {
    /// The status, and a short name for the body.
    pub fn status(&self) -> (StatusCode, &'static str) {
        let kind = match self {
            ServiceError::Invalid(_) => return (StatusCode::BAD_REQUEST, "invalid"),
            ServiceError::NotFound { .. } => return (StatusCode::NOT_FOUND, "not_found"),
            ServiceError::InsufficientFunds { .. } => {
                return (StatusCode::CONFLICT, "insufficient_funds");
            }
            ServiceError::Storage(err) => err.kind(),
        };
        let unavailable = StatusCode::SERVICE_UNAVAILABLE;
        match kind {
            // Busy: the same request succeeds once the holder commits.
            ErrorKind::LockTimeout => (unavailable, "lock_timeout"),
            ErrorKind::WouldBlock => (unavailable, "would_block"),
            // Still deadlocking after every retry: heavy contention.
            ErrorKind::Deadlock => (unavailable, "deadlock"),
            ErrorKind::ConnectionLost => (unavailable, "connection_lost"),
            // A bug of this service (a proof not covering its write, locks
            // asked for out of order) or of its set-up: not the client's to retry.
            ErrorKind::NotCovered => (StatusCode::INTERNAL_SERVER_ERROR, "not_covered"),
            ErrorKind::Misuse => (StatusCode::INTERNAL_SERVER_ERROR, "misuse"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        let (status, kind) = self.status();
        let body = ErrorBody {
            kind,
            error: self.to_string(),
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_errors_are_the_clients_and_not_retried() {
        let invalid = ServiceError::Invalid("amount 0".into());
        assert_eq!(invalid.status().0, StatusCode::BAD_REQUEST);
        assert!(!invalid.is_retryable());
        let poor = ServiceError::InsufficientFunds {
            id: 1,
            balance: 0,
            amount: 5,
        };
        assert_eq!(poor.status().0, StatusCode::CONFLICT);
        assert!(!poor.is_retryable());
    }
}
