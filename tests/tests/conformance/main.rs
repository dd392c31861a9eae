//! hierlock's conformance suite: the same promises checked on every backend.
//!
//! Each test below exists once per backend (`mariadb::…`, `mysql::…`,
//! `postgres::…`, `postgres_buckets::…`, `sqlite::…` on a pool with
//! hierlock's busy handler, `sqlite_without_handler::…`). What a backend promises
//! (exact hierarchy rule, or one coarse database-wide lock) is declared in
//! `hierlock_tests::Backend::promise` and checked by `matrix`.

mod cancel;
mod deadlock;
mod dense;
mod dense_has_one;
mod dense_links;
mod dense_plain;
mod errors;
mod faults;
mod handle;
mod lease;
mod matrix;
mod partition;
mod protected;
mod reading;
mod scale;
mod scenarios;
mod sea_orm_cli;
mod sql;
mod subtree;
mod support;
mod typed_coverage;
mod versions;
mod write_failures;
mod write_statements;

/// One `#[tokio::test]` per (backend, test function).
macro_rules! per_backend {
    ($backend:ident => $variant:expr; $($module:ident :: $test:ident),* $(,)?) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    crate::$module::$test($variant).await;
                }
            )*
        }
    };
}

/// The tests every backend runs.
macro_rules! common_tests {
    ($backend:ident => $variant:expr $(; $($extra:ident :: $test:ident),*)?) => {
        per_backend!($backend => $variant;
            scenarios::scenario_1_same_resource_twice_waits,
            scenarios::scenario_2_sibling_resources_coexist,
            scenarios::scenario_3_account_lock_and_resource_below_conflict,
            scenarios::scenario_4_user_lock_blocks_accounts_and_resources_below,
            scenarios::scenario_5_different_users_are_independent,
            scenarios::scenario_7_many_resources_in_any_order_never_deadlock,
            scenarios::readers_share_and_writers_wait_for_readers,
            scenarios::locks_commit_and_roll_back_with_the_callers_writes,
            matrix::generated_matrix_matches_the_hierarchy_oracle,
            deadlock::ordered_multi_target_stress_never_deadlocks,
            errors::empty_ids_fail_before_any_sql,
            errors::nowait_conflict_is_would_block,
            errors::timeout_conflict_is_lock_timeout_and_restores_the_setting,
            errors::out_of_range_timeouts_are_misuse_and_long_ones_work,
            sql::statements_per_resource_write_lock,
            sql::the_largest_acquisition_works,
            handle::handle_holds_until_release,
            handle::handle_releases_on_drop,
            protected::protected_upsert_with_a_covering_proof_inserts_updates_or_leaves,
            protected::protected_upsert_onto_another_users_row_is_not_covered,
            protected::protected_returning_variants_return_the_written_rows,
            protected::protected_update_many_and_delete_many_within_the_proof,
            protected::protected_update_many_and_delete_many_beyond_the_proof_are_refused,
            protected::protected_update_many_and_delete_many_past_one_statement,
            reading::acquire_reading_returns_the_rows_with_the_locks,
            reading::acquire_reading_after_a_wait_sees_the_holders_commit,
            reading::acquire_reading_failures_say_what_they_left,
            reading::hierlocked_rows_are_read_with_the_locks,
            sea_orm_cli::sea_orm_cli_compact_output_writes_and_reads_across_the_boundary,
            sea_orm_cli::sea_orm_cli_dense_output_nested_writes_and_loads_across_the_boundary,
            dense_plain::dense_protected_fields_to_plain_entities_save_load_and_delete,
            dense_plain::dense_plain_parent_unlinks_protected_children_only_with_a_proof,
            dense::dense_protected_flat_writes_with_a_proof,
            dense::dense_protected_uncovered_writes_are_not_covered,
            dense::dense_nested_save_under_a_proof_writes_every_row,
            dense::dense_nested_save_outside_the_proof_writes_nothing,
            dense::dense_nested_save_refuses_what_it_cannot_prove,
            dense::dense_nested_save_sends_the_statements_seaorms_own_sends,
            dense_links::dense_nested_links_under_a_proof_write_every_junction_row,
            dense_links::dense_nested_links_outside_the_proof_write_nothing,
            dense_links::dense_nested_self_links_are_checked_at_their_node,
            dense_has_one::dense_nested_has_one_under_a_proof,
            write_statements::protected_writes_send_the_statements_seaorms_own_writes_send,
            write_statements::protected_bulk_writes_take_two_statements_whatever_the_rows,
            typed_coverage::integer_ids_are_covered_by_the_nodes_their_text_names,
            typed_coverage::uuid_ids_are_covered_by_their_hyphenated_text,
            typed_coverage::text_ids_are_compared_byte_for_byte,
            typed_coverage::text_keys_are_compared_byte_for_byte,
            typed_coverage::a_stale_model_and_a_proof_of_many_nodes_are_checked,
            write_failures::versioned_increments_through_retry_all_land,
            versions::versioned_updates_increment_and_stale_ones_conflict,
            versions::two_edits_from_one_version_have_one_winner,
            versions::a_stale_delete_conflicts_and_keeps_the_row,
            versions::a_proof_and_a_version_at_once_and_in_bulk,
            versions::a_version_at_its_largest_wraps_to_its_smallest,
            subtree::subtree_matrix_matches_the_mgl_oracle,
            subtree::subtree_stress_never_deadlocks_and_subtree_reads_see_no_write,
            subtree::subtree_read_without_stripes_is_misuse_before_any_sql
            $($(, $extra::$test)*)?
        );
    };
}

