//! The bucket table, its metadata row, and the check that they match the
//! configuration.
//!
//! ```text
//! hier_lock_buckets(level TINYINT, bucket INT, PRIMARY KEY (level, bucket))
//!     -- levels 0-2: users, accounts, resources; with subtree reads also
//!     -- 3-4: the users' and accounts' stripes (Config::table_levels)
//! hier_lock_buckets_meta(id, key_scheme, bucket_space, complete)   -- one row, id = 1
//! ```
//!
//! The metadata row is written by provisioning (the `hierlock-migration`
//! crate) and checked by [`Locker::connect`](crate::Locker::connect): a table
//! filled for another scheme or bucket space is refused, because two services
//! that hash differently would silently not exclude each other.

use sea_orm::{ConnectionTrait, DbBackend, Statement};

use crate::backend::classify::is_missing_table;
use crate::config::Config;
use crate::backend::dialect::Dialect;
use crate::error::{Error, Result, TxnState};
use crate::model::key::KeyScheme;
use crate::model::level::Level;
use crate::model::plan::{KeyKind, LockKey};
use crate::model::stripe::SubtreeReads;

/// What the bucket table's `level` column value `level` holds: `user`,
/// `account`, `resource`, `user stripes`, `account stripes` (see
/// [`Config::table_levels`]).
pub fn level_name(level: u8) -> &'static str {
    let Some(key) = LockKey::of_row(i64::from(level), 0) else {
        return "unknown";
    };
    match (key.kind, key.level) {
        (KeyKind::Node, level) => level.name(),
        (KeyKind::Stripe, Level::User) => "user stripes",
        (KeyKind::Stripe, _) => "account stripes",
    }
}

/// The `id` of the one metadata row.
pub const META_ROW_ID: i32 = 1;

/// `CREATE TABLE IF NOT EXISTS` for the bucket table: the seed's schema.
pub fn create_bucket_table(dialect: Dialect, config: &Config) -> String {
    let table = dialect.quote(config.table().as_str());
    let level = if dialect.is_mysql_family() {
        "TINYINT"
    } else {
        "SMALLINT"
    };
    let engine = if dialect.is_mysql_family() {
        " ENGINE=InnoDB"
    } else {
        ""
    };
    format!(
        "CREATE TABLE IF NOT EXISTS {table} (level {level} NOT NULL, bucket INT NOT NULL, \
         PRIMARY KEY (level, bucket)){engine}"
    )
}

/// `CREATE TABLE IF NOT EXISTS` for the metadata table.
pub fn create_meta_table(dialect: Dialect, config: &Config) -> String {
    let meta = dialect.quote(&config.table().meta());
    let engine = if dialect.is_mysql_family() {
        " ENGINE=InnoDB"
    } else {
        ""
    };
    format!(
        "CREATE TABLE IF NOT EXISTS {meta} (id INT NOT NULL PRIMARY KEY, \
         key_scheme VARCHAR(64) NOT NULL, bucket_space BIGINT NOT NULL, complete INT NOT NULL){engine}"
    )
}

/// What the metadata row records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// The layout's name ([`Config::layout_name`]): the key scheme's name
    /// ([`KeyScheme::name`]), and `+stripes-K` with subtree reads.
    pub key_scheme: String,
    /// Buckets per level.
    pub bucket_space: i64,
    /// Whether every bucket row of every level is there.
    pub complete: bool,
}

impl Metadata {
    /// The key scheme and subtree-read layout recorded, if this version
    /// knows them.
    pub fn layout(&self) -> Option<(KeyScheme, SubtreeReads)> {
        let (scheme, subtree_reads) = SubtreeReads::parse_layout(&self.key_scheme)?;
        Some((KeyScheme::from_name(scheme)?, subtree_reads))
    }

