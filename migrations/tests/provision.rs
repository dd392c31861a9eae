//! Provisioning against real servers: MariaDB, PostgreSQL and MySQL, from
//! `HIERLOCK_MARIADB_URL`, `HIERLOCK_POSTGRES_URL` and `HIERLOCK_MYSQL_URL`
//! (defaults: the local servers). An unreachable server fails its tests.
//!
//! Every scenario runs on each server (`mariadb::…`, `postgres::…`,
//! `mysql::…`) in its own table `hl_prov_<scenario>`, dropped first, so the
//! tests can run in parallel with each other and with other test binaries.

use hierlock::{Config, Dialect, ErrorKind, Locker, PostgresLocks, SubtreeReads};
use hierlock_migration::{CreateHierLockBuckets, LockStore, Progress, Provision, Report};
use sea_orm::sea_query::{Alias, DynIden, IntoIden};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, DbBackend, Statement};
use sea_orm_migration::{MigrationTrait, MigratorTrait};

/// A server the scenarios run on.
struct Server {
    name: &'static str,
    env: &'static str,
    default_url: &'static str,
}

const MARIADB: Server = Server {
    name: "MariaDB",
    env: "HIERLOCK_MARIADB_URL",
    default_url: "mysql://root@127.0.0.1:3306/test",
};
const POSTGRES: Server = Server {
    name: "PostgreSQL",
    env: "HIERLOCK_POSTGRES_URL",
    default_url: "postgres://postgres@127.0.0.1:5432/test",
};
const MYSQL: Server = Server {
    name: "MySQL",
    env: "HIERLOCK_MYSQL_URL",
    default_url: "mysql://root@127.0.0.1:3307/test",
};

fn url(server: &Server) -> String {
    std::env::var(server.env).unwrap_or_else(|_| server.default_url.to_owned())
}

/// Connect to `server`, failing the test (never skipping it) if it is down.
async fn connect(server: &Server) -> DatabaseConnection {
    let url = url(server);
    let db = Database::connect(&url).await.unwrap_or_else(|e| {
        panic!(
            "{} at {url} is unreachable ({e}); start it or point {} at one",
            server.name, server.env
        )
    });
    db.execute_unprepared("SELECT 1")
        .await
        .unwrap_or_else(|e| panic!("{} at {url} does not answer: {e}", server.name));
    db
}

/// A fresh table `table` (dropped with its metadata table) and a connection.
async fn setup(server: &Server, table: &str) -> DatabaseConnection {
    let db = connect(server).await;
    drop_tables(&db, table).await;
    db
}

async fn drop_tables(db: &DatabaseConnection, table: &str) {
    db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}, {table}_meta"))
        .await
        .expect("drop the test tables");
}

/// `table` with `space` buckets per level, locked through the bucket table
/// on every server (PostgreSQL's default advisory locks need no table).
fn config(table: &str, space: u32) -> Config {
    Config::default()
        .with_table(table)
        .and_then(|config| config.with_bucket_space(space))
        .expect("a valid test configuration")
        .with_postgres_locks(PostgresLocks::BucketTable)
}

/// Run one statement returning one row of integers.
async fn query_ints<const N: usize>(db: &DatabaseConnection, sql: String) -> [i64; N] {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            sql.clone(),
        ))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or_else(|| panic!("{sql}: no row"));
    std::array::from_fn(|i| {
        row.try_get_by_index::<i64>(i)
            .unwrap_or_else(|e| panic!("{sql}: column {i}: {e}"))
    })
}

fn int(db: &DatabaseConnection) -> &'static str {
    match db.get_database_backend() {
        DbBackend::Postgres => "BIGINT",
        _ => "SIGNED",
    }
}

/// `config` in the subtree-read layout with `stripes` stripes per node.
fn striped(config: Config, stripes: u16) -> Config {
    config.with_subtree_reads(SubtreeReads::striped(stripes).expect("a valid stripe count"))
}

/// Rows of table level `level`, the sum of their buckets, and the lowest and
/// highest.
async fn level_summary(db: &DatabaseConnection, table: &str, level: u8) -> [i64; 4] {
    let int = int(db);
    query_ints(
        db,
        format!(
            "SELECT CAST(COUNT(*) AS {int}), CAST(COALESCE(SUM(bucket), 0) AS {int}), \
             CAST(COALESCE(MIN(bucket), -1) AS {int}), CAST(COALESCE(MAX(bucket), -1) AS {int}) \
             FROM {table} WHERE level = {level}"
        ),
    )
    .await
}

/// Assert that the node levels 0–2 hold exactly the buckets `0..space`, and
/// nothing else is in the table.
async fn assert_full(db: &DatabaseConnection, table: &str, space: u32) {
    assert_levels_full(db, table, space, 0..3).await;
}

/// Assert that each of `levels` holds exactly the buckets `0..space`, and
/// that the table holds nothing else.
async fn assert_levels_full(
    db: &DatabaseConnection,
    table: &str,
    space: u32,
    levels: std::ops::Range<u8>,
) {
    let n = i64::from(space);
    for level in levels.clone() {
        assert_eq!(
            level_summary(db, table, level).await,
            [n, n * (n - 1) / 2, 0, n - 1],
            "level {level} of {table} should hold exactly buckets 0..{space}"
        );
    }
    let [total] = query_ints(
        db,
        format!("SELECT CAST(COUNT(*) AS {}) FROM {table}", int(db)),
    )
    .await;
    assert_eq!(total, levels.len() as i64 * n, "rows in {table}");
}

