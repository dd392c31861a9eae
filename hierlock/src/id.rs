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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_strings_name_the_same_node() {
        assert_eq!(42_i64.lock_id(), "42".lock_id());
        assert_eq!(String::from("u1").lock_id(), "u1");
        assert_eq!((&&7_u8).lock_id(), "7");
    }
}
