//! What can name a node: the [`LockId`] trait.

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::Arc;

/// A value that can identify a user, an account or a resource.
///
/// IDs are hashed as text, so `42_i64` and `"42"` name the same node; this is
/// what lets a Go service using string IDs share the bucket table with a Rust
/// service using integer keys. Implement it for your own ID newtypes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a hierlock ID",
    label = "not a lock ID",
    note = "IDs must implement `hierlock::LockId`: strings, integers and references to them do",
    note = "for your own ID type, implement `hierlock::LockId` by returning its text form"
)]
pub trait LockId {
    /// The text that is hashed to find this node's lock.
    fn lock_id(&self) -> Cow<'_, str>;
}

impl LockId for str {
    fn lock_id(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

macro_rules! via_deref_str {
    ($($t:ty),*) => {$(
        impl LockId for $t {
            fn lock_id(&self) -> Cow<'_, str> {
                Cow::Borrowed(&**self)
            }
        }
    )*};
}
via_deref_str!(String, Box<str>, Rc<str>, Arc<str>, Cow<'_, str>);

macro_rules! via_to_string {
    ($($t:ty),*) => {$(
        impl LockId for $t {
            fn lock_id(&self) -> Cow<'_, str> {
                Cow::Owned(self.to_string())
            }
        }
    )*};
}
via_to_string!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
);

/// The hyphenated lowercase form, `67e55044-10b1-426f-9247-bb680e5fe0c8`
/// (what `Uuid`'s `Display`, Go's `uuid.UUID.String()` and PostgreSQL's
/// `uuid::text` print), so that services naming a node by the same UUID
/// share its lock. Feature `uuid`.
#[cfg(feature = "uuid")]
impl LockId for uuid::Uuid {
    fn lock_id(&self) -> Cow<'_, str> {
        let mut buffer = uuid::Uuid::encode_buffer();
        Cow::Owned(self.hyphenated().encode_lower(&mut buffer).to_owned())
    }
}

impl<T: LockId + ?Sized> LockId for &T {
    fn lock_id(&self) -> Cow<'_, str> {
        (**self).lock_id()
    }
}

impl<T: LockId + ?Sized> LockId for &mut T {
    fn lock_id(&self) -> Cow<'_, str> {
        (**self).lock_id()
    }
}

/// An ID type whose value can be rebuilt from its [`LockId`] text: what
/// lets a protected write put its coverage check into its own statement
/// (`.. WHERE user_id = ? AND account_id = ?`, with the values of the nodes
/// the proof locks, typed as the table's columns) instead of reading the
/// row first.
///
/// Implemented for `String`, the integers and (feature `uuid`) `uuid::Uuid`.
/// A protected entity whose ID fields are of another type still works: its
/// writes read the row before writing it, one statement more. Implement it
/// for your own ID newtypes to save that statement.
pub trait FromLockId: LockId + Sized {
    /// The ID whose [`LockId::lock_id`] is exactly `text`, or `None` if
    /// there is none (`"042"` or `"x"` for an integer): no row of this type
    /// can belong to a node named so.
    fn from_lock_id(text: &str) -> Option<Self>;
}

impl FromLockId for String {
    fn from_lock_id(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }
}

macro_rules! via_parse {
    ($($t:ty),*) => {$(
        impl FromLockId for $t {
            fn from_lock_id(text: &str) -> Option<Self> {
                // Only the canonical text: `"+7"` and `"07"` hash as other
                // nodes than `7`.
                let id: $t = text.parse().ok()?;
                (id.lock_id() == text).then_some(id)
            }
        }
    )*};
}
via_parse!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
);

#[cfg(feature = "uuid")]
impl FromLockId for uuid::Uuid {
    fn from_lock_id(text: &str) -> Option<Self> {
        let id = uuid::Uuid::try_parse(text).ok()?;
        (id.lock_id() == text).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_strings_name_the_same_node() {
        assert_eq!(42_i64.lock_id(), "42".lock_id());
        assert_eq!(String::from("u1").lock_id(), "u1");
        assert_eq!((&&7_u8).lock_id(), "7");
    }

    #[cfg(feature = "uuid")]
    #[test]
    fn uuids_are_hashed_as_hyphenated_lowercase_text() {
        let id = uuid::Uuid::from_u128(0x67E5_5044_10B1_426F_9247_BB68_0E5F_E0C8);
        assert_eq!(id.lock_id(), "67e55044-10b1-426f-9247-bb680e5fe0c8");
        // The same node as the string form, whatever its case in the input.
        let parsed = uuid::Uuid::parse_str("67E55044-10B1-426F-9247-BB680E5FE0C8").expect("a uuid");
        assert_eq!(parsed.lock_id(), id.to_string().lock_id());
        assert_eq!(
            crate::Target::resource(id, "a", "r").to_string(),
            crate::Target::resource("67e55044-10b1-426f-9247-bb680e5fe0c8", "a", "r").to_string()
        );
    }

    #[test]
    fn ids_are_rebuilt_only_from_their_canonical_text() {
        assert_eq!(i64::from_lock_id("42"), Some(42));
        assert_eq!(i64::from_lock_id("-7"), Some(-7));
        for text in ["042", "+42", " 42", "x", ""] {
            assert_eq!(i64::from_lock_id(text), None, "{text:?}");
        }
        assert_eq!(u8::from_lock_id("256"), None);
        assert_eq!(String::from_lock_id("U1").as_deref(), Some("U1"));
    }

    #[cfg(feature = "uuid")]
    #[test]
    fn uuids_are_rebuilt_only_from_hyphenated_lowercase() {
        let text = "67e55044-10b1-426f-9247-bb680e5fe0c8";
        assert_eq!(
            uuid::Uuid::from_lock_id(text).map(|id| id.to_string()),
            Some(text.to_owned())
        );
        assert_eq!(uuid::Uuid::from_lock_id(&text.to_uppercase()), None);
        assert_eq!(uuid::Uuid::from_lock_id(&text.replace('-', "")), None);
    }
}
