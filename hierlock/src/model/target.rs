//! What to lock: [`Target`]s, and [`Request`]s for read or write access.

use std::fmt;

use crate::model::id::LockId;
use crate::model::level::Level;

/// One node of the hierarchy: a user, an account of a user, or a resource of
/// an account, named by its IDs from the root down.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    // One ID per level from the root; never empty, at most three.
    path: Vec<String>,
}

impl Target {
    /// The user `user`.
    pub fn user(user: impl LockId) -> Self {
        Target {
            path: vec![user.lock_id().into_owned()],
        }
    }

    /// The account `account` of user `user`.
    pub fn account(user: impl LockId, account: impl LockId) -> Self {
        Target {
            path: vec![user.lock_id().into_owned(), account.lock_id().into_owned()],
        }
    }

    /// The resource `resource` of account `account` of user `user`.
    pub fn resource(user: impl LockId, account: impl LockId, resource: impl LockId) -> Self {
        Target {
            path: vec![
                user.lock_id().into_owned(),
                account.lock_id().into_owned(),
                resource.lock_id().into_owned(),
            ],
        }
    }

    /// The level of this node.
    pub fn level(&self) -> Level {
        Level::from_depth(self.path.len()).expect("a target has one to three IDs")
    }

    /// The user ID.
    pub fn user_id(&self) -> &str {
        &self.path[0]
    }

    /// The account ID, for accounts and resources.
    pub fn account_id(&self) -> Option<&str> {
        self.path.get(1).map(String::as_str)
    }

    /// The resource ID, for resources.
    pub fn resource_id(&self) -> Option<&str> {
        self.path.get(2).map(String::as_str)
    }

    /// The IDs from the root down to this node.
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// Whether this node is `other` or one of its ancestors.
    pub fn contains(&self, other: &Target) -> bool {
        other.path.starts_with(&self.path)
    }

    /// This node and its ancestors, root first, as (level, IDs) pairs.
    pub(crate) fn lineage(&self) -> impl Iterator<Item = (Level, &[String])> {
        (1..=self.path.len()).map(|depth| {
            let level = Level::from_depth(depth).expect("depth is 1..=3");
            (level, &self.path[..depth])
        })
    }

    /// Ask for an exclusive lock on this node (shared on its ancestors).
    pub fn write(self) -> Request {
        Request {
            target: self,
            access: Access::Write,
        }
    }

    /// Ask for a shared lock on this node and its ancestors.
    pub fn read(self) -> Request {
        Request {
            target: self,
            access: Access::Read,
        }
    }

    /// Ask for a consistent read of this node's whole subtree: it excludes,
    /// and is excluded by, every write of this node or anything below it;
    /// subtree reads and plain reads coexist. Needs a lock layout with
    /// stripes ([`SubtreeReads`](crate::SubtreeReads)); on a resource it is a
    /// plain read.
    pub fn read_subtree(self) -> Request {
        Request {
            target: self,
            access: Access::ReadSubtree,
        }
    }
}

impl fmt::Display for Target {
    /// The seed's notation: `Resource(u1/a1/r1)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.level() {
            Level::User => "User",
            Level::Account => "Account",
            Level::Resource => "Resource",
        };
        write!(f, "{name}({})", self.path.join("/"))
    }
}

/// How a request uses its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// Shared on the target and its ancestors: readers coexist, writers of the
    /// target (or of an ancestor) wait.
    ///
    /// A read lock on an account or user protects that node's own row, not
    /// its subtree: a writer of a resource below it is not excluded.
    Read,
    /// Exclusive on the target, shared on its ancestors: excludes every other
    /// lock on the target and on anything below it; siblings coexist.
    Write,
    /// Shared on the target's whole subtree (see [`Target::read_subtree`]):
    /// excludes writers of the target and of anything below it.
    ReadSubtree,
}

/// A target together with the access wanted on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    /// The node to lock.
    pub target: Target,
    /// Read (shared) or write (exclusive).
    pub access: Access,
}

impl Request {
    /// Whether holding this request protects `access` on `target`:
    /// a write covers its own subtree; a read covers reads of its own node;
    /// a subtree read covers reads of its subtree.
    pub fn covers(&self, target: &Target, access: Access) -> bool {
        match self.access {
            Access::Write => self.target.contains(target),
            Access::Read => access == Access::Read && &self.target == target,
            Access::ReadSubtree => access != Access::Write && self.target.contains(target),
        }
    }
}

impl From<Target> for Request {
    /// A bare target is a write request, the seed's `Acquire`.
    fn from(target: Target) -> Self {
        target.write()
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let access = match self.access {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadSubtree => "subtree read of",
        };
        write!(f, "{access} {}", self.target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lineage_runs_from_the_root() {
        let t = Target::resource("u1", "a1", 7);
        let lineage: Vec<_> = t.lineage().map(|(l, ids)| (l, ids.join("/"))).collect();
        assert_eq!(
            lineage,
            vec![
                (Level::User, "u1".to_string()),
                (Level::Account, "u1/a1".to_string()),
                (Level::Resource, "u1/a1/7".to_string()),
            ]
        );
        assert_eq!(t.to_string(), "Resource(u1/a1/7)");
    }

    #[test]
    fn containment_follows_the_path() {
        let user = Target::user("u1");
        let account = Target::account("u1", "a1");
        assert!(user.contains(&account));
        assert!(account.contains(&account));
        assert!(!account.contains(&user));
        assert!(!Target::user("u2").contains(&account));
        // "u1" is not a prefix-ID of "u10": containment compares whole IDs.
        assert!(!user.contains(&Target::account("u10", "a1")));
    }

    #[test]
    fn a_write_covers_its_subtree_and_a_read_only_reads_of_itself() {
        let w = Target::account("u1", "a1").write();
        assert!(w.covers(&Target::resource("u1", "a1", "r"), Access::Write));
        assert!(!w.covers(&Target::user("u1"), Access::Read));
        let r = Target::account("u1", "a1").read();
        assert!(r.covers(&Target::account("u1", "a1"), Access::Read));
        assert!(!r.covers(&Target::account("u1", "a1"), Access::Write));
        assert!(!r.covers(&Target::resource("u1", "a1", "r"), Access::Read));
    }

    #[test]
    fn a_subtree_read_covers_reads_below_and_no_write() {
        let s = Target::account("u1", "a1").read_subtree();
        assert!(s.covers(&Target::resource("u1", "a1", "r"), Access::Read));
        assert!(s.covers(&Target::account("u1", "a1"), Access::ReadSubtree));
        assert!(!s.covers(&Target::resource("u1", "a1", "r"), Access::Write));
        assert!(!s.covers(&Target::user("u1"), Access::Read));
        assert_eq!(s.to_string(), "subtree read of Account(u1/a1)");
    }
}
