//! The service's one table, protected at the resource level: outside this
//! module its rows read as usual and are written only with a lock proof
//! covering them (see `repo.rs`).

use hierlock::sea_orm::{ConnectionTrait, DbErr, Schema};

/// A resource of an account, holding a balance.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod resource {
    use hierlock::sea_orm::entity::prelude::*;

    /// A row of `svc_resources`.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "svc_resources")]
    pub struct Model {
        /// The resource; IDs are unique across accounts.
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        /// The user owning the account.
        pub user_id: i64,
        /// The account the resource belongs to.
        pub account_id: i64,
        /// Money held; never negative.
        pub balance: i64,
    }

    /// No relations: the service reads rows by ID or by account.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// Create the table if it does not exist (idempotent).
///
/// # Errors
/// Any database error.
pub async fn create_tables(db: &impl ConnectionTrait) -> Result<(), DbErr> {
    let schema = Schema::new(db.get_database_backend());
    let mut table = schema.create_table_from_entity(resource::Entity);
    db.execute(table.if_not_exists()).await?;
    Ok(())
}
