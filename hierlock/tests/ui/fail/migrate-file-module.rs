//! `#[protected]` on the file module `sea-orm-cli` declares (`pub mod
//! user;`): the error says to move its items inline.

#[hierlock::protected(level = user, user = id)]
#[path = "../support/migrate/user.rs"]
pub mod user;

fn main() {}
