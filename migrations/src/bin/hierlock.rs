//! `hierlock`: the operator's command line.
//!
//! ```text
//! hierlock provision --database-url mysql://root@127.0.0.1:3306/app   # create and fill the bucket table (resumable)
//! hierlock verify    --database-url mysql://root@127.0.0.1:3306/app   # complete? fit for locks? (exit 1 if not)
//! hierlock verify    --database-url .. --protected-table accounts,resources   # also: no foreign key cascades into them
//! hierlock status    --database-url mysql://root@127.0.0.1:3306/app   # server, topology, sizes, advice
//! hierlock inspect   --database-url mysql://root@127.0.0.1:3306/app u1/a1/r1   # who holds, who waits
//! ```
//!
//! `verify`, `status` and `inspect` print JSON with `--json`.
//!
//! `DATABASE_URL` may replace `--database-url`.

use std::cell::{Cell, OnceCell};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use hierlock::{Config, ErrorKind, PostgresLocks, SEED_BUCKET_SPACE, SubtreeReads};
use hierlock_migration::{CascadingForeignKey, LockStore, Provision, error_chain};
use indicatif::{HumanCount, HumanDuration, ProgressBar, ProgressStyle};

/// hierlock's operator commands.
#[derive(Debug, Parser)]
#[command(name = "hierlock", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create and fill the bucket table (resumable; safe to run again).
    ///
    /// On PostgreSQL hierlock uses advisory locks by default and needs the
    /// table only with `--postgres-locks bucket-table`; on SQLite only a
    /// metadata row is created.
    Provision {
        #[command(flatten)]
        target: Target,
        /// Rows per INSERT statement; each commits on its own [default:
        /// 1000000 on MariaDB with its sequence engine, 50000 elsewhere].
        #[arg(long)]
        chunk_rows: Option<u32>,
        /// Levels filled at the same time, each on a connection of its own
        /// (1: one after the other).
        #[arg(long, default_value_t = hierlock_migration::DEFAULT_CONCURRENT_LEVELS)]
        concurrent_levels: usize,
    },
    /// Check that the server is fit for locks (topology) and that the bucket
    /// table is complete and provisioned as configured. Exit code 1 if not.
    ///
    /// With `--protected-table`, also report the foreign keys of those tables
    /// through which the server changes their rows with no lock (`ON DELETE`
    /// or `ON UPDATE` `CASCADE`, `SET NULL`, `SET DEFAULT`); exit code 1 if
    /// there is one.
    Verify {
        #[command(flatten)]
        target: Target,
        /// The application's `#[hierlock::protected]` tables (their
        /// `table_name`s), comma-separated or repeated: report foreign keys
        /// that cascade into them.
        #[arg(long, value_name = "TABLE", value_delimiter = ',')]
        protected_table: Vec<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Report the server, its topology, how locks are kept, and the table's
    /// size against the server's cache, with sizing advice.
    Status {
        #[command(flatten)]
        target: Target,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the hierlock locks held and awaited right now, from the server's
    /// lock views: session, mode, level and bucket (or advisory key), how
    /// long waiters have waited, the hottest keys, and which of the named
    /// nodes (and their ancestors) hash to each key. MariaDB lists only locks
    /// involved in a wait; PostgreSQL's bucket table only rows someone waits for.
    Inspect {
        #[command(flatten)]
        source: LockSource,
        /// Nodes to map the locks to, as IDs joined with `/`: a user `u1`,
        /// an account `u1/a1`, a resource `u1/a1/r1`.
        #[arg(value_name = "NODE", value_parser = parse_node)]
        nodes: Vec<hierlock::Target>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Where `inspect` looks: the bucket space and key scheme are read from the
/// table's metadata row.
#[derive(Debug, Args)]
struct LockSource {
    /// The database, e.g. mysql://user:pass@host:3306/db.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Bucket table.
    #[arg(long, default_value = hierlock::DEFAULT_TABLE)]
    table: String,
    /// How locks are kept on PostgreSQL.
    #[arg(long, value_enum, default_value_t = PgLocks::Advisory)]
    postgres_locks: PgLocks,
    /// The services' advisory-lock namespace on PostgreSQL (top 16 bits of every key).
    #[arg(long, default_value_t = hierlock::DEFAULT_ADVISORY_NAMESPACE)]
    advisory_namespace: u16,
}

fn parse_node(path: &str) -> Result<hierlock::Target, String> {
    hierlock_migration::target_from_path(path).map_err(|e| e.to_string())
}

/// Which database, and the configuration the services use.
#[derive(Debug, Args)]
struct Target {
    /// The database, e.g. mysql://user:pass@host:3306/db.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Bucket table (its metadata table is this name with `_meta` appended).
    #[arg(long, default_value = hierlock::DEFAULT_TABLE)]
    table: String,
    /// Buckets per level; every service sharing the table must use the same.
    #[arg(long, default_value_t = SEED_BUCKET_SPACE)]
    bucket_space: u32,
    /// How locks are kept on PostgreSQL.
    #[arg(long, value_enum, default_value_t = PgLocks::Advisory)]
    postgres_locks: PgLocks,
    /// Accept a Galera node (every lock-taking transaction on one node).
    #[arg(long)]
    galera_single_writer: bool,
    /// Accept a member of a multi-primary MySQL Group Replication group
    /// (every lock-taking transaction on one member).
    #[arg(long)]
    group_replication_single_writer: bool,
    /// Subtree reads: this many stripe rows per user and per account (the
    /// table gets two more levels of --bucket-space rows each). Every service
    /// must configure the same (`Config::with_subtree_reads`).
    #[arg(long, value_name = "STRIPES")]
    subtree_reads: Option<u16>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum PgLocks {
    /// Transaction-scoped advisory locks, no table (the default).
    Advisory,
    /// Row locks on the bucket table.
    BucketTable,
}

impl Target {
    fn config(&self) -> Result<Config, String> {
        let mut config = Config::default()
            .with_table(&self.table)
            .and_then(|config| config.with_bucket_space(self.bucket_space))
            .map_err(|e| error_chain(&e))?;
        if let PgLocks::BucketTable = self.postgres_locks {
            config = config.with_postgres_locks(PostgresLocks::BucketTable);
        }
        if self.galera_single_writer {
            config = config.with_galera_single_writer();
        }
        if self.group_replication_single_writer {
            config = config.with_group_replication_single_writer();
        }
        if let Some(stripes) = self.subtree_reads {
            let layout = SubtreeReads::striped(stripes)
                .map_err(|e| format!("--subtree-reads {stripes}: {}", error_chain(&e)))?;
            config = config.with_subtree_reads(layout);
        }
        Ok(config)
    }

    /// The `hierlock provision` command for this configuration: the options
    /// that change what is provisioned, as given (defaults left out), and the
    /// URL unless it came from `DATABASE_URL`, with its password left out.
    fn provision_command(&self, url_from_env: bool) -> String {
        let mut command = "hierlock provision".to_owned();
        if !url_from_env {
            command += &format!(" --database-url {}", without_password(&self.database_url));
        }
        if self.table != hierlock::DEFAULT_TABLE {
            command += &format!(" --table {}", self.table);
        }
        if self.bucket_space != SEED_BUCKET_SPACE {
            command += &format!(" --bucket-space {}", self.bucket_space);
        }
        if let Some(stripes) = self.subtree_reads {
            command += &format!(" --subtree-reads {stripes}");
        }
        if let PgLocks::BucketTable = self.postgres_locks {
            command += " --postgres-locks bucket-table";
        }
        command
    }

    /// `error`'s chain; for a table missing, incomplete or missing rows,
    /// followed by the command that provisions (or completes) it.
    fn explain(&self, error: &hierlock::Error, url_from_env: bool) -> String {
        match error.kind() {
            ErrorKind::NotProvisioned => format!(
                "{}\nhint: run `{}` (it resumes a partial table and fills missing rows)",
                error_chain(error),
                self.provision_command(url_from_env)
            ),
            _ => error_chain(error),
        }
    }

    async fn connect(&self) -> Result<hierlock::sea_orm::DatabaseConnection, String> {
        hierlock::sea_orm::Database::connect(&self.database_url)
            .await
            .map_err(|e| format!("cannot connect to the database: {}", error_chain(&e)))
    }
}

/// `password` in `scheme://user:password@host/…` replaced by `PASSWORD`, so
/// that a hint can name the URL without printing the secret.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:PASSWORD@{host}{path}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // Whether the URL came from DATABASE_URL, so that a hint can leave it out.
    let url_from_env = matches
        .subcommand()
        .is_some_and(|(_, sub)| sub.value_source("database_url") == Some(ValueSource::EnvVariable));
    let outcome = match &cli.command {
        Command::Provision {
            target,
            chunk_rows,
            concurrent_levels,
        } => provision(target, *chunk_rows, *concurrent_levels).await,
        Command::Verify {
            target,
            protected_table,
            json,
        } => verify(target, protected_table, *json, url_from_env).await,
        Command::Status { target, json } => status(target, *json, url_from_env).await,
        Command::Inspect {
            source,
            nodes,
            json,
        } => inspect(source, nodes, *json).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("hierlock: {message}");
            ExitCode::FAILURE
        }
    }
}

/// What `verify` prints: the verification, and with `--protected-table` the
/// foreign keys cascading into those tables.
#[derive(serde::Serialize)]
struct VerifyReport {
    #[serde(flatten)]
    verification: hierlock_migration::Verification,
    #[serde(skip_serializing_if = "Option::is_none")]
    cascades: Option<Vec<CascadingForeignKey>>,
}

async fn verify(
    target: &Target,
    protected_tables: &[String],
    json: bool,
    url_from_env: bool,
) -> Result<(), String> {
    let config = target.config()?;
    let db = target.connect().await?;
    let verification = hierlock_migration::verify(&db, &config)
        .await
        .map_err(|e| target.explain(&e, url_from_env))?;
    let cascades = if protected_tables.is_empty() {
        None
    } else {
        Some(
            hierlock_migration::cascades_into(&db, protected_tables)
                .await
                .map_err(|e| error_chain(&e))?,
        )
    };
    let report_of = VerifyReport {
        verification,
        cascades,
    };
    report(&report_of, json, |r| {
        println!("{}", r.verification);
        match &r.cascades {
            Some(keys) if keys.is_empty() => {
                let tables: Vec<String> =
                    protected_tables.iter().map(|t| format!("`{t}`")).collect();
                println!("cascades: none into {}", tables.join(", "));
            }
            Some(keys) => {
                for key in keys {
                    println!("cascade:  {key}");
                }
            }
            None => {}
        }
    })?;
    match report_of.cascades {
        Some(keys) if !keys.is_empty() => Err(format!(
            "rows of protected tables change with no lock through {} when a parent row \
             is deleted or its key updated: declare the relation `on_delete = \"Restrict\"` (or \
             `\"NoAction\"`) and delete the protected rows first, with \
             `Entity::delete_many().filter(..).exec(&lock)`",
            match keys.len() {
                1 => "a foreign key".to_owned(),
                n => format!("{n} foreign keys"),
            }
        )),
        _ => Ok(()),
    }
}

async fn status(target: &Target, json: bool, url_from_env: bool) -> Result<(), String> {
    let config = target.config()?;
    let db = target.connect().await?;
    let status = hierlock_migration::status(&db, &config)
        .await
        .map_err(|e| target.explain(&e, url_from_env))?;
    report(&status, json, |s| print!("{s}"))
}

async fn inspect(
    source: &LockSource,
    nodes: &[hierlock::Target],
    json: bool,
) -> Result<(), String> {
    let mut config = Config::default()
        .with_table(&source.table)
        .map_err(|e| error_chain(&e))?
        .with_postgres_locks(PostgresLocks::Advisory {
            namespace: source.advisory_namespace,
        });
    if let PgLocks::BucketTable = source.postgres_locks {
        config = config.with_postgres_locks(PostgresLocks::BucketTable);
    }
    let db = hierlock::sea_orm::Database::connect(&source.database_url)
        .await
        .map_err(|e| format!("cannot connect to the database: {}", error_chain(&e)))?;
    let locks = hierlock_migration::live_locks(&db, &config, nodes)
        .await
        .map_err(|e| error_chain(&e))?;
    report(&locks, json, |l| print!("{l}"))
}

/// `value` as pretty JSON on stdout, or as `human` prints it.
fn report<T: serde::Serialize>(
    value: &T,
    json: bool,
    human: impl FnOnce(&T),
) -> Result<(), String> {
    if json {
        let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        human(value);
    }
    Ok(())
}

async fn provision(
    target: &Target,
    chunk_rows: Option<u32>,
    concurrent_levels: usize,
) -> Result<(), String> {
    let config = target.config()?;
    let db = target.connect().await?;
    let progress = Progress::new()?;
    let started = Instant::now();
    let mut provision = Provision::new(config.clone()).concurrent_levels(concurrent_levels);
    if let Some(rows) = chunk_rows {
        provision = provision.chunk_rows(rows);
    }
    let result = provision
        .run_with_progress(&db, |p| progress.update(p))
        .await;
    progress.finish();
    let report = result.map_err(|e| match e.kind() {
        ErrorKind::ConfigMismatch => format!(
            "{}\nhint: to use the table as it is, pass the bucket space and the layout it records \
             (--bucket-space; --subtree-reads K for `+stripes-K`); to change them, provision \
             another table (--table) or drop `{table}` and `{table}_meta` and provision again, \
             then move every service over at once",
            error_chain(&e),
            table = target.table,
        ),
        _ => error_chain(&e),
    })?;
    let elapsed = started.elapsed();
    match report.store {
        LockStore::Advisory => println!(
            "PostgreSQL with advisory locks (the default): no bucket table needed, nothing created \
             (pass --postgres-locks bucket-table to lock rows of `{}` instead)",
            target.table
        ),
        LockStore::SqliteWriteLock => println!(
            "SQLite: one database-wide write lock, no bucket rows needed; metadata table `{}_meta` ready",
            target.table
        ),
        LockStore::BucketTable => {
            let rate = report.inserted as f64 / elapsed.as_secs_f64().max(1e-9);
            println!(
                "`{}` is complete: {} rows ({} buckets per level, {} levels)",
                target.table,
                HumanCount(report.total_rows),
                HumanCount(u64::from(target.bucket_space)),
                config.table_levels().len(),
            );
            println!(
                "inserted {} rows in {:.1?} ({} rows/s); {} were already there",
                HumanCount(report.inserted),
                elapsed,
                HumanCount(rate.round() as u64),
                HumanCount(report.resumed_from),
            );
        }
    }
    Ok(())
}

/// A progress bar on a terminal; a plain line per 5% otherwise (logs, CI,
/// a pipe). Rate and time left count only the rows this run inserts, timed
/// from its first report (after it has counted the rows already there).
struct Progress {
    bar: Option<ProgressBar>,
    started: OnceCell<Instant>,
    last_step: Cell<u64>,
}

impl Progress {
    fn new() -> Result<Progress, String> {
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{bar:40}] {human_pos}/{human_len} rows, {msg}",
                )
                .map_err(|e| e.to_string())?
                .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            Some(bar)
        } else {
            None
        };
        Ok(Progress {
            bar,
            started: OnceCell::new(),
            last_step: Cell::new(u64::MAX),
        })
    }

    fn update(&self, progress: &hierlock_migration::Progress) {
        let started = *self.started.get_or_init(Instant::now);
        let pace = pace(progress, started.elapsed());
        // The levels fill side by side: name the one whose chunk just ended.
        let last = if progress.rows_done == progress.resumed_from {
            "starting".to_owned()
        } else {
            format!(
                "last chunk: {}",
                hierlock::schema::level_name(progress.level)
            )
        };
        match &self.bar {
            Some(bar) => {
                bar.set_length(progress.rows_total);
                bar.set_position(progress.rows_done);
                bar.set_message(format!("{last}, {pace}"));
            }
            None => {
                let step = progress.rows_done * 20 / progress.rows_total.max(1);
                if step != self.last_step.get() {
                    self.last_step.set(step);
                    eprintln!(
                        "provisioning: {} of {} rows ({}%), {last}, {pace}",
                        HumanCount(progress.rows_done),
                        HumanCount(progress.rows_total),
                        step * 5,
                    );
                }
            }
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// "312,000 rows/s, 1m 20s left", or what is known of it yet.
fn pace(progress: &hierlock_migration::Progress, elapsed: Duration) -> String {
    match (progress.rows_per_second(elapsed), progress.eta(elapsed)) {
        (Some(rate), Some(eta)) => format!(
            "{} rows/s, {} left",
            HumanCount(rate.round() as u64),
            HumanDuration(eta)
        ),
        _ if progress.rows_done >= progress.rows_total => "done".to_owned(),
        _ => "measuring the rate".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::without_password;

    #[test]
    fn a_hint_names_the_url_without_its_password() {
        assert_eq!(
            without_password("mysql://app:s3cr@t@db.internal:3306/app?ssl-mode=required"),
            "mysql://app:PASSWORD@db.internal:3306/app?ssl-mode=required"
        );
        for url in [
            "mysql://root@127.0.0.1:3306/test",
            "postgres://postgres@127.0.0.1:5432/test",
            "sqlite://app.db?mode=rwc",
            "sqlite::memory:",
        ] {
            assert_eq!(without_password(url), url);
        }
    }
}
