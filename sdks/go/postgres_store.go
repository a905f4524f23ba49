package payhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// PostgresStore is durable: the seen id and the event to process are one row, written by one
// statement, so an acknowledged event is never without its work. States: processing (leased to
// one worker), pending (waiting for a retry), done (kept 30 days, then purged), failed (every
// attempt failed; kept until requeued or replayed). The tables are the ones every payhooks
// receiver library uses (payhooks_events, payhooks_credits).
//
// It takes your *sql.DB with a PostgreSQL driver registered (github.com/lib/pq or pgx's stdlib).
type PostgresStore struct {
	db        *sql.DB
	t, c      string
	base      string
	retention time.Duration
	ready     bool
	readyMu   sync.Mutex
}

// PostgresOptions: Table and CreditsTable (default payhooks_events, payhooks_credits), Retention
// (at least 30 days), NoAutoMigrate (create the tables yourself from SchemaSQL).
type PostgresOptions struct {
	Table, CreditsTable string
	Retention           time.Duration
	NoAutoMigrate       bool
}

var identRe = regexp.MustCompile(`\A[A-Za-z_][A-Za-z0-9_]{0,62}\z`)

func quoteTable(name string) (string, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", fmt.Errorf("%w: invalid table name %q", ErrConfig, name)
	}
	for i, p := range parts {
		if !identRe.MatchString(p) {
			return "", fmt.Errorf("%w: invalid table name %q", ErrConfig, name)
		}
		parts[i] = `"` + p + `"`
	}
	return strings.Join(parts, "."), nil
}

// NewPostgresStore makes a store on db.
func NewPostgresStore(db *sql.DB, opts PostgresOptions) (*PostgresStore, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: NewPostgresStore needs a *sql.DB", ErrConfig)
	}
	if opts.Table == "" {
		opts.Table = defaultEventsTable
	}
	if opts.CreditsTable == "" {
		opts.CreditsTable = defaultCreditsTable
	}
	t, err := quoteTable(opts.Table)
	if err != nil {
		return nil, err
	}
	c, err := quoteTable(opts.CreditsTable)
	if err != nil {
		return nil, err
	}
	retention, err := checkRetention(opts.Retention)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(opts.Table, ".")
	return &PostgresStore{db: db, t: t, c: c, base: parts[len(parts)-1], retention: retention, ready: opts.NoAutoMigrate}, nil
}

// DB is the store's database, for your own queries (reading the ledger).
func (s *PostgresStore) DB() *sql.DB { return s.db }

// SchemaSQL creates the store's tables (for your own migrations).
func (s *PostgresStore) SchemaSQL() string {
	return receiverTablesSQL(s.t, s.c, s.base)
}

// Migrate creates the tables if they do not exist (safe from several processes at once).
func (s *PostgresStore) Migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	// Concurrent CREATE TABLE IF NOT EXISTS can still collide: serialise migrations.
	for _, stmt := range []string{"SELECT pg_advisory_xact_lock(hashtext('" + migrationLockKey + "'))", "SET LOCAL client_min_messages = warning", s.SchemaSQL()} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.readyMu.Lock()
	s.ready = true
	s.readyMu.Unlock()
	return nil
}