    /// Refuse a row that records another layout or bucket space than
    /// `config`'s: two services hashing differently would silently not
    /// exclude each other.
    ///
    /// # Errors
    /// [`Error::ConfigMismatch`] naming both.
    pub fn check_describes(&self, config: &Config) -> Result<()> {
        let space = i64::from(config.bucket_space());
        if self.layout() == Some((config.key_scheme(), config.subtree_reads()))
            && self.bucket_space == space
        {
            return Ok(());
        }
        Err(Error::ConfigMismatch {
            table: config.table().to_string(),
            found: describe(&self.key_scheme, self.bucket_space),
            expected: describe(&config.layout_name(), space),
        })
    }
}

/// Read the metadata row, `None` if the table or the row is missing.
///
/// # Errors
/// [`Error::Database`] for any failure other than a missing table.
pub async fn read_metadata(
    db: &impl ConnectionTrait,
    dialect: Dialect,
    config: &Config,
) -> Result<Option<Metadata>> {
    let sql = format!(
        "SELECT key_scheme, CAST(bucket_space AS {int}) AS bucket_space, CAST(complete AS {int}) AS complete \
         FROM {meta} WHERE id = {META_ROW_ID}",
        int = if dialect.is_mysql_family() {
            "SIGNED"
        } else {
            "BIGINT"
        },
        meta = dialect.quote(&config.table().meta()),
    );
    let row = match db
        .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
    {
        Ok(row) => row,
        Err(e) if is_missing_table(&e) => return Ok(None),
        Err(e) => return Err(Error::database("reading the bucket table's metadata", e)),
    };
    let Some(row) = row else { return Ok(None) };
    let read = |e| Error::database("reading the bucket table's metadata", e);
    Ok(Some(Metadata {
        key_scheme: row.try_get("", "key_scheme").map_err(read)?,
        bucket_space: row.try_get("", "bucket_space").map_err(read)?,
        complete: row.try_get::<i64>("", "complete").map_err(read)? != 0,
    }))
}

/// Refuse a bucket table that is missing, incomplete, or provisioned for
/// another key scheme or bucket space.
pub(crate) async fn verify(
    db: &impl ConnectionTrait,
    dialect: Dialect,
    config: &Config,
) -> Result<()> {
    let table = config.table().as_str();
    let Some(meta) = read_metadata(db, dialect, config).await? else {
        return Err(Error::NotProvisioned {
            what: format!(
                "bucket table `{table}` (no metadata row in `{}`)",
                config.table().meta()
            ),
            row: None,
            txn_state: TxnState::Unchanged,
        });
    };
    meta.check_describes(config)?;
    if !meta.complete {
        return Err(Error::NotProvisioned {
            what: format!(
                "bucket table `{table}` (provisioning did not finish; run it again to resume)"
            ),
            row: None,
            txn_state: TxnState::Unchanged,
        });
    }
    Ok(())
}

fn describe(scheme: &str, space: i64) -> String {
    format!("key scheme {scheme} and {space} buckets per level")
}

/// SQLite needs no buckets, only the metadata row that its write-lock
/// statement updates: create it when missing (idempotent).
///
/// [`Locker::connect`](crate::Locker::connect) calls this on SQLite;
/// provisioning (the `hierlock-migration` crate) calls it too.
///
/// # Errors
/// [`Error::Database`] if the table or the row cannot be created.
pub async fn ensure_sqlite(db: &impl ConnectionTrait, config: &Config) -> Result<()> {
    let dialect = Dialect::Sqlite;
    let create = Statement::from_string(DbBackend::Sqlite, create_meta_table(dialect, config));
    let insert = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        format!(
            "INSERT OR IGNORE INTO {} (id, key_scheme, bucket_space, complete) VALUES (?, ?, ?, 1)",
            dialect.quote(&config.table().meta())
        ),
        [
            META_ROW_ID.into(),
            config.layout_name().into(),
            i64::from(config.bucket_space()).into(),
        ],
    );
    for stmt in [create, insert] {
        db.execute_raw(stmt)
            .await
            .map_err(|e| Error::database("creating hierlock's SQLite metadata table", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_levels_are_named_as_their_keys() {
        let names: Vec<_> = (0..6).map(level_name).collect();
        assert_eq!(
            names,
            ["user", "account", "resource", "user stripes", "account stripes", "unknown"]
        );
    }
}
