-- Schema fed to sea-orm-cli 2.0.4 to produce compact/src and dense/src.
-- MySQL / MariaDB, InnoDB. Load into an empty database, e.g.:
--   mysql -h127.0.0.1 -P3306 -uroot -e 'DROP DATABASE IF EXISTS seaorm_cli_gen; CREATE DATABASE seaorm_cli_gen'
--   mysql -h127.0.0.1 -P3306 -uroot seaorm_cli_gen < tests/sea-orm-cli/schema.sql

CREATE TABLE users (
    id   BIGINT NOT NULL AUTO_INCREMENT,
    name VARCHAR(255) NOT NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB;

CREATE TABLE accounts (
    id      BIGINT NOT NULL AUTO_INCREMENT,
    user_id BIGINT NOT NULL,
    name    VARCHAR(255) NOT NULL,
    balance BIGINT NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT fk_accounts_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB;

CREATE TABLE projects (
    id         BIGINT NOT NULL AUTO_INCREMENT,
    user_id    BIGINT NOT NULL,
    account_id BIGINT NOT NULL,
    title      VARCHAR(255) NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT fk_projects_user    FOREIGN KEY (user_id)    REFERENCES users (id),
    CONSTRAINT fk_projects_account FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE
) ENGINE=InnoDB;

CREATE TABLE invoices (
    id         BIGINT NOT NULL AUTO_INCREMENT,
    user_id    BIGINT NOT NULL,
    account_id BIGINT NOT NULL,
    total      BIGINT NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT fk_invoices_user    FOREIGN KEY (user_id)    REFERENCES users (id),
    CONSTRAINT fk_invoices_account FOREIGN KEY (account_id) REFERENCES accounts (id)
) ENGINE=InnoDB;

CREATE TABLE line_items (
    id         BIGINT NOT NULL AUTO_INCREMENT,
    user_id    BIGINT NOT NULL,
    account_id BIGINT NOT NULL,
    invoice_id BIGINT NOT NULL,
    amount     BIGINT NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT fk_line_items_user    FOREIGN KEY (user_id)    REFERENCES users (id),
    CONSTRAINT fk_line_items_account FOREIGN KEY (account_id) REFERENCES accounts (id),
    CONSTRAINT fk_line_items_invoice FOREIGN KEY (invoice_id) REFERENCES invoices (id) ON DELETE CASCADE
) ENGINE=InnoDB;

-- plain junction user <-> account
CREATE TABLE memberships (
    user_id    BIGINT NOT NULL,
    account_id BIGINT NOT NULL,
    role       VARCHAR(32) NOT NULL,
    PRIMARY KEY (user_id, account_id),
    CONSTRAINT fk_memberships_user    FOREIGN KEY (user_id)    REFERENCES users (id),
    CONSTRAINT fk_memberships_account FOREIGN KEY (account_id) REFERENCES accounts (id)
) ENGINE=InnoDB;

CREATE TABLE tags (
    id         BIGINT NOT NULL AUTO_INCREMENT,
    account_id BIGINT NOT NULL,
    label      VARCHAR(64) NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uq_tags_label (label),
    CONSTRAINT fk_tags_account FOREIGN KEY (account_id) REFERENCES accounts (id)
) ENGINE=InnoDB;

-- junction project <-> tag
CREATE TABLE project_tags (
    project_id BIGINT NOT NULL,
    tag_id     BIGINT NOT NULL,
    PRIMARY KEY (project_id, tag_id),
    CONSTRAINT fk_project_tags_project FOREIGN KEY (project_id) REFERENCES projects (id),
    CONSTRAINT fk_project_tags_tag     FOREIGN KEY (tag_id)     REFERENCES tags (id)
) ENGINE=InnoDB;

CREATE TABLE audit_log (
    id         BIGINT NOT NULL AUTO_INCREMENT,
    actor_id   BIGINT NULL,
    account_id BIGINT NOT NULL,
    message    TEXT NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT fk_audit_log_actor   FOREIGN KEY (actor_id)   REFERENCES users (id) ON DELETE SET NULL,
    CONSTRAINT fk_audit_log_account FOREIGN KEY (account_id) REFERENCES accounts (id)
) ENGINE=InnoDB;