/// The layout name the metadata row records.
async fn recorded_layout(db: &DatabaseConnection, config: &Config) -> String {
    let dialect = Dialect::detect(db).await.expect("detect the server");
    hierlock::schema::read_metadata(db, dialect, config)
        .await
        .expect("read the metadata row")
        .expect("a metadata row")
        .key_scheme
}

/// The metadata row's `complete` flag (`None`: no row).
async fn complete(db: &DatabaseConnection, config: &Config) -> Option<bool> {
    let dialect = Dialect::detect(db).await.expect("detect the server");
    hierlock::schema::read_metadata(db, dialect, config)
        .await
        .expect("read the metadata row")
        .map(|meta| meta.complete)
}

/// A report of rows filled into the bucket table.
fn report(inserted: u64, total_rows: u64, resumed_from: u64) -> Report {
    Report {
        store: LockStore::BucketTable,
        inserted,
        total_rows,
        resumed_from,
    }
}

async fn fresh_provision_fills_every_level(server: &Server) {
    let table = "hl_prov_fresh";
    let db = setup(server, table).await;
    let config = config(table, 1000);
    let done = Provision::new(config.clone())
        .run(&db)
        .await
        .expect("provision");
    assert_eq!(done, report(3000, 3000, 0));
    assert_full(&db, table, 1000).await;
    assert_eq!(complete(&db, &config).await, Some(true));
}

async fn rerun_is_a_no_op(server: &Server) {
    let table = "hl_prov_rerun";
    let db = setup(server, table).await;
    let provision = Provision::new(config(table, 1000)).chunk_rows(400);
    provision.run(&db).await.expect("first run");
    let again = provision.run(&db).await.expect("second run");
    assert_eq!(again, report(0, 3000, 3000));
    assert_full(&db, table, 1000).await;
}

async fn interrupted_fill_resumes(server: &Server) {
    let table = "hl_prov_resume";
    let db = setup(server, table).await;
    let config = config(table, 1000);
    let provision = Provision::new(config.clone()).chunk_rows(100);
    provision.run(&db).await.expect("first run");

    // What an interruption leaves: level 2's upper chunks not yet inserted,
    // the table not marked complete.
    db.execute_unprepared(&format!(
        "DELETE FROM {table} WHERE level = 2 AND bucket >= 500"
    ))
    .await
    .expect("delete the upper half of level 2");
    db.execute_unprepared(&format!("UPDATE {table}_meta SET complete = 0"))
        .await
        .expect("mark incomplete");
    let err = Locker::connect(&db, config.clone())
        .await
        .expect_err("an incomplete table is refused");
    assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");

    let resumed = provision.run(&db).await.expect("resume");
    assert_eq!(resumed, report(500, 3000, 2500));
    assert_full(&db, table, 1000).await;
    assert_eq!(complete(&db, &config).await, Some(true));
    Locker::connect(&db, config).await.expect("complete again");
}

async fn rows_missing_inside_a_level_are_filled(server: &Server) {
    let table = "hl_prov_holes";
    let db = setup(server, table).await;
    let config = config(table, 1000);
    let provision = Provision::new(config.clone()).chunk_rows(300);
    provision.run(&db).await.expect("first run");
    db.execute_unprepared(&format!(
        "DELETE FROM {table} WHERE level = 1 AND bucket >= 100 AND bucket < 200"
    ))
    .await
    .expect("delete rows inside level 1");
    db.execute_unprepared(&format!("UPDATE {table}_meta SET complete = 0"))
        .await
        .expect("mark incomplete");

    let repaired = provision.run(&db).await.expect("repair");
    assert_eq!(repaired, report(100, 3000, 2900));
    assert_full(&db, table, 1000).await;
    assert_eq!(complete(&db, &config).await, Some(true));
}

async fn another_bucket_space_is_refused(server: &Server) {
    let table = "hl_prov_mismatch";
    let db = setup(server, table).await;
    Provision::new(config(table, 1000))
        .run(&db)
        .await
        .expect("provision 1000 buckets");

    let other = config(table, 2000);
    let err = Provision::new(other.clone())
        .run(&db)
        .await
        .expect_err("2000 buckets in a 1000-bucket table");
    assert_eq!(err.kind(), ErrorKind::ConfigMismatch, "{err}");
    assert!(err.to_string().contains("1000 buckets per level"), "{err}");
    let err = Locker::connect(&db, other)
        .await
        .expect_err("a locker for 2000 buckets");
    assert_eq!(err.kind(), ErrorKind::ConfigMismatch, "{err}");
    // Nothing was added.
    assert_full(&db, table, 1000).await;
}

async fn zero_chunk_rows_is_invalid(server: &Server) {
    let table = "hl_prov_zero_chunk";
    let db = setup(server, table).await;
    let config = config(table, 10);
    let err = Provision::new(config.clone())
        .chunk_rows(0)
        .run(&db)
        .await
        .expect_err("0 rows per statement");
    assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{err}");
    assert_eq!(complete(&db, &config).await, None, "nothing was created");
}

