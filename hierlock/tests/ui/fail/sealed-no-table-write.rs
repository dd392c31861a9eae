//! A crate cannot lift the guard by implementing the marker trait itself.

#[path = "../support/entities.rs"]
mod entities;

use entities::account;

impl hierlock::__private::NoTableWrite<account::Entity> for &'static () {}

fn main() {}
