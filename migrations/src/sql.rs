//! The statements provisioning sends, built as plain strings.
//!
//! Every number interpolated here is an integer computed by this crate and
//! every name a validated [`TableName`], so nothing needs escaping; the
//! metadata row's values are bound as parameters all the same.

use std::fmt::Write as _;

use hierlock::schema::META_ROW_ID;
use hierlock::{Config, Dialect, TableName};
use sea_orm::{Statement, Value};

/// `name`, quoted as an identifier (names are validated, never escaped).
pub(crate) fn quote(dialect: Dialect, name: &str) -> String {
    if dialect.is_mysql_family() {
        format!("`{name}`")
    } else {
        format!("\"{name}\"")
    }
}

/// Insert the metadata row unless one is there (complete = 0: not filled yet).
pub(crate) fn insert_metadata(dialect: Dialect, config: &Config) -> Statement {
    let meta = quote(dialect, &config.table().meta());
    let sql = if dialect.is_mysql_family() {
        format!(
            "INSERT IGNORE INTO {meta} (id, key_scheme, bucket_space, complete) VALUES (?, ?, ?, 0)"
        )
    } else {
        format!(
            "INSERT INTO {meta} (id, key_scheme, bucket_space, complete) VALUES ($1, $2, $3, 0) \
             ON CONFLICT (id) DO NOTHING"
        )
    };
    let values: [Value; 3] = [
        META_ROW_ID.into(),
        config.layout_name().into(),
        i64::from(config.bucket_space()).into(),
    ];
    Statement::from_sql_and_values(dialect.backend(), sql, values)
}

/// Mark the metadata row complete: every bucket row of every level is there.
pub(crate) fn mark_complete(dialect: Dialect, table: &TableName) -> Statement {
    let sql = format!(
        "UPDATE {} SET complete = 1 WHERE id = {META_ROW_ID}",
        quote(dialect, &table.meta())
    );
    Statement::from_string(dialect.backend(), sql)
}

/// The highest of `level`'s buckets `0..space` that is there (`highest`,
/// NULL if none).
pub(crate) fn highest_bucket(
    dialect: Dialect,
    table: &TableName,
    level: u8,
    space: u32,
) -> Statement {
    survey(dialect, table, level, space, "MAX(bucket)", "highest")
}

/// How many of `level`'s buckets `0..space` are there (`present`).
pub(crate) fn count_buckets(
    dialect: Dialect,
    table: &TableName,
    level: u8,
    space: u32,
) -> Statement {
    survey(dialect, table, level, space, "COUNT(*)", "present")
}

fn survey(
    dialect: Dialect,
    table: &TableName,
    level: u8,
    space: u32,
    aggregate: &str,
    alias: &str,
) -> Statement {
    let int = if dialect.is_mysql_family() {
        "SIGNED"
    } else {
        "BIGINT"
    };
    let sql = format!(
        "SELECT CAST({aggregate} AS {int}) AS {alias} FROM {table} \
         WHERE level = {level} AND bucket >= 0 AND bucket < {space}",
        table = quote(dialect, table.as_str()),
    );
    Statement::from_string(dialect.backend(), sql)
}

/// How the server generates a chunk's bucket numbers, in ascending order, so
/// that rows reach the primary key in its order: appended at the right edge
/// of the B-tree, pages filled, never split in the middle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Generator {
    /// PostgreSQL's `generate_series`.
    GenerateSeries,
    /// MariaDB's sequence engine (`seq_0_to_99`), a virtual table per range.
    SequenceEngine,
    /// A cross join of digit tables, sorted: MySQL (its recursive CTEs stop
    /// at 1000 rows unless `cte_max_recursion_depth` is raised), and MariaDB
    /// built without the sequence engine.
    DigitCrossJoin,
}

/// Whether MariaDB's sequence engine is there (`n` = 1) or not (0).
pub(crate) fn sequence_engine_available() -> &'static str {
    "SELECT CAST(COUNT(*) AS SIGNED) AS n FROM information_schema.ENGINES \
     WHERE ENGINE = 'SEQUENCE' AND SUPPORT IN ('YES', 'DEFAULT')"
}

/// Insert `level`'s buckets `start..end` that are missing, in one statement,
/// generating the rows on the server in ascending order.
///
/// The digit cross join yields at most twice the rows asked for (exactly as
/// many for a power of ten); `ORDER BY` puts them in order, as a join
/// returns its rows in whatever order its algorithm gives (MySQL's hash
/// join: 0, 10000, 20000, …).
pub(crate) fn fill_chunk(
    generator: Generator,
    table: &TableName,
    level: u8,
    start: u32,
    end: u32,
) -> Statement {
    let last = end.saturating_sub(1).max(start);
    let (dialect, sql) = match generator {
        Generator::GenerateSeries => (
            Dialect::Postgres,
            format!(
                "INSERT INTO {table} (level, bucket) SELECT {level}, n \
                 FROM generate_series({start}, {last}) AS n ON CONFLICT (level, bucket) DO NOTHING",
                table = quote(Dialect::Postgres, table.as_str()),
            ),
        ),
        Generator::SequenceEngine => (
            Dialect::MariaDb,
            format!(
                "INSERT IGNORE INTO {table} (level, bucket) SELECT {level}, seq FROM seq_{start}_to_{last}",
                table = quote(Dialect::MariaDb, table.as_str()),
            ),
        ),
        Generator::DigitCrossJoin => {
            let count = u64::from(last - start) + 1;
            (
                Dialect::MySql,
                format!(
                    "INSERT IGNORE INTO {table} (level, bucket) SELECT {level}, {start} + n \
                     FROM ({}) AS seq WHERE n < {count} ORDER BY n",
                    numbers_below(count),
                    table = quote(Dialect::MySql, table.as_str()),
                ),
            )
        }
    };
    Statement::from_string(dialect.backend(), sql)
}

