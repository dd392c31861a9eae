//! The three levels of the hierarchy.

use std::fmt;

/// A level of the User → Account → Resource hierarchy.
///
/// The numeric value is the `level` column of the bucket table (the seed's
/// encoding: User=0, Account=1, Resource=2) and the first part of the global
/// lock order: every plan locks users before accounts before resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Level {
    /// A user: the root of a tree.
    User = 0,
    /// An account, owned by one user.
    Account = 1,
    /// A resource, owned by one account.
    Resource = 2,
}

impl Level {
    /// All levels, from the root down.
    pub const ALL: [Level; 3] = [Level::User, Level::Account, Level::Resource];

    /// The value stored in the bucket table's `level` column.
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// How many IDs name a node at this level (User: 1, Account: 2, Resource: 3).
    pub const fn depth(self) -> usize {
        self as usize + 1
    }

    /// The level whose node is named by `depth` IDs.
    pub(crate) const fn from_depth(depth: usize) -> Option<Level> {
        match depth {
            1 => Some(Level::User),
            2 => Some(Level::Account),
            3 => Some(Level::Resource),
            _ => None,
        }
    }

    /// Lower-case name, as used in key strings and messages.
    pub const fn name(self) -> &'static str {
        match self {
            Level::User => "user",
            Level::Account => "account",
            Level::Resource => "resource",
        }
    }

    /// Whether an exclusive lock at `self` also protects nodes at `other`
    /// (a level covers itself and every level below it).
    pub const fn covers(self, other: Level) -> bool {
        self.as_u8() <= other.as_u8()
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_the_seed() {
        assert_eq!(Level::User.as_u8(), 0);
        assert_eq!(Level::Account.as_u8(), 1);
        assert_eq!(Level::Resource.as_u8(), 2);
    }

    #[test]
    fn a_level_covers_itself_and_below() {
        assert!(Level::User.covers(Level::Resource));
        assert!(Level::Account.covers(Level::Account));
        assert!(!Level::Resource.covers(Level::Account));
    }
}
