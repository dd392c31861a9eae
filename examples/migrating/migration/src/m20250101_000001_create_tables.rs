use hierlock_migrating_entity::{account, note, resource, tag, user};
use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{EntityName, Schema};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let schema = Schema::new(manager.get_database_backend());
        // Each entity, protected or not, by its `Entity`.
        manager
            .create_table(schema.create_table_from_entity(user::Entity))
            .await?;
        manager
            .create_table(schema.create_table_from_entity(account::Entity))
            .await?;
        manager
            .create_table(schema.create_table_from_entity(resource::Entity))
            .await?;
        manager
            .create_table(schema.create_table_from_entity(note::Entity))
            .await?;
        manager
            .create_table(schema.create_table_from_entity(tag::Entity))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            tag::Entity.table_name(),
            note::Entity.table_name(),
            resource::Entity.table_name(),
            account::Entity.table_name(),
            user::Entity.table_name(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