async fn locker_connects_only_after_provisioning(server: &Server) {
    let table = "hl_prov_locker";
    let db = setup(server, table).await;
    let config = config(table, 100);
    let err = Locker::connect(&db, config.clone())
        .await
        .expect_err("no bucket table yet");
    assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");

    Provision::new(config.clone())
        .run(&db)
        .await
        .expect("provision");
    let locker = Locker::connect(&db, config).await.expect("provisioned");
    assert!(locker.is_exact());
}

async fn progress_rises_to_the_total(server: &Server) {
    let table = "hl_prov_progress";
    let db = setup(server, table).await;
    let mut seen: Vec<Progress> = Vec::new();
    let done = Provision::new(config(table, 1000))
        .chunk_rows(300)
        .run_with_progress(&db, |progress| seen.push(progress.clone()))
        .await
        .expect("provision");
    assert_eq!(done, report(3000, 3000, 0));

    // Once at the start, then after each of the 4 chunks of each level.
    assert_eq!(seen.len(), 1 + 3 * 4, "{seen:?}");
    assert_eq!(seen[0].rows_done, 0);
    for pair in seen.windows(2) {
        assert!(pair[0].rows_done < pair[1].rows_done, "{seen:?}");
    }
    for level in 0..3 {
        let reports = seen[1..].iter().filter(|p| p.level == level).count();
        assert_eq!(reports, 4, "level {level}: {seen:?}");
    }
    let last = seen.last().expect("progress was reported");
    assert_eq!(last.rows_done, 3000);
    assert!(seen.iter().all(|p| p.rows_total == 3000), "{seen:?}");
}

/// By default the levels fill side by side, each on a pooled connection of
/// its own: a second level reports progress before the first is done. One
/// level at a time (`concurrent_levels(1)`) fills them in order.
async fn levels_fill_side_by_side_unless_told_otherwise(server: &Server) {
    let table = "hl_prov_side_by_side";
    let db = setup(server, table).await;
    // Chunks of 100 rows, 200 per level, on a pool that has a connection
    // for each level already. The pool may still open one for a level (its
    // connections not yet back from the last statement: about 100 ms on
    // PostgreSQL), in which another level fills 20 chunks of 1,000 rows,
    // but not 200 of 100.
    open_connections(&db, 3).await;
    let mut levels: Vec<u8> = Vec::new();
    Provision::new(config(table, 20_000))
        .chunk_rows(100)
        .run_with_progress(&db, |p| levels.push(p.level))
        .await
        .expect("provision");
    let last_of_level_0 = levels.iter().rposition(|&l| l == 0).expect("level 0");
    let first_of_others = levels.iter().position(|&l| l > 0).expect("levels 1-2");
    assert!(
        first_of_others < last_of_level_0,
        "levels filled one after the other: {levels:?}"
    );
    assert_full(&db, table, 20_000).await;

    drop_tables(&db, table).await;
    let mut levels: Vec<u8> = Vec::new();
    Provision::new(config(table, 20_000))
        .chunk_rows(1000)
        .concurrent_levels(1)
        .run_with_progress(&db, |p| levels.push(p.level))
        .await
        .expect("provision");
    assert!(levels.is_sorted(), "one level at a time: {levels:?}");
    assert_full(&db, table, 20_000).await;

    let err = Provision::new(config(table, 20_000))
        .concurrent_levels(0)
        .run(&db)
        .await
        .expect_err("0 levels at a time");
    assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{err}");
}

/// Make the pool open `n` connections (at least), by holding them at once.
async fn open_connections(db: &DatabaseConnection, n: usize) {
    let sleep = if db.get_database_backend() == DbBackend::Postgres {
        "SELECT pg_sleep(0.1)"
    } else {
        "SELECT SLEEP(0.1)"
    };
    let mut held = tokio::task::JoinSet::new();
    for _ in 0..n {
        let db = db.clone();
        held.spawn(async move { db.execute_unprepared(sleep).await.map(drop) });
    }
    while let Some(done) = held.join_next().await {
        done.expect("task").expect("a connection");
    }
}

