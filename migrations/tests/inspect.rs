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

/// The foreign keys through which the server changes a protected table's
/// rows (`ON DELETE` / `ON UPDATE` `CASCADE`, `SET NULL`) are reported with
/// the table they come from; `RESTRICT` and `NO ACTION` keys, and keys of
/// tables not named, are not; a table that does not exist is refused. `hierlock
/// verify --protected-table` prints them and exits with code 1.
#[tokio::test]
async fn verify_reports_foreign_keys_cascading_into_protected_tables() {
    use hierlock_migration::{CascadingForeignKey, ReferentialAction, cascades_into};

    for (i, server) in servers().iter().enumerate() {
        let db = connect(&server.url).await;
        let config = config(&format!("hl_inspect_fk_{i}"), server);
        fresh(&db, &config).await;
        let [parent, cascade, nulled, updated, strict, plain] =
            ["parent", "cascade", "nulled", "updated", "strict", "plain"]
                .map(|t| format!("hl_fk_{t}_{i}"));
        for table in [&cascade, &nulled, &updated, &strict, &plain, &parent] {
            db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}"))
                .await
                .expect("drop");
        }
        let child = |table: &str, actions: &str| {
            format!(
                "CREATE TABLE {table} (id BIGINT NOT NULL PRIMARY KEY, parent_id BIGINT, \
                 CONSTRAINT {table}_parent FOREIGN KEY (parent_id) REFERENCES {parent} (id) {actions})"
            )
        };
        for sql in [
            format!("CREATE TABLE {parent} (id BIGINT NOT NULL PRIMARY KEY)"),
            child(&cascade, "ON DELETE CASCADE ON UPDATE RESTRICT"),
            child(&nulled, "ON DELETE SET NULL ON UPDATE RESTRICT"),
            child(&updated, "ON DELETE RESTRICT ON UPDATE CASCADE"),
            child(&strict, "ON DELETE RESTRICT ON UPDATE NO ACTION"),
            child(&plain, "ON DELETE CASCADE"),
        ] {
            db.execute_unprepared(&sql).await.expect("create");
        }
        let sqlite = server.url.starts_with("sqlite:");
        let key = |table: &str, on_delete, on_update| CascadingForeignKey {
            table: table.to_owned(),
            // SQLite keeps no name for a foreign key.
            name: (!sqlite).then(|| format!("{table}_parent")),
            parent: parent.clone(),
            on_delete,
            on_update,
        };

        let found = cascades_into(&db, &[&strict, &updated, &nulled, &cascade])
            .await
            .expect("cascades");
        assert_eq!(
            found,
            [
                key(
                    &cascade,
                    ReferentialAction::Cascade,
                    ReferentialAction::Restrict
                ),
                key(
                    &nulled,
                    ReferentialAction::SetNull,
                    ReferentialAction::Restrict
                ),
                key(
                    &updated,
                    ReferentialAction::Restrict,
                    ReferentialAction::Cascade
                ),
            ],
            "{}",
            server.url
        );
        assert_eq!(
            found[0].to_string(),
            if sqlite {
                format!("`{cascade}` references `{parent}` ON DELETE CASCADE")
            } else {
                format!(
                    "`{cascade}` (foreign key `{cascade}_parent`) references `{parent}` ON DELETE CASCADE"
                )
            }
        );
        assert_eq!(cascades_into(&db, &[&strict]).await.expect("none"), []);
        let err = cascades_into(&db, &[&strict, "hl_fk_nowhere"])
            .await
            .expect_err("no such table");
        assert_eq!(err.kind(), ErrorKind::Misuse, "{err}");
        assert!(
            err.to_string().contains("no table `hl_fk_nowhere`"),
            "{err}"
        );

        let run = |args: &[&str]| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_hierlock"));
            command.arg("verify").args(args).args([
                "--database-url",
                &server.url,
                "--bucket-space",
                "50",
                "--table",
                config.table().as_str(),
            ]);
            if server.postgres_locks == Some(PostgresLocks::BucketTable) {
                command.args(["--postgres-locks", "bucket-table"]);
            }
            let out = command.output().expect("run hierlock");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            (out.status.code(), stdout, stderr)
        };
        let (code, stdout, stderr) = run(&["--protected-table", &format!("{strict},{cascade}")]);
        assert_eq!(code, Some(1), "{}: {stdout}{stderr}", server.url);
        assert!(
            stdout.contains(&format!("cascade:  {}", found[0])),
            "{stdout}"
        );
        assert!(
            stderr.contains("rows of protected tables change with no lock through a foreign key"),
            "{stderr}"
        );
        let (code, stdout, stderr) = run(&["--json", "--protected-table", &nulled]);
        assert_eq!(code, Some(1), "{}: {stdout}{stderr}", server.url);
        let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
        assert_eq!(report["cascades"][0]["on_delete"], "set_null", "{stdout}");
        assert_eq!(report["cascades"][0]["on_update"], "restrict", "{stdout}");
        assert!(report["store"].is_string(), "{stdout}");
        let (code, stdout, stderr) =
            run(&["--protected-table", &strict, "--protected-table", &parent]);
        assert_eq!(code, Some(0), "{}: {stdout}{stderr}", server.url);
        assert!(
            stdout.contains(&format!("cascades: none into `{strict}`, `{parent}`")),
            "{stdout}"
        );
        let (code, _, stderr) = run(&["--protected-table", "hl_fk_nowhere"]);
        assert_eq!(code, Some(1), "{}: {stderr}", server.url);
        assert!(stderr.contains("no table `hl_fk_nowhere`"), "{stderr}");
    }
}

