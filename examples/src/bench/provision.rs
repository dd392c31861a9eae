//! Provisioning the bucket table: hierlock-migration's [`Provision`] against
//! the seed's hand-written `INSERT … SELECT` over a cross join of digits
//! (one statement per level), both into a fresh table of the same schema.
//!
//! Also reports the table's size per 10^6 rows, for sizing the server's
//! cache (`innodb_buffer_pool_size`, `shared_buffers`).

use std::time::Instant;

use hierlock::{Config, Dialect, PostgresLocks, schema};
use hierlock_migration::Provision;
use sea_orm::{ConnectionTrait, Statement};

use super::stats::{Table, fmt, order};
use super::{Bench, BoxError};

/// The table hierlock-migration fills.
const BY_HIERLOCK: &str = "hlbench_prov_hierlock";
/// The table the seed's SQL fills.
const BY_HAND: &str = "hlbench_prov_seed";

#[derive(Clone, Copy, Debug)]
enum Variant {
    Seed,
    Hierlock,
}

const VARIANTS: [Variant; 2] = [Variant::Seed, Variant::Hierlock];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Seed => "seed: INSERT … SELECT cross join",
            Variant::Hierlock => "hierlock-migration Provision",
        }
    }

    fn table(self) -> &'static str {
        match self {
            Variant::Seed => BY_HAND,
            Variant::Hierlock => BY_HIERLOCK,
        }
    }
}

/// Measure and print both ways of filling `space` buckets per level
/// (a power of ten).
///
/// # Errors
/// A statement failed, or `space` is not a power of ten.
pub async fn run(bench: &Bench, space: u32) -> Result<(), BoxError> {
    println!(
        "\n## Provisioning {} buckets per level ({} rows; rows/s, higher is better)",
        space,
        3 * u64::from(space)
    );
    let table_on_pg = bench.postgres_locks == PostgresLocks::BucketTable;
    if bench.dialect == Dialect::Sqlite || (bench.dialect == Dialect::Postgres && !table_on_pg) {
        println!(
            "  skipped: no bucket table here (PostgreSQL: pass --postgres-locks bucket-table)"
        );
        return Ok(());
    }
    let digits = space.checked_ilog10().filter(|&d| 10u32.pow(d) == space);
    let Some(digits) = digits else {
        return Err(
            format!("{space} buckets per level: the seed's SQL needs a power of ten").into(),
        );
    };
    println!("{} reps:", bench.reps);
    let mut table = Table::new(VARIANTS.map(Variant::name));
    let mut sizes = [f64::NAN; 2];
    for rep in 0..bench.reps {
        for i in order(VARIANTS.len(), rep) {
            let variant = VARIANTS[i];
            let config = Config::default()
                .with_table(variant.table())?
                .with_bucket_space(space)?
                .with_postgres_locks(PostgresLocks::BucketTable);
            drop_tables(bench, &config).await?;
            let start = Instant::now();
            match variant {
                Variant::Seed => by_hand(bench, &config, digits).await?,
                Variant::Hierlock => {
                    Provision::new(config.clone()).run(&bench.db).await?;
                }
            }
            let seconds = start.elapsed().as_secs_f64();
            table.record(i, rep, 3.0 * f64::from(space) / seconds);
            sizes[i] = table_bytes(bench, variant.table()).await? / (3.0 * f64::from(space) / 1e6);
            drop_tables(bench, &config).await?;
        }
    }
    table.print("rows/s");
    for (variant, bytes) in VARIANTS.iter().zip(sizes) {
        println!(
            "  {:<34} {} MiB per 10^6 rows on disk (data + index)",
            variant.name(),
            fmt(bytes / (1 << 20) as f64)
        );
    }
    Ok(())
}

/// The seed's SQL (`seeds/000`, §10.2): `digits` cross-joined copies of
/// 0..9 make the numbers `0..space`, one `INSERT … SELECT` per level, into
/// a table created with hierlock's own schema.
async fn by_hand(bench: &Bench, config: &Config, digits: u32) -> Result<(), BoxError> {
    bench
        .exec(&schema::create_bucket_table(bench.dialect, config))
        .await?;
    let number = (0..digits)
        .map(|d| format!("d{d}.d * {}", 10u64.pow(d)))
        .collect::<Vec<_>>()
        .join(" + ");
    let joins = (1..digits)
        .map(|d| format!(" CROSS JOIN digits d{d}"))
        .collect::<String>();
    for level in 0..3 {
        bench
            .exec(&format!(
                "INSERT INTO {table} (level, bucket) \
                 WITH digits AS (SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL \
                 SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL \
                 SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9), \
                 nums AS (SELECT {number} AS n FROM digits d0{joins}) \
                 SELECT {level}, n FROM nums",
                table = config.table()
            ))
            .await?;
    }
    Ok(())
}

async fn drop_tables(bench: &Bench, config: &Config) -> Result<(), BoxError> {
    for name in [config.table().to_string(), config.table().meta()] {
        bench.exec(&format!("DROP TABLE IF EXISTS {name}")).await?;
    }
    Ok(())
}

/// The table's data and index size on disk, in bytes, as the server reports it.
async fn table_bytes(bench: &Bench, table: &str) -> Result<f64, BoxError> {
    let sql = if bench.dialect.is_mysql_family() {
        // The statistics behind information_schema.TABLES are refreshed by ANALYZE.
        bench.exec(&format!("ANALYZE TABLE {table}")).await?;
        format!(
            "SELECT CAST(data_length + index_length AS SIGNED) AS bytes FROM information_schema.TABLES \
             WHERE table_schema = DATABASE() AND table_name = '{table}'"
        )
    } else {
        format!("SELECT pg_total_relation_size('{table}')::bigint AS bytes")
    };
    let row = bench
        .db
        .query_one_raw(Statement::from_string(bench.dialect.backend(), sql))
        .await?
        .ok_or("the table's size is not reported")?;
    Ok(row.try_get::<i64>("", "bytes")? as f64)
}
