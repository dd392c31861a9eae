//! Mixed fleets: the seed's Go package and hierlock on one bucket table.
//!
//! The Go package is emulated statement for statement (`go`): its SQL, its
//! order, one statement per row, its own READ COMMITTED transaction. What
//! the suite shows, on MySQL 9 and MariaDB:
//!
//! - `single`: a Go single-target `Acquire` and a hierlock call exclude each
//!   other exactly as two hierlock calls do, both ways round (on MariaDB the
//!   Go package can only lock users: its `FOR SHARE` is error 1064 there);
//! - `stress`: Go single-target calls racing hierlock multi-target calls,
//!   and Go `AcquireResources` racing hierlock single-target calls, never
//!   deadlock;
//! - `multi`: Go `AcquireResources` and a hierlock call on the same two
//!   resources deadlock where ID order and bucket order differ — the limit
//!   of sharing a table (docs/topologies.md).

mod go;
mod multi;
mod single;
mod stress;

mod mysql {
    use hierlock_tests::Backend::MySql;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn single_target_calls_exclude_each_other_both_ways() {
        crate::single::single_target_calls_exclude_each_other_both_ways(MySql).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn go_single_target_calls_never_deadlock_with_hierlock_multi_target_calls() {
        crate::stress::go_single_target_calls_never_deadlock_with_hierlock_multi_target_calls(
            MySql, 1000,
        )
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn go_single_target_calls_never_deadlock_with_hierlock_even_when_buckets_collide() {
        crate::stress::go_single_target_calls_never_deadlock_with_hierlock_multi_target_calls(
            MySql, 3,
        )
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn go_multi_resource_calls_never_deadlock_with_hierlock_single_target_calls() {
        crate::stress::go_multi_resource_calls_never_deadlock_with_hierlock_single_target_calls(
            MySql,
        )
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn go_acquire_resources_and_a_hierlock_multi_resource_call_deadlock() {
        crate::multi::go_acquire_resources_and_a_hierlock_multi_resource_call_deadlock(MySql).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn aligned_orders_and_an_account_lock_do_not_deadlock() {
        crate::multi::aligned_orders_and_an_account_lock_do_not_deadlock(MySql).await;
    }
}

mod mariadb {
    use hierlock_tests::Backend::MariaDb;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn single_target_calls_exclude_each_other_both_ways() {
        crate::single::single_target_calls_exclude_each_other_both_ways(MariaDb).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn go_user_locks_never_deadlock_with_hierlock_multi_target_calls() {
        crate::stress::go_single_target_calls_never_deadlock_with_hierlock_multi_target_calls(
            MariaDb, 1000,
        )
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn go_acquire_resources_cannot_run_on_mariadb() {
        crate::multi::go_acquire_resources_cannot_run_on_mariadb(MariaDb).await;
    }
}
