//! A crate cannot lift the guard by implementing the marker trait itself.

#[path = "../support/entities.rs"]
mod entities;

use entities::account;

impl account::__hierlock_NoActiveModelWrite for &'static () {}

fn main() {}
