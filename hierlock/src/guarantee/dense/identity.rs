//! Whether the connection a nested write runs on is the proof's
//! [`NestedTxn`].
//!
//! SeaORM's nested writes are generic over the transaction they hand down:
//! a plain dense entity's nested save passes a protected related row its
//! own `C::Transaction`, which is a `NestedTxn` when the save was given a
//! proof and SeaORM's transaction when it was not. So a row write learns at
//! run time which it got. `typeid` gives the id of a type that need not be
//! `'static`, as that generic is not known to be.
#![allow(unsafe_code)]

use std::any::TypeId;

use super::NestedTxn;

/// `conn` as the nested save's connection, if it is one.
pub(super) fn as_nested<T: ?Sized>(conn: &T) -> Option<&NestedTxn> {
    if typeid::of::<T>() != TypeId::of::<NestedTxn>() {
        return None;
    }
    // SAFETY: `T` is `NestedTxn`: the ids are equal, and `NestedTxn` has no
    // lifetime parameter that the id of a non-'static `T` could have
    // erased. So the reference is thin and points at a `NestedTxn`.
    Some(unsafe { &*(conn as *const T).cast::<NestedTxn>() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_nested_txn_is_one() {
        let not_one = 7_u32;
        assert!(as_nested(&not_one).is_none());
        assert!(as_nested::<str>("text").is_none());
    }
}
