//! A read of the rows a transaction is about to work on, sent in the MySQL
//! family's last lock statement of a plan, after its locks: the lock and
//! the read in one round trip, as `SELECT … FOR UPDATE` is.
//!
//! The read is a last `UNION ALL` branch with no lock clause. The branches
//! run in order, so it reads once every lock of the statement is held; as a
//! plain (consistent) read it locks no data row and, for a row that does not
//! exist, no gap (a locking read of a missing row would take a gap lock,
//! and two transactions inserting into one gap would deadlock). It reads
//! the rows as committed when it runs, after the wait: InnoDB takes a
//! transaction's snapshot at its first plain read, and takes one per
//! statement under `READ COMMITTED` (checked on MariaDB 10.11 and MySQL
//! 9.7, both isolation levels, by the conformance suite).
//!
//! Lock rows and read rows share one column list: the lock branches end
//! with a `NULL` for each column the read returns, named as the read names
//! them (the first branch names the result's columns), and the read starts
//! with a `NULL` for each lock column.

use sea_orm::{QueryResult, Statement};

/// The columns every lock row carries (see `mysql`), which the read fills
/// with `NULL`: `locked_level`, `locked_bucket`, `hierlock_read_only`.
pub(crate) const LOCK_COLUMNS: usize = 3;

/// A read to send in a plan's last lock statement.
#[derive(Clone, Debug)]
pub(crate) struct RowRead {
    /// The `SELECT` of the rows, [`LOCK_COLUMNS`] `NULL`s followed by its
    /// columns, with its values (MySQL syntax).
    select: Statement,
    /// The names of the columns the rows are read by.
    columns: Vec<String>,
    /// The lock table's name, to tell its absence from a table the read
    /// names.
    lock_table: String,
}

impl RowRead {
    /// The read `select`, whose columns are [`LOCK_COLUMNS`] `NULL`s, then
    /// `columns`, sent with the locks of `lock_table`.
    pub(crate) fn new(select: Statement, columns: Vec<String>, lock_table: &str) -> RowRead {
        RowRead {
            select,
            columns,
            lock_table: lock_table.to_owned(),
        }
    }

    /// Whether a missing table `err` reports (MySQL 1146: "Table
    /// 'db.name' doesn't exist") is the lock table rather than one the
    /// read names.
    pub(crate) fn misses_lock_table(&self, err: &sea_orm::DbErr) -> bool {
        err.to_string().contains(&format!(".{}'", self.lock_table))
    }

    /// What a lock branch appends to its columns: a `NULL` named as each of
    /// the read's columns.
    pub(crate) fn lock_branch_columns(&self) -> String {
        self.columns
            .iter()
            .map(|name| format!(", NULL AS `{}`", name.replace('`', "``")))
            .collect()
    }

    /// How many columns the read returns (besides the lock columns).
    pub(crate) fn width(&self) -> usize {
        self.columns.len()
    }

    /// The read, as the last branch of `stmt` (a statement of lock
    /// branches, each already carrying [`lock_branch_columns`](Self::lock_branch_columns)).
    pub(crate) fn append_to(&self, mut stmt: Statement) -> Statement {
        // A lone branch gets the parentheses a `UNION` needs around a lock clause.
        if !stmt.sql.starts_with('(') {
            stmt.sql = format!("({})", stmt.sql);
        }
        stmt.sql.push_str(" UNION ALL (");
        stmt.sql.push_str(&self.select.sql);
        stmt.sql.push(')');
        if let Some(values) = &self.select.values {
            match &mut stmt.values {
                Some(own) => own.0.extend(values.0.iter().cloned()),
                None => stmt.values = Some(values.clone()),
            }
        }
        stmt
    }
}

/// Split a lock statement's rows: the locks' (`locked_level` set) and the
/// read's.
pub(crate) fn split(rows: Vec<QueryResult>) -> (Vec<QueryResult>, Vec<QueryResult>) {
    rows.into_iter()
        .partition(|row| matches!(row.try_get::<Option<i64>>("", "locked_level"), Ok(Some(_))))
}
