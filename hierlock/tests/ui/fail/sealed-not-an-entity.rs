//! The bound of a protected facade's SeaORM entity traits cannot be met:
//! meeting it would make `account::Entity` a SeaORM entity, writable
//! without a lock.
#[path = "../support/entities.rs"]
mod entities;

use entities::account;

impl account::__hierlock_NotAnEntity for &() {}

fn main() {}
