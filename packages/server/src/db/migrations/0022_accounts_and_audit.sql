-- Accounts a team can manage, sign-in from the payment service, and the audit trail (issue 34).

-- 1. Roles and two-factor sign-in for portal users. Users made before roles could do everything:
--    they become admins. New users always get a role from the code that makes them.
ALTER TABLE portal_users
  ADD COLUMN role text NOT NULL DEFAULT 'admin' CHECK (role IN ('viewer', 'developer', 'admin')),
  ADD COLUMN name text,
  -- The TOTP shared secret, sealed like signing secrets (AES-256-GCM, bound to the user id).
  ADD COLUMN totp_secret_ciphertext text,
  ADD COLUMN totp_enabled_at timestamptz,
  -- The last time step a code was accepted for: a code is good once (two-factor.ts).
  ADD COLUMN totp_last_step bigint,
  ADD COLUMN password_changed_at timestamptz;
ALTER TABLE portal_users ALTER COLUMN role DROP DEFAULT;

-- Single-use recovery codes, stored as SHA-256 (they carry ~49 random bits each).
CREATE TABLE portal_recovery_codes (
  user_id    text NOT NULL REFERENCES portal_users(id) ON DELETE CASCADE,
  code_hash  text NOT NULL,
  used_at    timestamptz,
  PRIMARY KEY (user_id, code_hash)
);

-- 2. One kind of session, whichever way it started: a password sign-in (a portal user, whose
--    role is read from the user at every request, so a change applies at once) or a link the
--    payment service asked for (`embedded`: the payment service's user, the role it named, one
--    environment). `last_seen_at` drives the idle timeout.
ALTER TABLE portal_sessions
  ALTER COLUMN user_id DROP NOT NULL,
  ADD COLUMN kind text NOT NULL DEFAULT 'password' CHECK (kind IN ('password', 'embedded')),
  ADD COLUMN role text CHECK (role IN ('viewer', 'developer', 'admin')),
  ADD COLUMN external_user jsonb,
  ADD COLUMN return_url text,
  ADD COLUMN last_seen_at timestamptz NOT NULL DEFAULT now(),
  -- Signed in with a password on a Platform that requires two-factor sign-in, not enrolled yet:
  -- the session can do nothing but enrol (or sign out).
  ADD COLUMN needs_two_factor_setup boolean NOT NULL DEFAULT false,
  ADD CONSTRAINT portal_sessions_kind_user_check CHECK (
    (kind = 'password' AND user_id IS NOT NULL) OR (kind = 'embedded' AND user_id IS NULL AND role IS NOT NULL AND external_user IS NOT NULL));
-- Sessions idle past the timeout are swept at each sign-in, like expired ones.
CREATE INDEX portal_sessions_last_seen_idx ON portal_sessions (last_seen_at);

-- 3. Single-use tokens, stored as SHA-256 like API keys: the payment service's session links,
--    invitations, password resets and the second step of a two-factor sign-in. Using one is an
--    UPDATE that sets used_at where it is NULL and unexpired, so it succeeds once.
CREATE TABLE account_tokens (
  token_hash   text PRIMARY KEY,
  id           text NOT NULL UNIQUE,
  purpose      text NOT NULL CHECK (purpose IN ('portal_link', 'invitation', 'password_reset', 'two_factor')),
  platform_id  text NOT NULL REFERENCES platforms(id),
  user_id      text REFERENCES portal_users(id) ON DELETE CASCADE,
  email        text,
  role         text CHECK (role IN ('viewer', 'developer', 'admin')),
  details      jsonb NOT NULL DEFAULT '{}',
  attempts     integer NOT NULL DEFAULT 0,
  created_at   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz
);
CREATE INDEX account_tokens_open_idx ON account_tokens (platform_id, purpose, expires_at) WHERE used_at IS NULL;
CREATE INDEX account_tokens_expires_idx ON account_tokens (expires_at);

-- 4. Per-Platform settings of the portal: two-factor sign-in required, and the look it takes
--    when embedded in the payment service's portal (accent colour, name or logo, light or dark).
ALTER TABLE platforms
  ADD COLUMN require_two_factor boolean NOT NULL DEFAULT false,
  ADD COLUMN portal_theme jsonb NOT NULL DEFAULT '{}';

-- 5. The audit trail: who changed what, when, from where, and how it ended. Partitioned by week
--    like the delivery log; retention drops whole weeks (db/retention.ts). Rows are never
--    changed or deleted: the triggers below refuse UPDATE, DELETE and TRUNCATE to any role that
--    is neither the table's owner nor a superuser. The owner can disable, drop or bypass them
--    (ALTER TABLE ... DISABLE TRIGGER, DETACH PARTITION, DROP TABLE) and a superuser can also
--    skip them (session_replication_role): the service runs as a runtime role for that reason
--    (db/roles.ts). Dropping a week's partition is not a row operation and is how retention
--    removes it.
CREATE TABLE audit_events (
  id             text NOT NULL,
  created_at     timestamptz NOT NULL,
  platform_id    text,
  environment    text CHECK (environment IN ('live', 'sandbox')),
  actor_type     text NOT NULL CHECK (actor_type IN ('user', 'embedded_user', 'api_key', 'internal', 'operator', 'system', 'customer')),
  actor_id       text,
  actor_email    text,
  actor_name     text,
  ip             text,
  user_agent     text,
  request_id     text,
  action         text NOT NULL,
  resource_type  text NOT NULL,
  resource_id    text,
  changes        jsonb,
  outcome        text NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'denied')),
  error_code     text,
  PRIMARY KEY (created_at, id)
) PARTITION BY RANGE (created_at);
CREATE TABLE audit_events_default PARTITION OF audit_events DEFAULT;
-- Every read is one Platform's entries, newest first, with optional filters.
CREATE INDEX audit_events_platform_idx ON audit_events (platform_id, created_at DESC, id DESC);

CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'Entries leave only with their week, when retention drops its partition.';
END $$;
-- Row triggers of a partitioned table are cloned to every partition, present and future.
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
-- TRUNCATE triggers are per table: the parent's, and each partition's (retention adds them to new weeks).
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events_default
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();

DO $$
DECLARE
  wk timestamp;
  part text;
BEGIN
  FOR wk IN
    SELECT generate_series(date_trunc('week', now() AT TIME ZONE 'UTC'), date_trunc('week', now() AT TIME ZONE 'UTC') + interval '2 weeks', interval '1 week')
  LOOP
    part := 'audit_events_p' || to_char(wk, 'YYYYMMDD');
    EXECUTE format('CREATE TABLE %I PARTITION OF audit_events FOR VALUES FROM (%L) TO (%L)',
      part, (wk AT TIME ZONE 'UTC')::text, ((wk + interval '1 week') AT TIME ZONE 'UTC')::text);
    EXECUTE format('CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()', part);
  END LOOP;
END $$;