/// A chunk that fails (here: a trigger refuses level 1's bucket 100) ends
/// the run with an error naming it; no level starts another chunk, so the
/// other levels stop short, each level a prefix of whole chunks; a rerun
/// (the trigger gone) inserts exactly the missing rows.
async fn a_failed_chunk_stops_every_level_and_a_rerun_resumes(server: &Server) {
    let table = "hl_prov_failed_chunk";
    let db = setup(server, table).await;
    let config = config(table, 20_000);
    let dialect = Dialect::detect(&db).await.expect("detect the server");
    db.execute_unprepared(&hierlock::schema::create_bucket_table(dialect, &config))
        .await
        .expect("create the bucket table");
    // Level 1's second chunk, of 200 per level: the other levels cannot
    // reach their end before it fails. (With chunks of 1,000 rows, 20 per
    // level, PostgreSQL's level 0 sometimes had: the pool, its connections
    // not yet back from their last statement, opened new ones for levels 1
    // and 2, about 100 ms each, while level 0 filled 20 chunks of 4 ms.)
    let refuse = "level = 1 AND NEW.bucket = 100";
    let trigger = if dialect.is_mysql_family() {
        vec![format!(
            "CREATE TRIGGER {table}_refuse BEFORE INSERT ON {table} FOR EACH ROW \
             BEGIN IF NEW.{refuse} THEN \
             SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the test'; END IF; END"
        )]
    } else {
        vec![
            format!(
                "CREATE OR REPLACE FUNCTION {table}_refuse() RETURNS trigger AS $$ BEGIN \
                 IF NEW.{refuse} THEN RAISE EXCEPTION 'refused by the test'; END IF; \
                 RETURN NEW; END $$ LANGUAGE plpgsql"
            ),
            format!(
                "CREATE TRIGGER {table}_refuse BEFORE INSERT ON {table} FOR EACH ROW \
                 EXECUTE FUNCTION {table}_refuse()"
            ),
        ]
    };
    for sql in &trigger {
        db.execute_unprepared(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let provision = Provision::new(config.clone()).chunk_rows(100);
    open_connections(&db, 3).await;
    let err = provision.run(&db).await.expect_err("a chunk was refused");
    assert_eq!(err.kind(), ErrorKind::Database, "{err}");
    assert!(
        err.to_string().contains("buckets 100..200 of level 1"),
        "{err}"
    );
    let mut present = 0;
    for level in 0..3_u8 {
        let [count, _sum, lowest, highest] = level_summary(&db, table, level).await;
        assert!(
            count == 0 || (lowest == 0 && highest + 1 == count),
            "level {level} is not a prefix: {count} rows, {lowest}..={highest}"
        );
        assert_eq!(count % 100, 0, "level {level}: whole chunks only");
        if level == 1 {
            assert_eq!(count, 100, "level 1 stops at the refused chunk");
        } else {
            assert!(
                count < 20_000,
                "level {level} went on to its end: {count} rows"
            );
        }
        present += count as u64;
    }
    assert_eq!(complete(&db, &config).await, Some(false));

    db.execute_unprepared(&format!(
        "DROP TRIGGER {table}_refuse{}",
        if dialect.is_mysql_family() {
            String::new()
        } else {
            format!(" ON {table}")
        }
    ))
    .await
    .expect("drop the trigger");
    let resumed = provision.run(&db).await.expect("rerun");
    assert_eq!(resumed, report(60_000 - present, 60_000, present));
    assert_full(&db, table, 20_000).await;
    assert_eq!(complete(&db, &config).await, Some(true));
}

async fn a_single_bucket_works(server: &Server) {
    let table = "hl_prov_single";
    let db = setup(server, table).await;
    let config = config(table, 1);
    let done = Provision::new(config.clone())
        .run(&db)
        .await
        .expect("provision");
    assert_eq!(done, report(3, 3, 0));
    assert_full(&db, table, 1).await;
    Locker::connect(&db, config).await.expect("provisioned");
}

async fn uneven_chunks_fill_exactly(server: &Server) {
    // 12,345 buckets in chunks of 5,000: the last chunk of each level is
    // 2,345 rows, generated by a different digit table than the others.
    let table = "hl_prov_uneven";
    let db = setup(server, table).await;
    let done = Provision::new(config(table, 12_345))
        .chunk_rows(5_000)
        .run(&db)
        .await
        .expect("provision");
    assert_eq!(done, report(37_035, 37_035, 0));
    assert_full(&db, table, 12_345).await;
}

async fn concurrent_runs_both_succeed(server: &Server) {
    let table = "hl_prov_concurrent";
    let db = setup(server, table).await;
    let other = connect(server).await;
    let provision = Provision::new(config(table, 5000)).chunk_rows(500);
    let (a, b) = tokio::join!(provision.run(&db), provision.run(&other));
    let (a, b) = (a.expect("first runner"), b.expect("second runner"));
    // Each row was inserted by exactly one of them (or found by the later one).
    assert_eq!(a.inserted + b.inserted, 15_000, "{a:?} {b:?}");
    assert!(a.inserted + a.resumed_from <= 15_000, "{a:?}");
    assert_full(&db, table, 5000).await;
}

/// Create `table` as provisioning would, with a trigger recording every row
/// inserted into it, in insertion order, in `{table}_log`.
async fn record_inserts(db: &DatabaseConnection, config: &Config) {
    let table = config.table().as_str();
    let dialect = Dialect::detect(db).await.expect("detect the server");
    db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}_log"))
        .await
        .expect("drop the log");
    db.execute_unprepared(&hierlock::schema::create_bucket_table(dialect, config))
        .await
        .expect("create the bucket table");
    let statements = if dialect.is_mysql_family() {
        vec![
            format!(
                "CREATE TABLE {table}_log (id BIGINT AUTO_INCREMENT PRIMARY KEY, \
                 level INT NOT NULL, bucket INT NOT NULL)"
            ),
            format!(
                "CREATE TRIGGER {table}_record AFTER INSERT ON {table} FOR EACH ROW \
                 INSERT INTO {table}_log (level, bucket) VALUES (NEW.level, NEW.bucket)"
            ),
        ]
    } else {
        vec![
            format!(
                "CREATE TABLE {table}_log (id BIGSERIAL PRIMARY KEY, \
                 level INT NOT NULL, bucket INT NOT NULL)"
            ),
            format!(
                "CREATE OR REPLACE FUNCTION {table}_record() RETURNS trigger AS $$ BEGIN \
                 INSERT INTO {table}_log (level, bucket) VALUES (NEW.level, NEW.bucket); \
                 RETURN NEW; END $$ LANGUAGE plpgsql"
            ),
            format!(
                "CREATE TRIGGER {table}_record AFTER INSERT ON {table} FOR EACH ROW \
                 EXECUTE FUNCTION {table}_record()"
            ),
        ]
    };
    for sql in statements {
        db.execute_unprepared(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

/// The rows inserted since `record_inserts` (or the last call), in
/// insertion order; the record is emptied.
async fn inserted_rows(db: &DatabaseConnection, table: &str) -> Vec<(i64, i64)> {
    let int = int(db);
    let sql =
        format!("SELECT CAST(level AS {int}), CAST(bucket AS {int}) FROM {table}_log ORDER BY id");
    let rows = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            sql.clone(),
        ))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    db.execute_unprepared(&format!("DELETE FROM {table}_log"))
        .await
        .expect("empty the record");
    rows.iter()
        .map(|row| {
            let get = |i| row.try_get_by_index::<i64>(i).expect("an integer");
            (get(0), get(1))
        })
        .collect()
}

/// `(level, bucket)` for `levels`' buckets `buckets`, in key order.
fn keys(levels: std::ops::Range<i64>, buckets: std::ops::Range<i64>) -> Vec<(i64, i64)> {
    levels
        .flat_map(|level| buckets.clone().map(move |bucket| (level, bucket)))
        .collect()
}

async fn rows_go_in_key_order(server: &Server) {
    let table = "hl_prov_key_order";
    let db = setup(server, table).await;
    let config = config(table, 1000);
    record_inserts(&db, &config).await;
    let done = Provision::new(config.clone())
        .chunk_rows(300)
        .run(&db)
        .await
        .expect("provision");
    assert_eq!(done, report(3000, 3000, 0));
    // Levels fill side by side: each in bucket order.
    let inserted = inserted_rows(&db, table).await;
    for level in 0..3 {
        let of_level: Vec<(i64, i64)> = inserted.iter().copied().filter(|r| r.0 == level).collect();
        assert!(
            of_level == keys(level..level + 1, 0..1000),
            "level {level}'s rows were not inserted in bucket order"
        );
    }
    // One level at a time: all in (level, bucket) order.
    drop_tables(&db, table).await;
    record_inserts(&db, &config).await;
    Provision::new(config)
        .chunk_rows(300)
        .concurrent_levels(1)
        .run(&db)
        .await
        .expect("provision");
    assert!(
        inserted_rows(&db, table).await == keys(0..3, 0..1000),
        "rows were not inserted in (level, bucket) order"
    );
}

async fn a_stopped_fill_resumes_in_key_order(server: &Server) {
    let table = "hl_prov_stopped";
    let db = setup(server, table).await;
    let config = config(table, 1000);
    record_inserts(&db, &config).await;
    // One level at a time, so that where it stops is known.
    let provision = Provision::new(config.clone())
        .chunk_rows(300)
        .concurrent_levels(1);

    // A run stopped (here: by a panic) after its second chunk of 300 rows.
    let stopped = tokio::spawn({
        let (db, provision) = (db.clone(), provision.clone());
        async move {
            provision
                .run_with_progress(&db, |p| {
                    assert!(p.rows_done < 600, "stopped after two chunks");
                })
                .await
        }
    })
    .await;
    assert!(stopped.expect_err("the run was stopped").is_panic());
    assert_eq!(inserted_rows(&db, table).await, keys(0..1, 0..600));
    assert_eq!(complete(&db, &config).await, Some(false));
    let err = Locker::connect(&db, config.clone())
        .await
        .expect_err("an incomplete table is refused");
    assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");

    let mut first = None;
    let resumed = provision
        .run_with_progress(&db, |p| {
            first.get_or_insert_with(|| p.clone());
        })
        .await
        .expect("resume");
    assert_eq!(resumed, report(2400, 3000, 600));
    let first = first.expect("progress was reported");
    assert_eq!((first.rows_done, first.resumed_from), (600, 600));
    let mut missing = keys(0..1, 600..1000);
    missing.extend(keys(1..3, 0..1000));
    assert!(
        inserted_rows(&db, table).await == missing,
        "the resumed run should insert exactly the missing rows, in key order"
    );
    assert_full(&db, table, 1000).await;
    assert_eq!(complete(&db, &config).await, Some(true));
    Locker::connect(&db, config).await.expect("complete");
}

async fn striped_provision_fills_five_levels(server: &Server) {
    let table = "hl_prov_striped";
    let db = setup(server, table).await;
    let config = striped(config(table, 1000), 8);
    assert_eq!(config.table_levels(), 0..5);
    let provision = Provision::new(config.clone()).chunk_rows(400);
    let done = provision.run(&db).await.expect("provision");
    assert_eq!(done, report(5000, 5000, 0));
    assert_levels_full(&db, table, 1000, 0..5).await;
    assert_eq!(
        recorded_layout(&db, &config).await,
        "seed-fnv1a32+stripes-8"
    );
    assert_eq!(complete(&db, &config).await, Some(true));
    Locker::connect(&db, config.clone())
        .await
        .expect("a striped locker");

    let again = provision.run(&db).await.expect("second run");
    assert_eq!(again, report(0, 5000, 5000));
    assert_levels_full(&db, table, 1000, 0..5).await;
}

async fn a_stopped_striped_fill_resumes_in_the_stripe_levels(server: &Server) {
    let table = "hl_prov_striped_stopped";
    let db = setup(server, table).await;
    let config = striped(config(table, 1000), 4);
    record_inserts(&db, &config).await;
    // One level at a time, so that where it stops is known.
    let provision = Provision::new(config.clone())
        .chunk_rows(300)
        .concurrent_levels(1);

    // Stopped (here: by a panic) after two chunks of level 3, the users'
    // stripes: the three node levels are complete by then.
    let stopped = tokio::spawn({
        let (db, provision) = (db.clone(), provision.clone());
        async move {
            provision
                .run_with_progress(&db, |p| {
                    assert!(p.rows_done < 3600, "stopped in level 3");
                })
                .await
        }
    })
    .await;
    assert!(stopped.expect_err("the run was stopped").is_panic());
    let mut first_run = keys(0..3, 0..1000);
    first_run.extend(keys(3..4, 0..600));
    assert!(
        inserted_rows(&db, table).await == first_run,
        "the stopped run should have filled levels 0-2 and level 3 up to 600"
    );
    assert_eq!(complete(&db, &config).await, Some(false));
    let err = Locker::connect(&db, config.clone())
        .await
        .expect_err("an incomplete table is refused");
    assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");

    let resumed = provision.run(&db).await.expect("resume");
    assert_eq!(resumed, report(1400, 5000, 3600));
    let mut missing = keys(3..4, 600..1000);
    missing.extend(keys(4..5, 0..1000));
    assert!(
        inserted_rows(&db, table).await == missing,
        "the resumed run should insert exactly the missing stripe rows, in key order"
    );
    assert_levels_full(&db, table, 1000, 0..5).await;
    assert_eq!(complete(&db, &config).await, Some(true));
    Locker::connect(&db, config).await.expect("complete");
}

/// Provision `table` with `first`, then `second`: refused by kind, the table
/// and its metadata row as `first` left them.
async fn assert_layout_refused(server: &Server, table: &str, first: Config, second: Config) {
    let db = setup(server, table).await;
    Provision::new(first.clone())
        .run(&db)
        .await
        .expect("the first provisioning");
    let err = Provision::new(second.clone())
        .run(&db)
        .await
        .expect_err("a table of another layout");
    assert_eq!(err.kind(), ErrorKind::ConfigMismatch, "{err}");
    let message = err.to_string();
    assert!(
        message.contains(&first.layout_name()) && message.contains(&second.layout_name()),
        "both layouts are named: {message}"
    );
    let err = Locker::connect(&db, second)
        .await
        .expect_err("a locker of another layout");
    assert_eq!(err.kind(), ErrorKind::ConfigMismatch, "{err}");
    // Nothing was written: the rows and the metadata row are the first's.
    assert_levels_full(&db, table, 100, first.table_levels()).await;
    assert_eq!(recorded_layout(&db, &first).await, first.layout_name());
    assert_eq!(complete(&db, &first).await, Some(true));
}

async fn a_striped_config_is_refused_on_a_seed_table(server: &Server) {
    let table = "hl_prov_seed_then_striped";
    let seed = config(table, 100);
    assert_layout_refused(server, table, seed.clone(), striped(seed, 8)).await;
}

async fn a_seed_config_is_refused_on_a_striped_table(server: &Server) {
    let table = "hl_prov_striped_then_seed";
    let seed = config(table, 100);
    assert_layout_refused(server, table, striped(seed.clone(), 8), seed).await;
}

async fn another_stripe_count_is_refused(server: &Server) {
    let table = "hl_prov_striped_other_k";
    let seed = config(table, 100);
    assert_layout_refused(server, table, striped(seed.clone(), 8), striped(seed, 16)).await;
}

/// A migrator for the migration test's own table and migration table.
struct TestMigrator;

const MIGRATED_TABLE: &str = "hl_prov_migrator";

impl MigratorTrait for TestMigrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        let migration = CreateHierLockBuckets::new(config(MIGRATED_TABLE, 500)).chunk_rows(200);
        vec![Box::new(migration)]
    }

    fn migration_table_name() -> DynIden {
        Alias::new("hl_prov_migrator_seaql").into_iden()
    }
}

