//! `hierlock::Error` as a SeaORM [`DbErr`], for repositories whose methods
//! return `Result<_, DbErr>`: `#[hierlocked]` needs `E: From<hierlock::Error>`.

use sea_orm::DbErr;

use crate::error::Error;

/// The most faithful [`DbErr`] for a hierlock error:
///
/// - a failure the server or the driver reported (`Deadlock`, `LockTimeout`
///   and `WouldBlock` with a server error, `ConnectionLost`, `Database`) is
///   its own `DbErr`,
///   unchanged: its message and source chain, [`DbErr::sql_err`], and
///   [`conflict_kind`](crate::conflict_kind) (for a retry loop) work as for
///   any statement of yours. What hierlock was doing is not kept: convert
///   later, or match on [`Error::kind`] first, when it matters;
/// - every other error (`NotCovered`, `Misuse`, `EmptyId`, configuration and
///   provisioning, a PostgreSQL try-lock that said no) is
///   [`DbErr::Custom`] with hierlock's message. These have no source.
impl From<Error> for DbErr {
    fn from(error: Error) -> Self {
        match error {
            Error::WouldBlock {
                source: Some(source),
                ..
            }
            | Error::LockTimeout {
                source: Some(source),
                ..
            }
            | Error::Deadlock { source, .. }
            | Error::ConnectionLost { source, .. }
            | Error::PoolTimeout { source, .. }
            | Error::Database { source, .. } => source,
            other => DbErr::Custom(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::TxnState;

    #[test]
    fn server_failures_are_the_servers_error() {
        let server = || DbErr::Custom("1213 deadlock found".to_owned());
        let error = Error::Deadlock {
            what: "write Account(u1/a1)".to_owned(),
            txn_state: TxnState::RolledBack,
            source: server(),
        };
        assert_eq!(DbErr::from(error), server());
        let error = Error::database("reading the metadata", server());
        assert_eq!(DbErr::from(error), server());
    }

    #[test]
    fn other_errors_keep_hierlocks_message() {
        let error = Error::NotCovered {
            action: "update",
            row: "Resource(2/20/200) in `resources`".to_owned(),
            held: "write Account(1/10)".to_owned(),
        };
        let message = error.to_string();
        match DbErr::from(error) {
            DbErr::Custom(text) => assert_eq!(text, message),
            other => panic!("expected DbErr::Custom, got {other:?}"),
        }
        let no_wait = Error::WouldBlock {
            what: "write User(u1)".to_owned(),
            txn_state: TxnState::Unchanged,
            source: None,
        };
        assert!(matches!(DbErr::from(no_wait), DbErr::Custom(text) if text.contains("no-wait")));
    }
}
