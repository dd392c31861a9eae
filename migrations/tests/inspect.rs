//! `verify` and `status` (and the `hierlock` command running them) against
//! the real servers: MariaDB, MySQL, PostgreSQL (both lock stores), SQLite.

use std::process::Command;

use hierlock::{Config, ErrorKind, PostgresLocks, SubtreeReads, Topology};
use hierlock_migration::{LockStore, Provision, status, verify};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, Statement};

const SPACE: u32 = 50;

struct Server {
    url: String,
    postgres_locks: Option<PostgresLocks>,
}

fn servers() -> Vec<Server> {
    let url = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.to_owned());
    let sqlite = std::env::temp_dir().join(format!("hierlock-inspect-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&sqlite);
    vec![
        Server {
            url: url("HIERLOCK_MARIADB_URL", "mysql://root@127.0.0.1:3306/test"),
            postgres_locks: None,
        },
        Server {
            url: url("HIERLOCK_MYSQL_URL", "mysql://root@127.0.0.1:3307/test"),
            postgres_locks: None,
        },
        Server {
            url: url(
                "HIERLOCK_POSTGRES_URL",
                "postgres://postgres@127.0.0.1:5432/test",
            ),
            postgres_locks: Some(PostgresLocks::BucketTable),
        },
        Server {
            url: url(
                "HIERLOCK_POSTGRES_URL",
                "postgres://postgres@127.0.0.1:5432/test",
            ),
            postgres_locks: Some(PostgresLocks::default()),
        },
        Server {
            url: format!("sqlite://{}?mode=rwc", sqlite.display()),
            postgres_locks: None,
        },
    ]
}

async fn connect(url: &str) -> DatabaseConnection {
    Database::connect(url)
        .await
        .unwrap_or_else(|e| panic!("{url} is unreachable ({e}): the suite needs it"))
}

fn config(table: &str, server: &Server) -> Config {
    let config = Config::default()
        .with_table(table)
        .and_then(|c| c.with_bucket_space(SPACE))
        .expect("valid");
    match server.postgres_locks {
        Some(locks) => config.with_postgres_locks(locks),
        None => config,
    }
}

async fn fresh(db: &DatabaseConnection, config: &Config) {
    for table in [config.table().to_string(), config.table().meta()] {
        db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}"))
            .await
            .expect("drop");
    }
    Provision::new(config.clone())
        .run(db)
        .await
        .expect("provision");
}

#[tokio::test]
async fn verify_reports_a_complete_table_and_names_a_missing_level() {
    for (i, server) in servers().iter().enumerate() {
        let db = connect(&server.url).await;
        let config = config(&format!("hl_inspect_verify_{i}"), server);
        fresh(&db, &config).await;
        let verified = verify(&db, &config).await.expect("complete");
        assert_eq!(verified.topology, Topology::Single, "{}", server.url);
        match verified.store {
            LockStore::BucketTable => {
                assert_eq!(
                    verified.rows_per_level,
                    Some(vec![50, 50, 50]),
                    "{}",
                    server.url
                );
                // One account bucket gone: named, and not complete.
                db.execute_raw(Statement::from_string(
                    db.get_database_backend(),
                    format!(
                        "DELETE FROM {} WHERE level = 1 AND bucket = 7",
                        config.table()
                    ),
                ))
                .await
                .expect("delete a row");
                let err = verify(&db, &config).await.expect_err("a row is missing");
                assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");
                assert!(err.to_string().contains("level 1 (account)"), "{err}");
                assert!(err.to_string().contains("49 of 50"), "{err}");
            }
            LockStore::Advisory | LockStore::SqliteWriteLock => {
                assert_eq!(verified.rows_per_level, None, "{}", server.url);
            }
        }
    }
}

