//! The chaos run's short version (the full one is `--bin chaos`): on each
//! shared server, the bank's steady load sees no error while cancel
//! storms, deadline bursts, kills, resets and silent networks hit requests
//! of their own, and every victim gets what its fault promises; on the
//! run's own servers (`tests/clusters/instances.sh`), crashes and graceful
//! restarts under load;
//! on the Group Replication group, a primary killed under load.
//! The bank's invariants hold after every phase.

use hierlock_tests::chaos::{self, Options, Phase, Server};

async fn short_run(servers: &[Server]) {
    short_run_with(servers, &Options::short()).await;
}

async fn short_run_with(servers: &[Server], options: &Options) {
    let mut phases: Vec<Phase> = Vec::new();
    for &server in servers {
        let done = chaos::run(server, options)
            .await
            .unwrap_or_else(|e| panic!("chaos run on {}: {e}", server.name()));
        phases.extend(done);
    }
    let table = chaos::table(&phases);
    println!("{table}");
    for phase in &phases {
        assert!(phase.held(), "a phase broke a promise:\n{table}");
        if phase.fault.is_some() {
            let victims: u64 = phase.victims.outcomes.values().sum();
            assert!(victims > 0, "no victim was counted:\n{table}");
        }
    }
    assert!(
        phases.iter().all(|p| p.bystanders.committed > 0),
        "the steady load committed nothing in a phase:\n{table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mariadb() {
    short_run(&[Server::MariaDb]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql() {
    short_run(&[Server::MySql]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mariadb_crashes() {
    short_run(&[Server::MariaDbOwn]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_crashes() {
    short_run(&[Server::MySqlOwn]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_crashes() {
    short_run(&[Server::PostgresOwn]).await;
}

/// One failover (about 22 s) and the group put back: a round is a minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_group_replication_primary_kill() {
    let options = Options {
        rounds: 1,
        ..Options::short()
    };
    short_run_with(&[Server::GroupReplication], &options).await;
}

/// The three share PostgreSQL's `test` database (the bank's tables), so
/// they run one after another.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_direct_and_through_pgbouncer() {
    short_run(&[Server::Postgres, Server::PostgresBuckets, Server::Pgbouncer]).await;
}
