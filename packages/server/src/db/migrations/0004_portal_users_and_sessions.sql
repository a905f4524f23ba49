-- Merchant Portal users and their sessions (issue 8). A user belongs to one Platform; the
-- email is unique across the installation (case-insensitive), so signing in needs no Platform.
-- Passwords are stored as scrypt hashes (`scrypt$N$r$p$salt$hash`), never in clear.
CREATE TABLE portal_users (
  id             text PRIMARY KEY,
  platform_id    text NOT NULL REFERENCES platforms(id),
  email          text NOT NULL,
  password_hash  text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX portal_users_email_idx ON portal_users (lower(email));
CREATE INDEX portal_users_platform_idx ON portal_users (platform_id);

-- Server-side sessions. The cookie holds a random token; only its SHA-256 is stored, so a
-- leaked table can't be replayed as cookies. The session carries the environment the user
-- switched to and its CSRF token (sent back by the page in a header on every mutation).
CREATE TABLE portal_sessions (
  token_hash   text PRIMARY KEY,
  user_id      text NOT NULL REFERENCES portal_users(id) ON DELETE CASCADE,
  platform_id  text NOT NULL REFERENCES platforms(id),
  environment  text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  csrf_token   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL
);
CREATE INDEX portal_sessions_user_idx ON portal_sessions (user_id);
CREATE INDEX portal_sessions_expires_idx ON portal_sessions (expires_at);

-- "Replay all failed since…" jobs started from the portal. The process that runs a job updates
-- its row after every attempt (`updated_at` is its heartbeat), so any API process can report
-- progress, and a job whose process ended shows as stopped instead of running forever.
CREATE TABLE bulk_replays (
  id           text PRIMARY KEY,
  platform_id  text NOT NULL REFERENCES platforms(id),
  environment  text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  endpoint_id  text NOT NULL REFERENCES webhook_endpoints(id),
  since        timestamptz NOT NULL,
  status       text NOT NULL CHECK (status IN ('running', 'finished', 'stopped')),
  total        integer NOT NULL,
  attempted    integer NOT NULL DEFAULT 0,
  delivered    integer NOT NULL DEFAULT 0,
  failed       integer NOT NULL DEFAULT 0,
  skipped      integer NOT NULL DEFAULT 0,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  finished_at  timestamptz
);
CREATE INDEX bulk_replays_endpoint_idx ON bulk_replays (endpoint_id, status);