#[tokio::test]
async fn status_reports_the_server_its_store_and_sizes() {
    for (i, server) in servers().iter().enumerate() {
        let db = connect(&server.url).await;
        let config = config(&format!("hl_inspect_status_{i}"), server);
        fresh(&db, &config).await;
        let status = status(&db, &config).await.expect("status");
        assert!(!status.version.is_empty(), "{}", server.url);
        assert_eq!(status.topology, Topology::Single);
        match status.store {
            LockStore::BucketTable => {
                assert!(status.table_bytes.is_some_and(|b| b > 0), "{status}");
                assert!(status.cache_bytes.is_some_and(|b| b > 0), "{status}");
            }
            LockStore::Advisory => {
                assert!(status.lock_table_slots.is_some_and(|n| n > 0), "{status}");
            }
            LockStore::SqliteWriteLock => {
                assert!(
                    status.advice.iter().any(|a| a.contains("serialises")),
                    "{status}"
                );
            }
        }
    }
}

/// The `hierlock` command on every server: exit 0 and a report (text or
/// `--json`) when fit, exit 1 and the reason on stderr when not.
#[tokio::test]
async fn the_command_line_verifies_and_reports() {
    for (i, server) in servers().iter().enumerate() {
        let db = connect(&server.url).await;
        let table = format!("hl_inspect_cli_{i}");
        let config = config(&table, server);
        fresh(&db, &config).await;
        let run = |args: &[&str]| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_hierlock"));
            command.args(args).args([
                "--database-url",
                &server.url,
                "--bucket-space",
                "50",
                "--table",
                &table,
            ]);
            if server.postgres_locks == Some(PostgresLocks::BucketTable) {
                command.args(["--postgres-locks", "bucket-table"]);
            }
            let out = command.output().expect("run hierlock");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            (out.status.code(), stdout, stderr)
        };
        let (code, stdout, stderr) = run(&["verify"]);
        assert_eq!(code, Some(0), "{}: {stdout}{stderr}", server.url);
        assert!(
            stdout.contains("topology: a single writable server"),
            "{stdout}"
        );
        let (code, stdout, stderr) = run(&["verify", "--json"]);
        assert_eq!(code, Some(0), "{}: {stderr}", server.url);
        let verified: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
        let (code, stdout, stderr) = run(&["status", "--json"]);
        assert_eq!(code, Some(0), "{}: {stderr}", server.url);
        let status: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
        assert!(
            status["version"].as_str().is_some_and(|v| !v.is_empty()),
            "{stdout}"
        );
        match verified["store"].as_str() {
            Some("bucket_table") => {
                assert_eq!(verified["rows_per_level"], serde_json::json!([50, 50, 50]));
                assert!(stdout.contains("\"cache_bytes\": "), "{stdout}");
                let (_, text, _) = run(&["status"]);
                assert!(text.contains("cache:"), "{}: {text}", server.url);
                let (_, text, _) = run(&["verify"]);
                assert!(text.contains("complete: 50 / 50 / 50"), "{text}");
            }
            Some("advisory" | "sqlite_write_lock") => {
                assert!(verified["rows_per_level"].is_null(), "{verified}");
            }
            other => panic!("{}: store {other:?}", server.url),
        }
        if verified["store"] == "bucket_table" {
            db.execute_unprepared(&format!(
                "DELETE FROM {table} WHERE level = 2 AND bucket = 3"
            ))
            .await
            .expect("delete a row");
            let (code, _, stderr) = run(&["verify"]);
            assert_eq!(code, Some(1), "{}", server.url);
            assert!(stderr.contains("level 2 (resource)"), "{stderr}");
            assert!(stderr.contains("not provisioned"), "{stderr}");
        }
    }
}