/// The tests of backends that lock individual keys (not SQLite's one lock).
macro_rules! exact_tests {
    ($backend:ident => $variant:expr $(; $($extra:ident :: $test:ident),*)?) => {
        common_tests!($backend => $variant;
            scenarios::scenario_6_unordered_separate_calls_can_deadlock,
            reading::acquire_reading_of_missing_rows_then_inserting_them_never_deadlocks,
            sql::locks_are_taken_in_key_order_whatever_the_input_order,
            scale::the_largest_acquisition_locks_exactly_its_planned_rows,
            deadlock::large_mixed_plans_never_deadlock,
            cancel::a_dropped_acquisition_ends_its_server_side_wait,
            cancel::a_dropped_request_gives_its_connection_back,
            cancel::a_dropped_reading_request_gives_its_connection_back,
            cancel::a_storm_of_dropped_waiters_never_reaches_the_next_requests,
            cancel::a_deadline_burst_on_a_slow_network_ends_in_lock_timeouts,
            cancel::a_timeout_is_one_deadline_for_the_whole_acquisition,
            cancel::timeouts_have_millisecond_precision,
            faults::a_killed_holder_is_connection_lost_and_its_locks_go_with_it,
            faults::a_waiter_killed_while_waiting_is_connection_lost,
            faults::a_cut_network_is_connection_lost_and_the_locks_go_with_it,
            faults::retry_runs_again_after_a_killed_connection,
            faults::retry_runs_again_after_a_deadlock,
            partition::a_silent_network_ends_acquisitions_by_their_deadline,
            partition::a_silent_network_ends_a_statement_and_a_commit_by_retrys_deadline,
            partition::a_silent_clients_locks_are_freed_within_the_lease,
            partition::a_lock_handle_on_a_silent_network_is_lost_by_its_answer_timeout,
            partition::an_exhausted_pool_is_a_retryable_pool_timeout,
            partition::every_step_ends_by_its_bound_on_a_silent_network,
            partition::the_canceller_recovers_after_a_silent_network,
            lease::a_transaction_past_its_lease_is_connection_lost_and_retried,
            lease::the_longest_lease_works_and_a_longer_one_is_refused,
            errors::transaction_of_another_database_is_misuse,
            errors::server_lock_wait_timeout_while_blocking_is_lock_timeout,
            protected::protected_upsert_never_writes_a_row_inserted_since_the_check,
            write_failures::a_row_lock_wait_in_a_protected_write_is_a_lock_timeout,
            subtree::subtree_plans_lock_exactly_their_planned_rows
            $($(, $extra::$test)*)?
        );
    };
}

exact_tests!(mariadb => hierlock_tests::Backend::MariaDb;
    subtree::subtree_stress_in_a_tiny_bucket_space,
    subtree::subtree_layout_mismatch_is_refused,
    scale::a_plan_waits_holding_exactly_the_rows_before_the_one_taken,
    sql::multi_row_statements_lock_only_the_planned_rows,
    deadlock::tiny_bucket_space_plan_order_prevents_the_id_order_deadlock,
    errors::missing_bucket_row_is_not_provisioned,
    errors::mismatched_or_missing_table_is_refused,
    errors::partial_lock_set_after_a_mysql_failure_stays_held,
    errors::dropped_table_is_not_provisioned,
    cancel::a_connection_keeps_only_its_last_waits_fence);
