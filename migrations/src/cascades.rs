//! [`cascades_into`]: the foreign keys through which the database itself
//! changes rows of protected tables, with no lock.
//!
//! A relation declared `on_delete = "Cascade"` (or `"SetNull"`, or an
//! `on_update` action) becomes a `FOREIGN KEY .. ON DELETE CASCADE` when
//! SeaORM creates or syncs the schema from the entities. Deleting the parent
//! row then deletes (or changes) the child rows inside the server: if the
//! child is a `#[hierlock::protected]` table, those rows change under
//! whatever lock the parent's delete held, which need not cover them.
//! hierlock cannot see such a write, so it reports the foreign keys.

use std::fmt;

use hierlock::sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement, Value};
use serde::Serialize;

/// What a foreign key does to the child rows when their parent row is
/// deleted (`ON DELETE`) or its key changes (`ON UPDATE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferentialAction {
    /// `CASCADE`: the child rows are deleted (or their key updated).
    Cascade,
    /// `SET NULL`: the child rows' foreign key columns become `NULL`.
    SetNull,
    /// `SET DEFAULT`: the child rows' foreign key columns take their default.
    SetDefault,
    /// `RESTRICT`: the parent's write fails while child rows exist.
    Restrict,
    /// `NO ACTION` (the default): as `RESTRICT`, checked at the statement's
    /// end (or at commit, for a deferred constraint).
    NoAction,
}

impl ReferentialAction {
    /// Whether the server writes the child rows itself (`CASCADE`,
    /// `SET NULL`, `SET DEFAULT`), rather than refusing the parent's write.
    pub fn writes_child_rows(self) -> bool {
        matches!(self, Self::Cascade | Self::SetNull | Self::SetDefault)
    }

    /// The rule as MySQL, MariaDB and SQLite spell it (`SET NULL`), or
    /// PostgreSQL's one-letter code in `pg_constraint` (`n`).
    fn parse(rule: &str) -> Option<Self> {
        Some(match rule.trim().to_ascii_uppercase().as_str() {
            "CASCADE" | "C" => Self::Cascade,
            "SET NULL" | "N" => Self::SetNull,
            "SET DEFAULT" | "D" => Self::SetDefault,
            "RESTRICT" | "R" => Self::Restrict,
            "NO ACTION" | "A" => Self::NoAction,
            _ => return None,
        })
    }
}

impl fmt::Display for ReferentialAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Cascade => "CASCADE",
            Self::SetNull => "SET NULL",
            Self::SetDefault => "SET DEFAULT",
            Self::Restrict => "RESTRICT",
            Self::NoAction => "NO ACTION",
        })
    }
}

/// A foreign key of a protected table through which the server changes its
/// rows when a parent row is deleted or its key updated: an `ON DELETE` or
/// `ON UPDATE` of `CASCADE`, `SET NULL` or `SET DEFAULT`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CascadingForeignKey {
    /// The protected table holding the foreign key: the rows that change.
    pub table: String,
    /// The constraint's name (SQLite's foreign keys have none).
    pub name: Option<String>,
    /// The table it references: a delete there changes rows of `table`.
    pub parent: String,
    /// What deleting a parent row does to the child rows.
    pub on_delete: ReferentialAction,
    /// What changing a parent row's key does to the child rows.
    pub on_update: ReferentialAction,
}

impl fmt::Display for CascadingForeignKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", self.table)?;
        if let Some(name) = &self.name {
            write!(f, " (foreign key `{name}`)")?;
        }
        write!(f, " references `{}`", self.parent)?;
        let actions: Vec<String> = [("DELETE", self.on_delete), ("UPDATE", self.on_update)]
            .into_iter()
            .filter(|(_, action)| action.writes_child_rows())
            .map(|(event, action)| format!("ON {event} {action}"))
            .collect();
        write!(f, " {}", actions.join(" "))
    }
}

