//! `hierlock-provision`: create and fill hierlock's bucket table, with a
//! progress bar. Safe to interrupt and run again: it resumes.
//!
//! ```text
//! DATABASE_URL=mysql://root@127.0.0.1:3306/test hierlock-provision --bucket-space 1000000
//! ```

use hierlock_migration::error_chain;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use hierlock::{Config, SEED_BUCKET_SPACE};
use hierlock_migration::{DEFAULT_CHUNK_ROWS, Provision};
use indicatif::{HumanCount, ProgressBar, ProgressStyle};

/// Create and fill hierlock's bucket table (resumable; safe to run again).
///
/// On PostgreSQL hierlock uses advisory locks by default and needs the table
/// only with `PostgresLocks::BucketTable`; on SQLite only a metadata row is
/// created.
#[derive(Debug, Parser)]
#[command(name = "hierlock-provision", version)]
struct Args {
    /// Database to provision, e.g. mysql://user:pass@host:3306/db.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Bucket table (its metadata table is this name with `_meta` appended).
    #[arg(long, default_value = hierlock::DEFAULT_TABLE)]
    table: String,
    /// Buckets per level; every service sharing the table must use the same.
    #[arg(long, default_value_t = SEED_BUCKET_SPACE)]
    bucket_space: u32,
    /// Rows per INSERT statement; each commits on its own.
    #[arg(long, default_value_t = DEFAULT_CHUNK_ROWS)]
    chunk_rows: u32,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("hierlock-provision: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(), String> {
    let config = Config::default()
        .with_table(&args.table)
        .and_then(|config| config.with_bucket_space(args.bucket_space))
        .map_err(|e| error_chain(&e))?;
    let db = sea_orm::Database::connect(&args.database_url)
        .await
        .map_err(|e| format!("cannot connect to the database: {}", error_chain(&e)))?;

    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg:<9} [{bar:40}] {human_pos}/{human_len} rows ({per_sec:0}, {eta} left)",
        )
        .map_err(|e| e.to_string())?
        .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let started = Instant::now();
    let provision = Provision::new(config).chunk_rows(args.chunk_rows);
    let result = provision
        .run_with_progress(&db, |progress| {
            if bar.length() != Some(progress.rows_total) {
                bar.set_length(progress.rows_total);
                // Rows found already there are not part of this run's rate.
                bar.set_position(progress.rows_done);
                bar.reset_eta();
            }
            bar.set_message(progress.level.name());
            bar.set_position(progress.rows_done);
        })
        .await;
    bar.finish_and_clear();
    let report = result.map_err(|e| error_chain(&e))?;
    let elapsed = started.elapsed();

    if report.total_rows == 0 {
        println!(
            "SQLite: no bucket rows needed; metadata table `{}_meta` ready",
            args.table
        );
        return Ok(());
    }
    let rate = report.inserted as f64 / elapsed.as_secs_f64().max(1e-9);
    println!(
        "`{}` is complete: {} rows ({} buckets per level, 3 levels)",
        args.table,
        HumanCount(report.total_rows),
        HumanCount(u64::from(args.bucket_space)),
    );
    println!(
        "inserted {} rows in {:.1?} ({} rows/s); {} were already there",
        HumanCount(report.inserted),
        elapsed,
        HumanCount(rate.round() as u64),
        HumanCount(report.resumed_from),
    );
    Ok(())
}