async fn migration_up_and_down(server: &Server) {
    let db = setup(server, MIGRATED_TABLE).await;
    db.execute_unprepared("DROP TABLE IF EXISTS hl_prov_migrator_seaql")
        .await
        .expect("drop the migration table");
    let config = config(MIGRATED_TABLE, 500);

    TestMigrator::up(&db, None).await.expect("migrate up");
    assert_full(&db, MIGRATED_TABLE, 500).await;
    assert_eq!(complete(&db, &config).await, Some(true));
    Locker::connect(&db, config.clone())
        .await
        .expect("provisioned by the migration");

    TestMigrator::down(&db, None).await.expect("migrate down");
    assert_eq!(complete(&db, &config).await, None, "tables dropped");
    let err = Locker::connect(&db, config)
        .await
        .expect_err("dropped tables");
    assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");
    db.execute_unprepared("DROP TABLE IF EXISTS hl_prov_migrator_seaql")
        .await
        .expect("drop the migration table");
}

/// One `#[tokio::test]` per scenario and server.
macro_rules! on_every_server {
    ($($scenario:ident),* $(,)?) => {
        mod mariadb {
            $(#[tokio::test] async fn $scenario() { super::$scenario(&super::MARIADB).await })*
        }
        mod postgres {
            $(#[tokio::test] async fn $scenario() { super::$scenario(&super::POSTGRES).await })*
        }
        mod mysql {
            $(#[tokio::test] async fn $scenario() { super::$scenario(&super::MYSQL).await })*
        }
    };
}

on_every_server!(
    fresh_provision_fills_every_level,
    rerun_is_a_no_op,
    interrupted_fill_resumes,
    rows_missing_inside_a_level_are_filled,
    another_bucket_space_is_refused,
    zero_chunk_rows_is_invalid,
    locker_connects_only_after_provisioning,
    progress_rises_to_the_total,
    levels_fill_side_by_side_unless_told_otherwise,
    a_failed_chunk_stops_every_level_and_a_rerun_resumes,
    a_single_bucket_works,
    uneven_chunks_fill_exactly,
    concurrent_runs_both_succeed,
    migration_up_and_down,
    rows_go_in_key_order,
    a_stopped_fill_resumes_in_key_order,
    striped_provision_fills_five_levels,
    a_stopped_striped_fill_resumes_in_the_stripe_levels,
    a_striped_config_is_refused_on_a_seed_table,
    a_seed_config_is_refused_on_a_striped_table,
    another_stripe_count_is_refused,
);

/// Progress 2,500,000 of 3,000,000 rows, 2,000,000 of which were there
/// before this run: its rate and time left count only its own 500,000.
#[test]
fn rate_and_eta_after_a_resume_count_only_this_runs_rows() {
    let progress = Progress {
        level: 2,
        rows_done: 2_500_000,
        rows_total: 3_000_000,
        resumed_from: 2_000_000,
    };
    let elapsed = std::time::Duration::from_secs(10);
    assert_eq!(progress.rows_per_second(elapsed), Some(50_000.0));
    assert_eq!(
        progress.eta(elapsed),
        Some(std::time::Duration::from_secs(10))
    );

    let start = Progress {
        rows_done: 2_000_000,
        ..progress.clone()
    };
    assert_eq!(start.rows_per_second(elapsed), None, "nothing inserted yet");
    assert_eq!(start.eta(elapsed), None);
    let done = Progress {
        rows_done: 3_000_000,
        ..progress
    };
    assert_eq!(done.eta(elapsed), Some(std::time::Duration::ZERO));
}

#[tokio::test]
async fn sqlite_gets_only_the_metadata_row() {
    let db = Database::connect("sqlite::memory:")
        .await
        .expect("in-memory SQLite");
    let config = config("hl_prov_sqlite", 1000);
    let done = Provision::new(config.clone())
        .run(&db)
        .await
        .expect("provision");
    assert_eq!(
        done,
        Report {
            store: LockStore::SqliteWriteLock,
            ..report(0, 0, 0)
        }
    );
    assert_eq!(complete(&db, &config).await, Some(true));
    let locker = Locker::connect(&db, config).await.expect("SQLite locker");
    assert!(!locker.is_exact());
}

#[tokio::test]
async fn postgres_advisory_locks_need_no_bucket_table() {
    let table = "hl_prov_pg_advisory";
    let db = setup(&POSTGRES, table).await;
    let advisory = Config::default()
        .with_table(table)
        .and_then(|config| config.with_bucket_space(1000))
        .expect("config");
    let done = Provision::new(advisory.clone())
        .run(&db)
        .await
        .expect("provision");
    assert_eq!(
        done,
        Report {
            store: LockStore::Advisory,
            ..report(0, 0, 0)
        }
    );
    let [tables] = query_ints::<1>(
        &db,
        format!("SELECT COUNT(*)::int8 FROM pg_tables WHERE tablename LIKE '{table}%'"),
    )
    .await;
    assert_eq!(tables, 0, "nothing was created");
    Locker::connect(&db, advisory)
        .await
        .expect("advisory locker");
}

/// `hierlock provision --database-url url args…`, its output piped (so no
/// terminal): whether it succeeded, its stdout and its stderr.
fn cli_provision(url: &str, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hierlock"))
        .args(["provision", "--database-url", url])
        .args(args)
        .output()
        .expect("run the hierlock binary");
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("UTF-8 output");
    (out.status.success(), text(out.stdout), text(out.stderr))
}

#[tokio::test]
async fn cli_reports_a_postgres_bucket_table_as_filled() {
    let table = "hl_prov_cli_pg";
    setup(&POSTGRES, table).await;
    let args = ["--table", table, "--bucket-space", "100"];
    let (ok, out, err) = cli_provision(
        &url(&POSTGRES),
        &[&args[..], &["--postgres-locks", "bucket-table"]].concat(),
    );
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("`hl_prov_cli_pg` is complete: 300 rows") && !out.contains("SQLite"),
        "{out}"
    );
    // Progress on stderr though it is no terminal.
    assert!(
        err.contains("provisioning: 300 of 300 rows (100%)"),
        "{err}"
    );

    let (ok, out, err) = cli_provision(&url(&POSTGRES), &args);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("advisory locks") && out.contains("no bucket table needed"),
        "{out}"
    );
}

/// With subtree reads the table has five levels: the report's total and the
/// command's summary count the stripe levels (5 × the bucket space).
#[tokio::test]
async fn a_striped_total_counts_five_levels() {
    let table = "hl_prov_cli_striped";
    let db = setup(&MARIADB, table).await;
    let config = striped(config(table, 100), 4);
    let done = Provision::new(config).run(&db).await.expect("provision");
    assert_eq!(done, report(500, 500, 0));
    drop_tables(&db, table).await;

    let args = [
        "--table",
        table,
        "--bucket-space",
        "100",
        "--subtree-reads",
        "4",
    ];
    let (ok, out, err) = cli_provision(&url(&MARIADB), &args);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains(
            "`hl_prov_cli_striped` is complete: 500 rows (100 buckets per level, 5 levels)"
        ),
        "{out}"
    );
    assert!(
        err.contains("provisioning: 500 of 500 rows (100%)"),
        "{err}"
    );
}

