//! The supertrait of every guard of a protected entity is hierlock's, and
//! only hierlock could implement it for `&()`.
impl hierlock::__private::Unmet for &() {}

fn main() {}