func (s *PostgresStore) ensureReady(ctx context.Context) error {
	s.readyMu.Lock()
	ready := s.ready
	s.readyMu.Unlock()
	if ready {
		return nil
	}
	return s.Migrate(ctx)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (s *PostgresStore) Claim(ctx context.Context, event *Event, lease time.Duration) (*Claim, error) {
	if err := s.ensureReady(ctx); err != nil {
		return nil, err
	}
	payload, err := json.Marshal(event.Raw)
	if err != nil {
		return nil, err
	}
	token := newToken()
	// Insert-or-ignore. An existing row is taken over only when its work failed for good (a
	// replay re-runs it) or its holder's lease expired (the holder died).
	var attempts int
	err = s.db.QueryRowContext(ctx, fmt.Sprintf(`
INSERT INTO %[1]s AS e (event_id, event_type, state, payload, attempts, token, locked_until)
VALUES ($1, $2, 'processing', $3::jsonb, 1, $4, now() + $5::float8 * interval '1 millisecond')
ON CONFLICT (event_id) DO UPDATE SET
  state = 'processing', payload = EXCLUDED.payload, token = EXCLUDED.token,
  attempts = CASE WHEN e.state = 'failed' THEN 1 ELSE e.attempts + 1 END,
  locked_until = EXCLUDED.locked_until, next_attempt_at = NULL, updated_at = now()
WHERE e.state = 'failed' OR (e.state = 'processing' AND e.locked_until < now())
RETURNING attempts`, s.t), event.ID, event.Type, string(payload), token, ms(lease)).Scan(&attempts)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &Claim{EventID: event.ID, Token: token, Attempt: attempts}, nil
}

func (s *PostgresStore) exec(ctx context.Context, query string, args ...any) (int64, error) {
	r, err := s.db.ExecContext(ctx, fmt.Sprintf(query, s.t), args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

func (s *PostgresStore) Complete(ctx context.Context, claim *Claim) error {
	_, err := s.exec(ctx, `UPDATE %s SET state = 'done', payload = NULL, token = NULL, locked_until = NULL,
  next_attempt_at = NULL, last_error = NULL, updated_at = now() WHERE event_id = $1 AND token = $2`, claim.EventID, claim.Token)
	return err
}

func (s *PostgresStore) RetryLater(ctx context.Context, claim *Claim, delay, _ time.Duration, cause error) error {
	_, err := s.exec(ctx, `UPDATE %s SET state = 'pending', token = NULL, locked_until = NULL,
  next_attempt_at = now() + $3::float8 * interval '1 millisecond', last_error = NULLIF($4, ''), updated_at = now()
  WHERE event_id = $1 AND token = $2`, claim.EventID, claim.Token, ms(delay), errorText(cause))
	return err
}

func (s *PostgresStore) Release(ctx context.Context, claim *Claim) error {
	_, err := s.exec(ctx, `DELETE FROM %s WHERE event_id = $1 AND token = $2`, claim.EventID, claim.Token)
	return err
}

func (s *PostgresStore) MarkFailed(ctx context.Context, claim *Claim, cause error) error {
	_, err := s.exec(ctx, `UPDATE %s SET state = 'failed', token = NULL, locked_until = NULL, next_attempt_at = NULL,
  last_error = $3, updated_at = now() WHERE event_id = $1 AND token = $2`, claim.EventID, claim.Token, errorText(cause))
	return err
}

// ClaimDue claims work that is due (retries) or abandoned (expired leases).
func (s *PostgresStore) ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]DueWork, error) {
	if limit <= 0 {
		return nil, nil
	}
	if err := s.ensureReady(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, fmt.Sprintf(`
UPDATE %[1]s AS e SET state = 'processing', attempts = e.attempts + 1,
  token = gen_random_uuid()::text, locked_until = now() + $2::float8 * interval '1 millisecond',
  next_attempt_at = NULL, updated_at = now()
FROM (
  SELECT event_id FROM %[1]s
  WHERE (state = 'pending' AND next_attempt_at <= now())
     OR (state = 'processing' AND locked_until < now())
  ORDER BY COALESCE(next_attempt_at, locked_until)
  LIMIT $1
  FOR UPDATE SKIP LOCKED
) due
WHERE e.event_id = due.event_id
RETURNING e.event_id, e.attempts, e.token, e.payload::text`, s.t), limit, ms(lease))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var due []DueWork
	for rows.Next() {
		var id, token, payload string
		var attempts int
		if err := rows.Scan(&id, &attempts, &token, &payload); err != nil {
			return nil, err
		}
		event, err := parseStored([]byte(payload))
		if err != nil {
			return nil, err
		}
		due = append(due, DueWork{Claim: &Claim{EventID: id, Token: token, Attempt: attempts}, Event: event})
	}
	return due, rows.Err()
}

func parseStored(payload []byte) (*Event, error) {
	var raw map[string]any
	decoder := json.NewDecoder(strings.NewReader(string(payload)))
	decoder.UseNumber()
	if err := decoder.Decode(&raw); err != nil {
		return nil, err
	}
	id, _ := raw["id"].(string)
	typ, _ := raw["type"].(string)
	return &Event{ID: id, Type: typ, Raw: raw}, nil
}

// RequeueFailed puts failed events (all when eventID is empty, or one) back in the queue.
func (s *PostgresStore) RequeueFailed(ctx context.Context, eventID string) (int64, error) {
	if err := s.ensureReady(ctx); err != nil {
		return 0, err
	}
	return s.exec(ctx, `UPDATE %s SET state = 'pending', attempts = 0, next_attempt_at = now(), updated_at = now()
  WHERE state = 'failed' AND ($1 = '' OR event_id = $1)`, eventID)
}

// Purge deletes done ids older than the retention.
func (s *PostgresStore) Purge(ctx context.Context) (int64, error) {
	if err := s.ensureReady(ctx); err != nil {
		return 0, err
	}
	return s.exec(ctx, `DELETE FROM %s WHERE state = 'done' AND updated_at < now() - $1::float8 * interval '1 millisecond'`, ms(s.retention))
}

// CreditOnce runs work at most once per payment id, inside a transaction that also inserts the
// payment id into the credits table: write your ledger row with tx, and both commit together.
// If work returns an error (or panics), both roll back and the error is returned.
func (s *PostgresStore) CreditOnce(ctx context.Context, paymentID string, work func(tx *sql.Tx) error) (CreditResult, error) {
	if err := checkPaymentID(paymentID); err != nil {
		return CreditResult{}, err
	}
	if err := s.ensureReady(ctx); err != nil {
		return CreditResult{}, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return CreditResult{}, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	// The primary key makes a concurrent second insert wait for the first transaction: it then
	// conflicts (first committed: credited) or goes ahead (first rolled back).
	r, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (payment_id) VALUES ($1) ON CONFLICT (payment_id) DO NOTHING`, s.c), paymentID)
	if err != nil {
		return CreditResult{}, err
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return CreditResult{}, nil
	}
	if err := safeCall(func() error { return work(tx) }); err != nil {
		return CreditResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return CreditResult{}, err
	}
	return CreditResult{Credited: true}, nil
}
