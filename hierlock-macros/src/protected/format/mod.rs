//! SeaORM 2's entity formats, told apart by `Model`'s attributes:
//! [`compact`] is the one `#[protected]` takes; [`dense`] is refused, with
//! its compact equivalent spelled out.

pub(super) mod compact;
pub(super) mod dense;