/// The foreign keys of `tables` (the application's protected tables, as
/// named in `#[sea_orm(table_name = ..)]`) through which the server changes
/// their rows when a row of the referenced table is deleted or its key
/// updated (`ON DELETE` / `ON UPDATE` `CASCADE`, `SET NULL`, `SET DEFAULT`),
/// sorted by table and name. Such a write takes no hierlock lock: an empty
/// list means the server writes none of these tables on its own.
///
/// Tables are looked up in the connection's database (MySQL, MariaDB), its
/// `search_path` (PostgreSQL) or its main schema (SQLite). Read from
/// `information_schema.REFERENTIAL_CONSTRAINTS`, `pg_constraint` and
/// `pragma_foreign_key_list`. `RESTRICT` and `NO ACTION` are not reported:
/// they refuse the parent's write rather than change a protected row.
///
/// # Errors
/// [`hierlock::Error::Misuse`] naming a table that is not in the database
/// (a misspelt protected table would otherwise pass unchecked);
/// [`hierlock::Error::Database`] if the server cannot be asked.
pub async fn cascades_into<S: AsRef<str>>(
    db: &DatabaseConnection,
    tables: &[S],
) -> hierlock::Result<Vec<CascadingForeignKey>> {
    let tables: Vec<&str> = tables.iter().map(AsRef::as_ref).collect();
    if tables.is_empty() {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    let doing = "reading the foreign keys of the protected tables";
    let query = |sql: String| {
        let values = tables.iter().map(|t| Value::from(*t)).collect::<Vec<_>>();
        Statement::from_sql_and_values(backend, sql, values)
    };
    let list = placeholders(backend, tables.len());

    let existing = db
        .query_all_raw(query(match backend {
            DbBackend::MySql => format!(
                "SELECT CAST(TABLE_NAME AS CHAR) AS name FROM information_schema.TABLES \
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ({list})"
            ),
            DbBackend::Postgres => format!(
                "SELECT relname::text AS name FROM pg_class \
                 WHERE relkind IN ('r', 'p') AND pg_table_is_visible(oid) AND relname IN ({list})"
            ),
            _ => {
                format!("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ({list})")
            }
        }))
        .await
        .map_err(|e| hierlock::Error::database(doing, e))?
        .into_iter()
        .map(|row| row.try_get::<String>("", "name"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| hierlock::Error::database(doing, e))?;
    let missing: Vec<&str> = tables
        .iter()
        .copied()
        .filter(|t| !existing.iter().any(|e| e == t))
        .collect();
    if !missing.is_empty() {
        return Err(hierlock::Error::Misuse(format!(
            "no table {} in this database: name each protected table as its entity's \
             `table_name` says",
            missing
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }

    let rows = db
        .query_all_raw(query(match backend {
            DbBackend::MySql => format!(
                "SELECT CAST(TABLE_NAME AS CHAR) AS child, CAST(CONSTRAINT_NAME AS CHAR) AS name, \
                 CAST(REFERENCED_TABLE_NAME AS CHAR) AS parent, \
                 CAST(DELETE_RULE AS CHAR) AS on_delete, CAST(UPDATE_RULE AS CHAR) AS on_update \
                 FROM information_schema.REFERENTIAL_CONSTRAINTS \
                 WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME IN ({list})"
            ),
            DbBackend::Postgres => format!(
                "SELECT child.relname::text AS child, c.conname::text AS name, \
                 parent.relname::text AS parent, \
                 c.confdeltype::text AS on_delete, c.confupdtype::text AS on_update \
                 FROM pg_constraint c \
                 JOIN pg_class child ON child.oid = c.conrelid \
                 JOIN pg_class parent ON parent.oid = c.confrelid \
                 WHERE c.contype = 'f' AND pg_table_is_visible(c.conrelid) \
                 AND child.relname IN ({list})"
            ),
            // One row per column of each key: one per key (`id`).
            _ => format!(
                "SELECT DISTINCT m.name AS child, NULL AS name, f.\"table\" AS parent, \
                 f.on_delete AS on_delete, f.on_update AS on_update, f.id AS id \
                 FROM sqlite_master m, pragma_foreign_key_list(m.name) f \
                 WHERE m.type = 'table' AND m.name IN ({list})"
            ),
        }))
        .await
        .map_err(|e| hierlock::Error::database(doing, e))?;

    let mut keys = Vec::new();
    for row in rows {
        let text = |column| {
            row.try_get::<String>("", column)
                .map_err(|e| hierlock::Error::database(doing, e))
        };
        let action = |column| {
            let rule = text(column)?;
            ReferentialAction::parse(&rule).ok_or_else(|| {
                hierlock::Error::Misuse(format!(
                    "unknown referential action `{rule}` reading the foreign keys"
                ))
            })
        };
        let key = CascadingForeignKey {
            table: text("child")?,
            name: row
                .try_get::<Option<String>>("", "name")
                .map_err(|e| hierlock::Error::database(doing, e))?,
            parent: text("parent")?,
            on_delete: action("on_delete")?,
            on_update: action("on_update")?,
        };
        if key.on_delete.writes_child_rows() || key.on_update.writes_child_rows() {
            keys.push(key);
        }
    }
    keys.sort_by(|a, b| (&a.table, &a.name, &a.parent).cmp(&(&b.table, &b.name, &b.parent)));
    Ok(keys)
}

/// `?, ?, ?` (MySQL, SQLite) or `$1, $2, $3` (PostgreSQL).
fn placeholders(backend: DbBackend, n: usize) -> String {
    (1..=n)
        .map(|i| match backend {
            DbBackend::Postgres => format!("${i}"),
            _ => "?".to_owned(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_rule_parses() {
        use ReferentialAction::*;
        for (rule, action, writes) in [
            ("CASCADE", Cascade, true),
            ("c", Cascade, true),
            ("SET NULL", SetNull, true),
            ("n", SetNull, true),
            ("SET DEFAULT", SetDefault, true),
            ("d", SetDefault, true),
            ("RESTRICT", Restrict, false),
            ("r", Restrict, false),
            ("NO ACTION", NoAction, false),
            ("a", NoAction, false),
        ] {
            assert_eq!(ReferentialAction::parse(rule), Some(action), "{rule}");
            assert_eq!(action.writes_child_rows(), writes, "{rule}");
        }
        assert_eq!(ReferentialAction::parse("SIMPLE"), None);
    }
}
