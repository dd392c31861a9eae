//! The attributes of [hierlock](https://docs.rs/hierlock): `#[hierlocked]`
//! and `#[protected]`. Use them as `hierlock::hierlocked` and
//! `hierlock::protected`; this crate is an implementation detail, pinned to
//! the `hierlock` version it was released with.

mod args;
mod ctxt;
mod hierlocked;
mod protected;

use proc_macro::TokenStream;

/// Lock before the body runs: take hierarchical locks on the SeaORM
/// transaction the function receives, then run the body with a lock proof.
///
/// ```no_run
/// use hierlock::proof::AccountLevel;
/// use hierlock::sea_orm::DatabaseTransaction;
/// use hierlock::{HasLocker, Locked, Locker, hierlocked};
///
/// struct Repo {
///     locker: Locker,
/// }
///
/// impl HasLocker for Repo {
///     fn locker(&self) -> &Locker {
///         &self.locker
///     }
/// }
///
/// impl Repo {
///     // Shared on User(user), exclusive on Account(user/account), on `txn`,
///     // before the body runs; released when the caller commits or rolls back.
///     #[hierlocked(user = user, account = account)]
///     async fn close(
///         &self,
///         txn: &DatabaseTransaction,
///         user: i64,
///         account: i64,
///     ) -> hierlock::Result<()> {
///         let proof: &Locked<'_, AccountLevel> = &lock;
///         assert!(std::ptr::eq(proof.txn(), txn));
///         Ok(())
///     }
/// }
/// ```
///
/// Arguments (`user` is required):
///
/// - `user = <expr>`, `account = <expr>`, `resource = <expr>`: the target,
///   each a [`LockId`](https://docs.rs/hierlock/latest/hierlock/trait.LockId.html);
///   or `resources = <iterable>` for several resources of one account, locked
///   in one acquisition;
/// - `read`: shared locks, and a proof that cannot write;
/// - `read_subtree`: shared locks on the target and everything below it (no
///   write of the subtree runs meanwhile; needs `Config::with_subtree_reads`),
///   and a proof that cannot write; not with `read`;
/// - `nowait`, or `timeout = <Duration>`: how long to wait;
/// - `txn = <parameter>`: the transaction (default: the one parameter of type
///   `DatabaseTransaction`, by value or reference);
/// - `locker = <expr>`: anything implementing `hierlock::HasLocker`
///   (default: `self`);
/// - `proof = <ident>`: the proof's name in the body (default: `lock`);
/// - `within = <proof>`: the proof of an enclosing call on the same
///   transaction; this call's locks must then come after it in the global
///   order, or the call fails with `Error::Misuse` before locking anything;
/// - `crate = <path>`: where hierlock is, for crates that re-export it.
///
/// The body gets `lock: hierlock::Locked<'_, L, A>`, with `L` the level of the
/// most specific target (`UserLevel`, `AccountLevel`, `ResourceLevel`) and `A`
/// `Write`, `Read` or `ReadSubtree`. If the locks cannot be taken the body does
/// not run, and the function returns `Err(E::from(hierlock::Error))`: it must
/// return `Result<_, E>` with `E: From<hierlock::Error>`.
///
/// The full reference (expansion, composition, every compile error) is
/// [`docs/hierlocked.md`](https://github.com/hierlock/hierlock/blob/main/docs/hierlocked.md)
/// in the repository.
#[proc_macro_attribute]
pub fn hierlocked(args: TokenStream, item: TokenStream) -> TokenStream {
    hierlocked::hierlocked(args.into(), item.into()).into()
}

/// Make a SeaORM entity writable only with a lock proof.
///
/// On the inline module of a `DeriveEntityModel` entity: `level` is the level
/// of the node each row belongs to, and `user`, `account`, `resource` name the
/// fields of `Model` that hold its IDs (down to that level).
///
/// ```no_run
/// #[hierlock::protected(level = account, user = user_id, account = id)]
/// pub mod account {
///     use hierlock::sea_orm::entity::prelude::*;
///
///     #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
///     #[sea_orm(table_name = "accounts")]
///     pub struct Model {
///         #[sea_orm(primary_key, auto_increment = false)]
///         pub id: i64,
///         pub user_id: i64,
///         pub balance: i64,
///     }
///
///     #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
///     pub enum Relation {}
///
///     // No `impl ActiveModelBehavior`: `#[protected]` provides it.
/// }
///
/// use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction, EntityTrait};
/// use hierlock::{Locker, hierlocked};
///
/// #[hierlocked(user = user, account = id, locker = locker)]
/// async fn refill(
///     locker: &Locker,
///     txn: &DatabaseTransaction,
///     user: i64,
///     id: i64,
/// ) -> hierlock::Result<()> {
///     // Reads are SeaORM's.
///     let found = account::Entity::find_by_id(id).one(txn).await;
///     let _ = found;
///     // Writes need the proof, and check that it covers the row.
///     let row = account::ActiveModel { id: Set(id), user_id: Set(user), balance: Set(100) };
///     account::Entity::update(row).exec(&lock).await?;
///     Ok(())
/// }
/// # fn main() {}
/// ```
///
/// The entity module must be an item of a module (the crate root, or any
/// `mod`), not of a function body: its facade names the sealed sibling
/// module through `super::`.
///
/// The module becomes a facade over the SeaORM entity, which is sealed in a
/// hidden sibling module:
///
/// - `Entity` reads as SeaORM does (`find`, `find_by_id`, `find_related`)
///   and writes only with a proof: `insert`, `insert_many`, `update`,
///   `delete`, `delete_by_id`, upserts (`insert(..).on_conflict_update(..)`)
///   and `update_many` / `delete_many` run as `.exec(&lock)` with a write
///   proof whose level covers the entity's (User covers Account covers
///   Resource); at run time each row must be covered (`Error::NotCovered`,
///   nothing written). It is SeaORM's entity (relations, `Schema`,
///   queries and loaders take it, in plain entities too); its inherent
///   writes above win over `EntityTrait`'s. `ActiveModel` is not SeaORM's
///   `ActiveModelTrait`, so SeaORM's writes of an active model do not
///   compile on it. SeaORM's generic writes given the entity
///   (`Update::many(Entity)`) are flagged by `docs/clippy.recommended.toml`.
/// - `Table` is another name of `Entity`.
///
/// Relations name other entities by their `Entity`, as `sea-orm-cli`
/// writes them.
/// The module is in SeaORM's compact format or its dense one
/// (`#[sea_orm::model]`: reads, `find_by_<unique key>` and
/// `Entity::load()` as SeaORM's, `delete_by_<unique key>` with a proof,
/// SeaORM's nested `ActiveModelEx` writes refused; its relation fields name
/// other protected dense entities), and an empty
/// `impl ActiveModelBehavior for ActiveModel {}` may stay. Migrating a
/// generated entity set:
/// [`docs/migrating.md`](https://github.com/hierlock/hierlock/blob/main/docs/migrating.md).
///
/// Arguments: `level`, `user`, `account`, `resource`, `crate = <path>`. See
/// [`docs/hierlocked.md`](https://github.com/hierlock/hierlock/blob/main/docs/hierlocked.md)
/// for what the guarantee covers and what it does not.
#[proc_macro_attribute]
pub fn protected(args: TokenStream, item: TokenStream) -> TokenStream {
    protected::protected(args.into(), item.into()).into()
}