/// `status` and `verify` on a database whose bucket table was never
/// provisioned fail and name the command that provisions it, with the
/// options given (the URL left out when it came from `DATABASE_URL`); that
/// command then makes them succeed. Every server with a bucket table.
#[tokio::test]
async fn an_unprovisioned_table_is_refused_with_the_command_to_run() {
    for (i, server) in servers().iter().enumerate() {
        if server.url.starts_with("sqlite:")
            || server.postgres_locks == Some(PostgresLocks::default())
        {
            continue; // no bucket table to provision
        }
        let db = connect(&server.url).await;
        let table = format!("hl_inspect_unprovisioned_{i}");
        for name in [table.clone(), format!("{table}_meta")] {
            db.execute_unprepared(&format!("DROP TABLE IF EXISTS {name}"))
                .await
                .expect("drop");
        }
        let mut options = vec!["--table", &table, "--bucket-space", "50"];
        if server.postgres_locks == Some(PostgresLocks::BucketTable) {
            options.extend(["--postgres-locks", "bucket-table"]);
        }
        let run = |command: &str, url_in_env: bool| {
            let mut run = Command::new(env!("CARGO_BIN_EXE_hierlock"));
            run.arg(command).args(&options);
            if url_in_env {
                run.env("DATABASE_URL", &server.url);
            } else {
                run.env_remove("DATABASE_URL")
                    .args(["--database-url", &server.url]);
            }
            let out = run.output().expect("run hierlock");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            (out.status.code(), stdout, stderr)
        };
        let given = options.join(" ");
        for command in ["status", "verify"] {
            let (code, _, stderr) = run(command, false);
            assert_eq!(code, Some(1), "{}: {stderr}", server.url);
            assert!(stderr.contains("is not provisioned"), "{stderr}");
            let hint = format!(
                "hint: run `hierlock provision --database-url {} {given}`",
                server.url
            );
            assert!(stderr.contains(&hint), "{}: {stderr}", server.url);
        }
        let (code, _, stderr) = run("status", true);
        assert_eq!(code, Some(1), "{}: {stderr}", server.url);
        assert!(
            stderr.contains(&format!("hint: run `hierlock provision {given}`")),
            "{stderr}"
        );

        let (code, stdout, stderr) = run("provision", false);
        assert_eq!(code, Some(0), "{}: {stdout}{stderr}", server.url);
        for command in ["status", "verify"] {
            let (code, stdout, stderr) = run(command, false);
            assert_eq!(code, Some(0), "{}: {stdout}{stderr}", server.url);
        }
    }
}

/// The reports name each server as it names itself.
#[tokio::test]
async fn the_reports_name_the_server() {
    for (i, server) in servers().iter().enumerate() {
        let db = connect(&server.url).await;
        let config = config(&format!("hl_inspect_names_{i}"), server);
        fresh(&db, &config).await;
        let status = status(&db, &config).await.expect("status");
        let name = match status.dialect {
            hierlock::Dialect::MariaDb => "MariaDB",
            hierlock::Dialect::MySql => "MySQL",
            hierlock::Dialect::Postgres => "PostgreSQL",
            _ => "SQLite",
        };
        let text = status.to_string();
        assert!(
            text.starts_with(&format!("server:   {name} (")),
            "{}: {text}",
            server.url
        );
        let verified = verify(&db, &config).await.expect("verify").to_string();
        assert!(
            verified.starts_with(&format!("server:   {name}\n")),
            "{verified}"
        );
    }
}