/// A plain parent table, referenced by the protected `orm_child`.
mod orm_parent {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hl_fk_orm_parent")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// A protected table whose relation to its parent says `on_delete = "Cascade"`.
#[hierlock::protected(level = account, user = user_id, account = id)]
mod orm_child {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hl_fk_orm_child")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub parent_id: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "super::orm_parent::Entity",
            from = "Column::ParentId",
            to = "super::orm_parent::Column::Id",
            on_delete = "Cascade"
        )]
        Parent,
    }
}

/// The foreign key SeaORM creates from a relation's `on_delete = "Cascade"`
/// into a protected table is reported, under the name SeaORM gives it; and
/// it does delete protected rows, with no lock, when the parent row goes.
#[tokio::test]
async fn a_cascade_seaorm_creates_into_a_protected_table_is_reported() {
    use hierlock_migration::{CascadingForeignKey, ReferentialAction, cascades_into};
    use sea_orm::{PaginatorTrait, Schema};

    for server in servers() {
        if server.postgres_locks == Some(PostgresLocks::BucketTable) {
            continue; // the same PostgreSQL database as the next one
        }
        let db = connect(&server.url).await;
        for table in ["hl_fk_orm_child", "hl_fk_orm_parent"] {
            db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}"))
                .await
                .expect("drop");
        }
        let schema = Schema::new(db.get_database_backend());
        db.execute(&schema.create_table_from_entity(orm_parent::Entity))
            .await
            .expect("create the parent");
        db.execute(&schema.create_table_from_entity(orm_child::Entity))
            .await
            .expect("create the protected child");
        let found = cascades_into(&db, &["hl_fk_orm_child"])
            .await
            .expect("cascades");
        let on_update = found.first().map(|key| key.on_update);
        assert_eq!(
            found,
            [CascadingForeignKey {
                table: "hl_fk_orm_child".to_owned(),
                name: (!server.url.starts_with("sqlite:"))
                    .then(|| "fk-hl_fk_orm_child-parent_id".to_owned()),
                parent: "hl_fk_orm_parent".to_owned(),
                on_delete: ReferentialAction::Cascade,
                // The server's default, however it names it.
                on_update: on_update.expect("one key"),
            }],
            "{}",
            server.url
        );
        for sql in [
            "INSERT INTO hl_fk_orm_parent (id) VALUES (1)",
            "INSERT INTO hl_fk_orm_child (id, user_id, parent_id) VALUES (10, 1, 1)",
            "DELETE FROM hl_fk_orm_parent WHERE id = 1",
        ] {
            db.execute_unprepared(sql).await.expect(sql);
        }
        assert_eq!(
            orm_child::Entity::find().count(&db).await.expect("count"),
            0,
            "{}: the protected row went with its parent",
            server.url
        );
    }
}
