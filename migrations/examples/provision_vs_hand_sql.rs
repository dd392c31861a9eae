//! hierlock's provisioning against the seed's hand-written SQL, side by side.
//!
//! ```text
//! cargo run -p hierlock-migration --release --example provision_vs_hand_sql -- \
//!     mysql://root@127.0.0.1:3306/test [bucket space, default 10000000] [reps, default 3] [chunk rows]
//! ```
//!
//! Each repetition fills two fresh tables in the scratch database
//! `hl_prov_scratch` on the same server (named after the process, so that
//! runs at the same time do not collide): one with the seed's cross join of
//! seven digit tables (one `INSERT … SELECT` per level, see
//! [`hand_written_fill`]), one with [`Provision`]. Which goes first
//! alternates, and both tables are dropped after each repetition. It prints
//! each time, then the median and range of each and the ratio of medians.

use std::time::{Duration, Instant};

use hierlock::schema;
use hierlock::{Config, Dialect};
use hierlock_migration::{DEFAULT_CHUNK_ROWS, Provision};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, DbErr};

const SCRATCH: &str = "hl_prov_scratch";

type BoxError = Box<dyn std::error::Error>;

/// The seed's provisioning SQL (its design document, section 10.2): the
/// numbers `0..10^k` from a cross join of `k` tables of the digits 0–9,
/// inserted with one `INSERT … SELECT` per level, into a fresh table created
/// as hierlock creates it. The seed wrote `WITH … INSERT`, which neither
/// MySQL nor MariaDB accepts; this is the same query as `INSERT … WITH`.
/// A bucket space that is not a power of ten takes the next one, cut with
/// `WHERE n < space`. MySQL and MariaDB only.
pub async fn hand_written_fill(
    db: &DatabaseConnection,
    table: &str,
    bucket_space: u32,
) -> Result<(), DbErr> {
    let config = Config::default()
        .with_table(table)
        .and_then(|config| config.with_bucket_space(bucket_space))
        .map_err(|e| DbErr::Custom(e.to_string()))?;
    db.execute_unprepared(&schema::create_bucket_table(Dialect::MySql, &config))
        .await?;
    let mut place = 1_u64;
    let (mut terms, mut joins) = (Vec::new(), Vec::new());
    for i in 0.. {
        terms.push(format!("d{i}.d * {place}"));
        joins.push(format!("digits d{i}"));
        place *= 10;
        if place >= u64::from(bucket_space) {
            break;
        }
    }
    let cut = if place == u64::from(bucket_space) {
        String::new()
    } else {
        format!(" WHERE n < {bucket_space}")
    };
    for level in 0..3 {
        db.execute_unprepared(&format!(
            "INSERT INTO `{table}` (level, bucket) \
             WITH digits AS (SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 \
             UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 \
             UNION ALL SELECT 8 UNION ALL SELECT 9), \
             nums AS (SELECT ({}) AS n FROM {}) \
             SELECT {level}, n FROM nums{cut}",
            terms.join(" + "),
            joins.join(" CROSS JOIN "),
        ))
        .await?;
    }
    Ok(())
}

/// hierlock's provisioning of a fresh table.
async fn hierlock_fill(
    db: &DatabaseConnection,
    table: &str,
    bucket_space: u32,
    chunk_rows: u32,
) -> Result<(), BoxError> {
    let config = Config::default()
        .with_table(table)?
        .with_bucket_space(bucket_space)?;
    let report = Provision::new(config)
        .chunk_rows(chunk_rows)
        .run(db)
        .await?;
    assert_eq!(report.inserted, 3 * u64::from(bucket_space), "{report:?}");
    Ok(())
}

async fn drop_tables(db: &DatabaseConnection, tables: &[&str]) -> Result<(), DbErr> {
    for table in tables {
        db.execute_unprepared(&format!("DROP TABLE IF EXISTS `{table}`, `{table}_meta`"))
            .await?;
    }
    Ok(())
}

/// Median and range of `times`, in seconds.
fn summary(times: &[Duration]) -> (f64, f64, f64) {
    let mut secs: Vec<f64> = times.iter().map(Duration::as_secs_f64).collect();
    secs.sort_by(f64::total_cmp);
    let n = secs.len();
    let median = if n % 2 == 1 {
        secs[n / 2]
    } else {
        (secs[n / 2 - 1] + secs[n / 2]) / 2.0
    };
    (median, secs[0], secs[n - 1])
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: provision_vs_hand_sql URL [bucket space] [reps] [chunk rows]")?;
    let space: u32 = args.next().map_or(Ok(10_000_000), |a| a.parse())?;
    let reps: usize = args.next().map_or(Ok(3), |a| a.parse())?;
    let chunk_rows: u32 = args.next().map_or(Ok(DEFAULT_CHUNK_ROWS), |a| a.parse())?;

    let server = Database::connect(&url).await?;
    server
        .execute_unprepared(&format!("CREATE DATABASE IF NOT EXISTS {SCRATCH}"))
        .await?;
    let base = url.rsplit_once('/').map_or(url.as_str(), |(base, _)| base);
    let db = Database::connect(format!("{base}/{SCRATCH}")).await?;
    let version: String = db
        .query_one_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            "SELECT VERSION() AS v",
        ))
        .await?
        .ok_or("no version")?
        .try_get("", "v")?;
    println!(
        "{version}: 3 × {space} rows, {reps} repetitions, hierlock with {chunk_rows} rows per statement"
    );

    let (mut hand, mut ours) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        // Named after this process: runs at the same time never share a table.
        let run = std::process::id();
        let (hand_table, our_table) = (
            format!("bench_hand_{run}_{rep}"),
            format!("bench_hierlock_{run}_{rep}"),
        );
        drop_tables(&db, &[&hand_table, &our_table]).await?;
        for hand_first in [rep % 2 == 0, rep % 2 == 1] {
            let started = Instant::now();
            if hand_first {
                hand_written_fill(&db, &hand_table, space).await?;
                hand.push(started.elapsed());
                println!("rep {rep}: hand-written SQL {:.1?}", started.elapsed());
            } else {
                hierlock_fill(&db, &our_table, space, chunk_rows).await?;
                ours.push(started.elapsed());
                println!("rep {rep}: hierlock        {:.1?}", started.elapsed());
            }
        }
        drop_tables(&db, &[&hand_table, &our_table]).await?;
    }

    let (hand_median, hand_min, hand_max) = summary(&hand);
    let (our_median, our_min, our_max) = summary(&ours);
    println!("hand-written SQL: median {hand_median:.1} s (range {hand_min:.1}–{hand_max:.1} s)");
    println!("hierlock:         median {our_median:.1} s (range {our_min:.1}–{our_max:.1} s)");
    println!(
        "hierlock is {:.2}× as fast as the hand-written SQL (ratio of medians)",
        hand_median / our_median
    );
    Ok(())
}
