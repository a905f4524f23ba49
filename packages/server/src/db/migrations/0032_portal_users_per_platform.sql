-- A person may be on several Platforms' teams: one portal account per Platform and email, each
-- with its own password and role (docs/decisions/portal-accounts-per-platform.md). An email was
-- unique across the installation, so inviting another Platform's user answered "already exists"
-- and told one Platform's admin who uses another. Sign-in finds an email's accounts by the
-- non-unique index and signs into the one the password opens; two accounts of one email may
-- not share a password (checked where a password is chosen).
--
-- Expand only: the previous release checks the whole installation itself before creating a user,
-- so it neither needs the old index nor trips over the new one.
CREATE UNIQUE INDEX portal_users_platform_email_idx ON portal_users (platform_id, lower(email));
DROP INDEX portal_users_email_idx;
CREATE INDEX portal_users_email_idx ON portal_users (lower(email));
