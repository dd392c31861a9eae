//! The supertrait of a facade's bound is hierlock's, and only hierlock
//! could implement it for `&()`.
impl hierlock::__private::NotAnEntity for &() {}

fn main() {}