exact_tests!(mysql => hierlock_tests::Backend::MySql;
    subtree::subtree_stress_in_a_tiny_bucket_space,
    subtree::subtree_layout_mismatch_is_refused,
    scale::a_plan_waits_holding_exactly_the_rows_before_the_one_taken,
    sql::multi_row_statements_lock_only_the_planned_rows,
    deadlock::tiny_bucket_space_plan_order_prevents_the_id_order_deadlock,
    errors::missing_bucket_row_is_not_provisioned,
    errors::mismatched_or_missing_table_is_refused,
    errors::partial_lock_set_after_a_mysql_failure_stays_held,
    errors::dropped_table_is_not_provisioned,
    cancel::a_connection_keeps_only_its_last_waits_fence);
exact_tests!(postgres => hierlock_tests::Backend::Postgres;
    partition::the_lease_ends_with_its_transaction,
    lease::the_lease_keeps_a_tighter_timeout,
    lease::an_acquisition_that_waited_holds_its_lease,
    versions::unsigned_versions_on_postgres,
    errors::postgres_failure_leaves_the_transaction_usable,
    errors::postgres_server_bound_keeps_the_callers_lock_timeout,
    errors::postgres_server_bound_ends_a_second_wait_at_the_deadline,
    errors::other_server_errors_are_database_errors);
exact_tests!(postgres_buckets => hierlock_tests::Backend::PostgresBuckets;
    subtree::subtree_stress_in_a_tiny_bucket_space,
    subtree::subtree_layout_mismatch_is_refused,
    scale::a_plan_waits_holding_exactly_the_rows_before_the_one_taken,
    sql::multi_row_statements_lock_only_the_planned_rows,
    deadlock::tiny_bucket_space_plan_order_prevents_the_id_order_deadlock,
    errors::missing_bucket_row_is_not_provisioned,
    errors::mismatched_or_missing_table_is_refused,
    errors::dropped_table_is_not_provisioned,
    partition::the_lease_ends_with_its_transaction,
    lease::the_lease_keeps_a_tighter_timeout,
    lease::an_acquisition_that_waited_holds_its_lease,
    versions::unsigned_versions_on_postgres,
    errors::postgres_failure_leaves_the_transaction_usable,
    errors::postgres_server_bound_keeps_the_callers_lock_timeout,
    errors::postgres_server_bound_ends_a_second_wait_at_the_deadline);
common_tests!(sqlite => hierlock_tests::Backend::Sqlite;
    cancel::timeouts_have_millisecond_precision,
    cancel::sqlite_timeouts_are_kept_to_a_few_milliseconds,
    cancel::a_dropped_sqlite_acquisition_frees_its_connection_at_once,
    cancel::sqlite_acquisitions_leave_the_connections_waits_as_configured,
    cancel::installing_the_sqlite_busy_handler_twice_keeps_the_busy_timeout);
// Without the handler: the same promises, but not cancel-safe (see
// `hierlock::sqlite`).
common_tests!(sqlite_without_handler => hierlock_tests::Backend::SqliteWithoutHandler;
    cancel::timeouts_have_millisecond_precision,
    cancel::sqlite_timeouts_are_kept_to_a_few_milliseconds);

/// Tests that build their own runtimes (a runtime shutting down is the fault).
mod runtime_shutdown {
    use hierlock_tests::Backend;

    use crate::faults::a_handle_dropped_after_its_runtime_does_not_panic as test;

    #[test]
    fn mariadb() {
        test(Backend::MariaDb);
    }
    #[test]
    fn mysql() {
        test(Backend::MySql);
    }
    #[test]
    fn postgres() {
        test(Backend::Postgres);
    }
    #[test]
    fn postgres_buckets() {
        test(Backend::PostgresBuckets);
    }
    #[test]
    fn sqlite() {
        test(Backend::Sqlite);
    }
    #[test]
    fn sqlite_without_handler() {
        test(Backend::SqliteWithoutHandler);
    }
}
