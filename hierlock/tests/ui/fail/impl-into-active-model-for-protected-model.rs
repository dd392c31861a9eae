// rustc once suggested this impl for `Insert::one(model)`: it would give
// SeaORM's writes (`ActiveModelTrait::save`, `ModelTrait::delete`) a stored
// row of a protected entity to write without a lock.
#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{EntityTrait, IntoActiveModel};

type RawActiveModel = <account::Table as EntityTrait>::ActiveModel;

impl IntoActiveModel<RawActiveModel> for account::Model {
    fn into_active_model(self) -> RawActiveModel {
        unimplemented!()
    }
}

fn main() {}
