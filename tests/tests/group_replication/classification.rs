//! Group Replication's certification failures, from a real multi-primary
//! group: a transaction on member 2 whose row member 1 changed and committed
//! first fails at COMMIT (3101 or 1180 with engine error 149, whichever the
//! member reports), and hierlock calls that a retryable deadlock whose
//! transaction was rolled back.

use hierlock::sea_orm::{
    ConnectionTrait, DbBackend, DbErr, RuntimeErr, Statement, sqlx::mysql::MySqlDatabaseError,
};
use hierlock::{Error, ErrorKind, RetryPolicy, TxnState, conflict_kind, retry};

use crate::group::{self, Member};

/// `hl_gr_<test>_rows` with the row (1, 0), on every member.
async fn rows_table(test: &str) -> String {
    let table = format!("hl_gr_{test}_rows");
    let member1 = Member::connect(1).await;
    member1
        .execute(&format!("DROP TABLE IF EXISTS {table}"))
        .await;
    member1
        .execute(&format!(
            "CREATE TABLE {table} (id INT PRIMARY KEY, v INT NOT NULL)"
        ))
        .await;
    member1
        .execute(&format!("INSERT INTO {table} VALUES (1, 0)"))
        .await;
    for number in [2, 3] {
        group::caught_up(&member1, &Member::connect(number).await).await;
    }
    table
}

fn update(table: &str, by: i64) -> Statement {
    Statement::from_string(
        DbBackend::MySql,
        format!("UPDATE {table} SET v = v + {by} WHERE id = 1"),
    )
}

/// The MySQL error number of a server error.
fn number(err: &DbErr) -> Option<u16> {
    let (DbErr::Query(RuntimeErr::SqlxError(e)) | DbErr::Exec(RuntimeErr::SqlxError(e))) = err
    else {
        return None;
    };
    Some(
        e.as_database_error()?
            .try_downcast_ref::<MySqlDatabaseError>()?
            .number(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certification_failure_at_commit_is_a_retryable_deadlock() {
    let _group = group::exclusive().await;
    let table = rows_table("certification").await;
    let restore = group::multi_primary();
    let (member1, member2) = (Member::connect(1).await, Member::connect(2).await);

    let loser = member2.begin().await;
    loser.execute_raw(update(&table, 1)).await.expect("update");
    // Member 1 changes the same row and commits first: certified first.
    member1
        .execute(&format!("UPDATE {table} SET v = v + 10 WHERE id = 1"))
        .await;
    let err = loser.commit().await.expect_err("the later commit loses");
    let code = number(&err);
    eprintln!("member 2's COMMIT: {code:?} {err}");
    assert!(
        matches!(code, Some(3101 | 1180)),
        "Group Replication's certification failure: {err}"
    );
    assert_eq!(conflict_kind(&err), Some(ErrorKind::Deadlock), "{err}");
    let typed = Error::from_commit(err);
    assert_eq!(typed.kind(), ErrorKind::Deadlock, "{typed}");
    assert_eq!(typed.txn_state(), TxnState::RolledBack, "{typed}");
    assert!(typed.is_retryable(), "{typed}");
    // Rolled back: only member 1's change is there.
    group::caught_up(&member1, &member2).await;
    let v = member2
        .scalar(&format!(
            "SELECT CAST(v AS SIGNED) FROM {table} WHERE id = 1"
        ))
        .await;
    assert_eq!(v, 10, "member 2's update was rolled back");
    restore.now();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_runs_a_transaction_again_after_a_certification_failure() {
    let _group = group::exclusive().await;
    let table = rows_table("retry").await;
    let restore = group::multi_primary();
    let (member1, member2) = (Member::connect(1).await, Member::connect(2).await);

    let mut attempts = 0;
    let policy = RetryPolicy::default().with_max_attempts(3);
    retry(&member2.db, &policy, async |txn| {
        attempts += 1;
        txn.execute_raw(update(&table, 1)).await?;
        if attempts == 1 {
            // A conflicting write on member 1 commits first: this attempt's
            // COMMIT fails certification.
            member1
                .execute(&format!("UPDATE {table} SET v = v + 10 WHERE id = 1"))
                .await;
        }
        Ok::<_, Error>(())
    })
    .await
    .expect("the second attempt commits");
    assert_eq!(attempts, 2, "one certification failure, one retry");
    group::caught_up(&member2, &member1).await;
    let v = member1
        .scalar(&format!(
            "SELECT CAST(v AS SIGNED) FROM {table} WHERE id = 1"
        ))
        .await;
    assert_eq!(v, 11, "member 1's write and member 2's second attempt");
    restore.now();
}
