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
    pub(crate) fn append_to(&self, stmt: Statement) -> Statement {
        let values = self.select.values.iter().flat_map(|v| v.0.iter().cloned());
        super::mysql::union_all(stmt, &self.select.sql, values)
    }
}

/// Split a lock statement's rows: the locks' (`locked_level` set) and the
/// read's.
pub(crate) fn split(rows: Vec<QueryResult>) -> (Vec<QueryResult>, Vec<QueryResult>) {
    rows.into_iter()
        .partition(|row| matches!(row.try_get::<Option<i64>>("", "locked_level"), Ok(Some(_))))
}

#[cfg(test)]
mod tests {
    use sea_orm::{DbBackend, Statement, Value};

    use super::RowRead;
    use crate::backend::dialect::Dialect;
    use crate::backend::fence::{Fence, Fencing};
    use crate::config::{TableName, Wait};
    use crate::model::key::KeyScheme;
    use crate::model::plan::{Keyspace, LockPlan};
    use crate::model::target::Target;

    #[test]
    fn the_read_follows_the_locks_and_precedes_the_fence_column_for_column() {
        let keyspace = Keyspace::Buckets {
            scheme: KeyScheme::SeedFnv1a32,
            space: 10_000_000,
        };
        let plan = LockPlan::new(&[Target::resource("u", "a", "r").write()], keyspace)
            .expect("a plan");
        let select = Statement::from_sql_and_values(
            DbBackend::MySql,
            "SELECT NULL, NULL, NULL, `t`.`id`, `t`.`b``c` FROM `t` WHERE `t`.`id` = ?",
            [Value::from(7_i64)],
        );
        let read = RowRead::new(select, vec!["id".into(), "b`c".into()], "hier_lock_buckets");
        let fence = Fence::next(true);
        for dialect in [Dialect::MySql, Dialect::MariaDb] {
            let stmt = dialect.bucket_lock_statement(
                &TableName::default(),
                plan.locks(),
                Wait::Block,
                None,
                Some(&Fencing { own: fence, releasing: Vec::new() }),
                Some(&read),
            );
            let branches: Vec<&str> = stmt.sql.split(" UNION ALL ").collect();
            assert_eq!(branches.len(), plan.locks().len() + 2, "{}", stmt.sql);
            for lock in &branches[..plan.locks().len()] {
                assert!(lock.contains(", NULL AS `id`, NULL AS `b``c` FROM"), "{lock}");
            }
            let (read_branch, fence_branch) = (branches[branches.len() - 2], branches[branches.len() - 1]);
            assert!(read_branch.starts_with("(SELECT NULL, NULL, NULL, `t`.`id`"), "{read_branch}");
            assert!(
                fence_branch.starts_with("(SELECT NULL, NULL, NULL, NULL, NULL FROM DUAL WHERE GET_LOCK"),
                "{fence_branch}"
            );
            // The values in the text's order: two per lock, the read's, the fence.
            let values = stmt.values.expect("values").0;
            assert_eq!(values.len(), plan.locks().len() * 2 + 2);
            assert_eq!(values[plan.locks().len() * 2], Value::from(7_i64));
            assert_eq!(values.last(), Some(&Value::from(fence.mysql_name())));
        }
    }
}
