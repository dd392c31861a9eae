// The README's links to the guide's pages point at `hierlock::guide` on
// docs.rs: rustdoc takes the first definition of a link label (see
// `docs.rs`, beside this file).
#![doc = include_str!("guide-links.md")]
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
// The one exception is SQLite's busy handler (`backend::sqlite::busy_handler`).
#![deny(unsafe_code)]

#[cfg(not(any(feature = "mysql", feature = "postgres", feature = "sqlite")))]
compile_error!(
    "hierlock needs a database: enable one or more of its features `mysql` (MySQL and MariaDB), \
     `postgres` or `sqlite`: in Cargo.toml `hierlock = { .., features = [\"postgres\"] }`; \
     with cargo `--features postgres` (or `mysql`, `sqlite`, `--all-features`), \
     e.g. `cargo doc -p hierlock --all-features`"
);

/// Compiles the crate only with a backend feature: without one, SeaORM has
/// no driver and the code naming its driver types would bury the
/// `compile_error!` above under errors of its own.
macro_rules! with_a_backend {
    ($($item:item)*) => {$(
        #[cfg(any(feature = "mysql", feature = "postgres", feature = "sqlite"))]
        $item
    )*};
}

with_a_backend! {
    /// The workspace README is not packaged (the crate's own README is its
    /// docs.rs page), but its snippets are tested with the crate's, in the
    /// repository.
    #[cfg(doctest)]
    #[doc = include_str!("../../README.md")]
    struct WorkspaceReadme;
    mod docs;
    pub use docs::guide;
    #[doc(hidden)]
    #[path = "private.rs"]
    pub mod __private;
    mod backend;
    mod config;
    mod db_err;
    mod error;
    mod guarantee;
    pub mod lease;
    mod model;
    mod runtime;
    pub mod schema;
    #[cfg(feature = "sqlite")]
    pub mod sqlite;

    pub use guarantee::proof;

    pub use runtime::acquire::{LockSet, Locker};
    pub use error::conflict_kind;
    pub use config::{
        Config, DEADLINE_MARGIN, DEFAULT_ANSWER_TIMEOUT, DEFAULT_LEASE, DEFAULT_TABLE,
        MAX_BUCKET_SPACE, MAX_LEASE, MAX_TABLE_NAME_LEN, MAX_TIMEOUT, PostgresLocks,
        TableName, Wait,
    };
    pub use backend::dialect::Dialect;
    pub use error::{Error, ErrorKind, Result, TxnState};
    pub use runtime::handle::LockHandle;
    pub use model::id::{FromLockId, LockId};
    pub use model::key::{DEFAULT_ADVISORY_NAMESPACE, KeyScheme, SEED_BUCKET_SPACE, advisory_key};
    pub use model::level::Level;
    pub use model::plan::{
        KeyKind, Keyspace, LockKey, LockMode, LockPlan, MAX_LOCKS_PER_CALL, PlannedLock,
        STRIPE_LEVEL_OFFSET,
    };
    pub use model::stripe::{MAX_STRIPES, SubtreeReads};
    pub use runtime::retry::{RetryPolicy, Retryable, retry};
    pub use model::target::{Access, Request, Target};
    pub use backend::topology::{GroupMode, MemberRole, Topology};

    pub use __private::AsTransaction;
    pub use hierlock_macros::{hierlocked, protected};
    pub use proof::{HasLocker, Locked};
    pub use guarantee::dense::NestedTxn;
    pub use guarantee::protect::{
        INITIAL_VERSION, IdValue, Protect, ProtectedDelete, ProtectedDeleteMany, ProtectedInsert,
        ProtectedInsertMany, ProtectedUpdate, ProtectedUpdateMany, ProtectedUpsert, VersionNumber,
        Versioned, WriteFuture, WriteProof,
    };

    /// Re-exported so that users and generated code name one SeaORM.
    pub use sea_orm;
}