/// With subtree reads the table has five levels: `verify` counts each (the
/// report, its text and its JSON), and a missing stripe row is named by its
/// level. Every server; where there is no bucket table, no counts.
#[tokio::test]
async fn verify_counts_the_stripe_levels_and_names_a_missing_stripe_row() {
    for (i, server) in servers().iter().enumerate() {
        let db = connect(&server.url).await;
        let table = format!("hl_inspect_stripes_{i}");
        let config =
            config(&table, server).with_subtree_reads(SubtreeReads::striped(4).expect("4 stripes"));
        fresh(&db, &config).await;
        let verified = verify(&db, &config).await.expect("complete");
        let run = |args: &[&str]| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_hierlock"));
            command.args(args).args([
                "--database-url",
                &server.url,
                "--bucket-space",
                "50",
                "--table",
                &table,
                "--subtree-reads",
                "4",
            ]);
            if server.postgres_locks == Some(PostgresLocks::BucketTable) {
                command.args(["--postgres-locks", "bucket-table"]);
            }
            let out = command.output().expect("run hierlock");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            (out.status.code(), stdout, stderr)
        };
        if verified.store != LockStore::BucketTable {
            assert_eq!(verified.rows_per_level, None, "{}", server.url);
            continue;
        }
        assert_eq!(verified.rows_per_level, Some(vec![50; 5]), "{}", server.url);
        assert!(
            verified.to_string().contains(
                "complete: 50 / 50 / 50 / 50 / 50 rows \
                 (user / account / resource / user stripes / account stripes)"
            ),
            "{verified}"
        );
        let (code, stdout, stderr) = run(&["verify", "--json"]);
        assert_eq!(code, Some(0), "{}: {stderr}", server.url);
        let json: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
        assert_eq!(
            json["rows_per_level"],
            serde_json::json!([50, 50, 50, 50, 50])
        );
        let (code, stdout, stderr) = run(&["verify"]);
        assert_eq!(code, Some(0), "{}: {stderr}", server.url);
        assert!(
            stdout.contains("complete: 50 / 50 / 50 / 50 / 50"),
            "{stdout}"
        );

        // One account stripe row gone: named by its level, and not complete.
        db.execute_unprepared(&format!(
            "DELETE FROM {table} WHERE level = 4 AND bucket = 7"
        ))
        .await
        .expect("delete a stripe row");
        let err = verify(&db, &config)
            .await
            .expect_err("a stripe row is missing");
        assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");
        assert!(
            err.to_string().contains("level 4 (account stripes)"),
            "{err}"
        );
        assert!(err.to_string().contains("49 of 50"), "{err}");
        let (code, _, stderr) = run(&["verify"]);
        assert_eq!(code, Some(1), "{}", server.url);
        assert!(stderr.contains("level 4 (account stripes)"), "{stderr}");
    }
}

/// `verify` runs the read-only / replica checks of `Locker::connect`: a
/// read-only session (what a replica or a server being failed over gives)
/// is refused on every server, by kind, naming why.
#[tokio::test]
async fn verify_refuses_a_read_only_session() {
    for (i, server) in servers().iter().take(4).enumerate() {
        let db = connect(&server.url).await;
        let config = config(&format!("hl_inspect_read_only_{i}"), server);
        fresh(&db, &config).await;
        // One connection, so that the session setting is the one verify uses.
        let mut options = sea_orm::ConnectOptions::new(server.url.clone());
        options.max_connections(1).min_connections(1);
        let read_only = Database::connect(options).await.expect("connect");
        let sql = if read_only.get_database_backend() == sea_orm::DbBackend::Postgres {
            "SET SESSION default_transaction_read_only = on"
        } else {
            "SET SESSION TRANSACTION READ ONLY"
        };
        read_only.execute_unprepared(sql).await.expect(sql);
        let err = verify(&read_only, &config)
            .await
            .expect_err("a read-only session is refused");
        assert_eq!(
            err.kind(),
            ErrorKind::UnsafeTopology,
            "{}: {err}",
            server.url
        );
        assert!(err.to_string().contains("read-only"), "{err}");
        verify(&db, &config)
            .await
            .expect("a writable session is fit");
    }
}

/// `verify` compares the table's metadata with the services' configuration:
/// another bucket space is refused by kind, naming both.
#[tokio::test]
async fn verify_refuses_a_table_provisioned_for_another_bucket_space() {
    for (i, server) in servers().iter().take(3).enumerate() {
        let db = connect(&server.url).await;
        let config = config(&format!("hl_inspect_space_{i}"), server);
        fresh(&db, &config).await;
        let other = config.clone().with_bucket_space(SPACE + 10).expect("valid");
        let err = verify(&db, &other)
            .await
            .expect_err("another bucket space is refused");
        assert_eq!(
            err.kind(),
            ErrorKind::ConfigMismatch,
            "{}: {err}",
            server.url
        );
        assert!(err.to_string().contains("50"), "{err}");
        assert!(err.to_string().contains("60"), "{err}");
    }
}