/// `--concurrent-levels 1` fills one level after the other (each progress
/// line names the level of its last chunk, in order); 0 is refused with the
/// reason, nothing created.
#[tokio::test]
async fn cli_fills_one_level_at_a_time_when_told() {
    let table = "hl_prov_cli_one_level";
    let db = setup(&MYSQL, table).await;
    let args = [
        "--table",
        table,
        "--bucket-space",
        "1000",
        "--chunk-rows",
        "100",
    ];
    let (ok, out, err) = cli_provision(
        &url(&MYSQL),
        &[&args[..], &["--concurrent-levels", "1"]].concat(),
    );
    assert!(ok, "{out}{err}");
    let levels: Vec<&str> = err
        .lines()
        .filter_map(|l| l.split("last chunk: ").nth(1))
        .filter_map(|rest| rest.split(',').next())
        .collect();
    assert!(levels.len() >= 3, "{err}");
    let order = ["user", "account", "resource"];
    let rank = |level: &str| order.iter().position(|o| level == *o);
    assert!(levels.iter().all(|l| rank(l).is_some()), "{err}");
    assert!(
        levels.windows(2).all(|w| rank(w[0]) <= rank(w[1])),
        "levels out of order: {err}"
    );
    assert_full(&db, table, 1000).await;

    drop_tables(&db, table).await;
    let (ok, out, err) = cli_provision(
        &url(&MYSQL),
        &[&args[..], &["--concurrent-levels", "0"]].concat(),
    );
    assert!(!ok, "{out}{err}");
    assert!(
        err.contains("concurrent_levels must be at least 1"),
        "{err}"
    );
}