/// A MySQL derived table `SELECT … AS n` yielding at least `0..count` (and
/// fewer than `2 * count` rows in all). `count` must be at least 1.
fn numbers_below(count: u64) -> String {
    let mut terms = Vec::new();
    let mut tables = Vec::new();
    let mut place = 1_u64;
    for (i, size) in digit_tables(count).into_iter().enumerate() {
        terms.push(format!("d{i}.d * {place}"));
        tables.push(format!("({}) AS d{i}", digits(size)));
        place *= 10;
    }
    format!(
        "SELECT {} AS n FROM {}",
        terms.join(" + "),
        tables.join(" CROSS JOIN ")
    )
}

/// The sizes of the digit tables whose cross join counts to `count`, lowest
/// digit first: 10 for every digit but the top one, which only goes as far
/// as `count` needs.
fn digit_tables(count: u64) -> Vec<u64> {
    let mut sizes = Vec::new();
    // The place value of the top digit: the largest power of ten <= count.
    let mut place = 1_u64;
    while place * 10 <= count {
        place *= 10;
        sizes.push(10);
    }
    sizes.push(count.div_ceil(place).max(1));
    sizes
}

/// `SELECT 0 AS d UNION ALL SELECT 1 … UNION ALL SELECT how_many - 1`.
fn digits(how_many: u64) -> String {
    let mut sql = String::from("SELECT 0 AS d");
    for d in 1..how_many {
        write!(sql, " UNION ALL SELECT {d}").ok();
    }
    sql
}

/// Drop the bucket table and its metadata table, if they exist.
pub(crate) fn drop_tables(dialect: Dialect, table: &TableName) -> [Statement; 2] {
    [table.as_str().to_owned(), table.meta()].map(|name| {
        Statement::from_string(
            dialect.backend(),
            format!("DROP TABLE IF EXISTS {}", quote(dialect, &name)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_counts_with_generate_series() {
        let stmt = fill_chunk(
            Generator::GenerateSeries,
            &TableName::default(),
            2,
            100,
            150,
        );
        assert_eq!(
            stmt.sql,
            "INSERT INTO \"hier_lock_buckets\" (level, bucket) SELECT 2, n \
             FROM generate_series(100, 149) AS n ON CONFLICT (level, bucket) DO NOTHING"
        );
    }

    #[test]
    fn mariadb_counts_with_the_sequence_engine() {
        let stmt = fill_chunk(
            Generator::SequenceEngine,
            &TableName::default(),
            1,
            100,
            150,
        );
        assert_eq!(
            stmt.sql,
            "INSERT IGNORE INTO `hier_lock_buckets` (level, bucket) SELECT 1, seq FROM seq_100_to_149"
        );
    }

    #[test]
    fn mysql_counts_with_a_sorted_cross_join_of_digits() {
        let stmt = fill_chunk(Generator::DigitCrossJoin, &TableName::default(), 0, 7, 10);
        assert_eq!(
            stmt.sql,
            "INSERT IGNORE INTO `hier_lock_buckets` (level, bucket) SELECT 0, 7 + n \
             FROM (SELECT d0.d * 1 AS n FROM (SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2) AS d0) \
             AS seq WHERE n < 3 ORDER BY n"
        );
    }

    /// Every number the cross join of `digit_tables(count)` yields, sorted.
    fn generated(count: u64) -> Vec<u64> {
        let mut out = vec![0_u64];
        let mut place = 1;
        for size in digit_tables(count) {
            out = out
                .iter()
                .flat_map(|n| (0..size).map(move |d| n + d * place))
                .collect();
            place *= 10;
        }
        out.sort_unstable();
        out
    }

    #[test]
    fn the_digit_tables_cover_the_range_without_much_waste() {
        for count in [1, 2, 9, 10, 11, 99, 100, 999, 1000, 1001, 12_345, 50_000] {
            let numbers = generated(count);
            assert!(numbers.len() < 2 * count as usize + 1, "{count}");
            let wanted: Vec<u64> = numbers.into_iter().filter(|n| *n < count).collect();
            assert_eq!(wanted, (0..count).collect::<Vec<_>>(), "{count}");
        }
        assert_eq!(generated(50_000).len(), 50_000);
    }

    #[test]
    fn metadata_values_are_parameters() {
        let stmt = insert_metadata(Dialect::Postgres, &Config::default());
        assert!(
            stmt.sql.ends_with("ON CONFLICT (id) DO NOTHING"),
            "{}",
            stmt.sql
        );
        assert_eq!(stmt.values.map(|v| v.0.len()), Some(3));
    }
}
