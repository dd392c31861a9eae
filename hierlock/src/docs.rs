//! The guide: the pages of the repository's `docs/` directory (packaged
//! through the `hierlock/docs` link to it), one module each, re-exported as
//! `hierlock::guide`, so that docs.rs shows them beside the API and
//! `cargo test` compiles their code blocks. Nothing here is code.
//!
//! The pages link to each other, and to files of the repository, by relative
//! paths, which work where GitHub shows them. Rustdoc takes the first
//! definition of a link label, so `guide-links.md` puts definitions of the
//! same labels before each page (and before the crate's README): on docs.rs
//! they point at these modules, and at the repository for files that are not
//! in the crate.

#[doc = include_str!("guide-links.md")]
#[doc = include_str!("../docs/README.md")]
pub mod guide {
    /// Choosing a lock, the recipes, subtree reads, and hierlock against the
    /// alternatives.
    ///
    pub mod choosing_a_lock {
        #![doc = include_str!("guide-links.md")]
        #![doc = include_str!("../docs/choosing-a-lock.md")]
    }

    /// How locks are planned and taken, the isolation level, and the limits.
    ///
    pub mod how_it_works {
        #![doc = include_str!("guide-links.md")]
        #![doc = include_str!("../docs/how-it-works.md")]
    }

    /// Errors, retry, what a failure leaves, SQLite pools, observability.
    ///
    pub mod errors {
        #![doc = include_str!("guide-links.md")]
        #![doc = include_str!("../docs/errors.md")]
    }

    /// Provisioning the bucket table, the `hierlock` command, and sizing.
    ///
    pub mod provisioning {
        #![doc = include_str!("guide-links.md")]
        #![doc = include_str!("../docs/provisioning.md")]
    }

    /// Deployment topologies: replicas, Galera, Group Replication, poolers,
    /// distributed SQL.
    ///
    pub mod topologies {
        #![doc = include_str!("guide-links.md")]
        #![doc = include_str!("../docs/topologies.md")]
    }

    /// Sharing the bucket table with the Go package.
    ///
    pub mod go_interop {
        #![doc = include_str!("guide-links.md")]
        #![doc = include_str!("../docs/go-interop.md")]
    }

    /// `#[hierlocked]` and `#[protected]`: the reference.
    ///
    pub mod hierlocked {
        #![doc = include_str!("guide-links.md")]
        #![doc = include_str!("../docs/hierlocked.md")]
    }

    /// Migrating `sea-orm-cli` entities to `#[protected]`.
    ///
    pub mod migrating {
        #![doc = include_str!("guide-links.md")]
        #![doc = include_str!("../docs/migrating.md")]
    }

    /// The runnable examples, and how to run them.
    ///
    pub mod examples {
        #![doc = include_str!("guide-links.md")]
        #![doc = include_str!("../docs/examples.md")]
    }

    /// What the benchmark measures, and the main figures.
    ///
    pub mod benchmarks {
        #![doc = include_str!("guide-links.md")]
        #![doc = include_str!("../docs/benchmarks.md")]
    }
}