#[tokio::test]
async fn cli_reports_sqlite_as_needing_no_rows() {
    let (ok, out, err) = cli_provision("sqlite::memory:", &["--table", "hl_prov_cli_sqlite"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("SQLite: one database-wide write lock, no bucket rows needed"),
        "{out}"
    );
}

#[tokio::test]
async fn cli_says_how_to_fix_a_bucket_space_mismatch() {
    let table = "hl_prov_cli_mismatch";
    setup(&MARIADB, table).await;
    let (ok, out, err) =
        cli_provision(&url(&MARIADB), &["--table", table, "--bucket-space", "100"]);
    assert!(ok, "{out}{err}");
    let (ok, out, err) =
        cli_provision(&url(&MARIADB), &["--table", table, "--bucket-space", "200"]);
    assert!(!ok, "{out}{err}");
    assert!(err.contains("100 buckets per level"), "{err}");
    assert!(
        err.contains("hint:") && err.contains("--bucket-space") && err.contains("--table"),
        "{err}"
    );
}

#[tokio::test]
async fn cli_provisions_the_stripe_levels_with_subtree_reads() {
    let table = "hl_prov_cli_stripes";
    let db = setup(&MARIADB, table).await;
    let args = ["--table", table, "--bucket-space", "100"];
    let (ok, out, err) = cli_provision(
        &url(&MARIADB),
        &[&args[..], &["--subtree-reads", "4"]].concat(),
    );
    assert!(ok, "{out}{err}");
    assert!(
        out.contains(
            "`hl_prov_cli_stripes` is complete: 500 rows (100 buckets per level, 5 levels)"
        ),
        "{out}"
    );
    assert_levels_full(&db, table, 100, 0..5).await;
    let config = striped(config(table, 100), 4);
    assert_eq!(
        recorded_layout(&db, &config).await,
        "seed-fnv1a32+stripes-4"
    );

    // The same table without the flag: refused, and the hint names it.
    let (ok, out, err) = cli_provision(&url(&MARIADB), &args);
    assert!(!ok, "{out}{err}");
    assert!(err.contains("seed-fnv1a32+stripes-4"), "{err}");
    assert!(
        err.contains("hint:") && err.contains("--subtree-reads"),
        "{err}"
    );
    assert_levels_full(&db, table, 100, 0..5).await;
}

#[test]
fn cli_refuses_zero_stripes_before_connecting() {
    // Nothing listens on port 1: a connection attempt would fail otherwise.
    let (ok, out, err) = cli_provision("mysql://root@127.0.0.1:1/test", &["--subtree-reads", "0"]);
    assert!(!ok, "{out}{err}");
    assert!(
        err.contains("--subtree-reads 0") && err.contains("1..=1024 stripes per node"),
        "{err}"
    );
}
