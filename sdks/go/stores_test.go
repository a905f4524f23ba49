package payhooks

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq"
)

// The same store duties against the real PostgreSQL and Redis (spec 6.2.1, 6.2.3, 8).

var (
	pgOnce sync.Once
	pgURL  string
	pgErr  error
	pgDrop func()
)

func adminURL() string {
	if u := os.Getenv("PAYHOOKS_TEST_PG_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

func redisURL() string {
	if u := os.Getenv("PAYHOOKS_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// testDB is one fresh database for the test binary, dropped by TestMain.
func testDB(t *testing.T) *sql.DB {
	t.Helper()
	pgOnce.Do(func() {
		admin, err := sql.Open("postgres", adminURL())
		if err != nil {
			pgErr = err
			return
		}
		defer admin.Close()
		name := "payhooks_go_" + randomHex(6)
		if _, pgErr = admin.Exec("CREATE DATABASE " + name); pgErr != nil {
			return
		}
		pgURL = strings.Replace(adminURL(), "/postgres?", "/"+name+"?", 1)
		pgDrop = func() {
			a, err := sql.Open("postgres", adminURL())
			if err == nil {
				_, _ = a.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
				a.Close()
			}
		}
	})
	if pgErr != nil {
		t.Fatal(pgErr)
	}
	db, err := sql.Open("postgres", pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pgDrop != nil {
		pgDrop()
	}
	os.Exit(code)
}

type creditor interface {
	credit(paymentID string, fail bool) (CreditResult, error)
}

type pgStore struct{ *PostgresStore }

func (s pgStore) credit(paymentID string, fail bool) (CreditResult, error) {
	return s.CreditOnce(context.Background(), paymentID, func(*sql.Tx) error {
		if fail {
			return errors.New("ledger down")
		}
		return nil
	})
}

type redisStore struct{ *RedisStore }

func (s redisStore) credit(paymentID string, fail bool) (CreditResult, error) {
	return s.CreditOnce(context.Background(), paymentID, func() error {
		if fail {
			return errors.New("ledger down")
		}
		return nil
	})
}

func stores(t *testing.T) map[string]interface {
	Store
	creditor
} {
	pg, err := NewPostgresStore(testDB(t), PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	do, err := DialRedis(redisURL())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := NewRedisStore(do, RedisOptions{Prefix: "payhooks-go-test:" + randomHex(4) + ":"})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]interface {
		Store
		creditor
	}{"postgres": pgStore{pg}, "redis": redisStore{rs}}
}

func TestStoreDuties(t *testing.T) {
	ctx := context.Background()
	for name, store := range stores(t) {
		store := store
		t.Run(name+"/spec 6.2.1 concurrent identical claims get one claim", func(t *testing.T) {
			event := eventOf(t, paymentEvent("acct_1", "payment.succeeded"))
			var wg sync.WaitGroup
			var mu sync.Mutex
			claims := 0
			for i := 0; i < 12; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := store.Claim(ctx, event, time.Minute)
					if err != nil {
						t.Error(err)
					}
					if c != nil {
						mu.Lock()
						claims++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if claims != 1 {
				t.Fatalf("%d claims", claims)
			}
		})
		t.Run(name+"/a done id stays seen and a released one is forgotten", func(t *testing.T) {
			done := eventOf(t, paymentEvent("acct_1", "payment.succeeded"))
			c, _ := store.Claim(ctx, done, time.Minute)
			if err := store.Complete(ctx, c); err != nil {
				t.Fatal(err)
			}
			if again, _ := store.Claim(ctx, done, time.Minute); again != nil {
				t.Fatal("a done id was claimed again")
			}
			released := eventOf(t, paymentEvent("acct_1", "payment.succeeded"))
			c, _ = store.Claim(ctx, released, time.Minute)
			if err := store.Release(ctx, c); err != nil {
				t.Fatal(err)
			}
			if again, _ := store.Claim(ctx, released, time.Minute); again == nil {
				t.Fatal("a released id must be claimable")
			}
		})
		t.Run(name+"/an expired lease is taken over and the first holder is fenced", func(t *testing.T) {
			event := eventOf(t, paymentEvent("acct_1", "payment.succeeded"))
			first, _ := store.Claim(ctx, event, 50*time.Millisecond)
			if first == nil {
				t.Fatal("no first claim")
			}
			var second *Claim
			waitUntil(t, "the lease to expire", func() bool { second, _ = store.Claim(ctx, event, time.Minute); return second != nil })
			_ = store.Release(ctx, first)
			if c, _ := store.Claim(ctx, event, time.Minute); c != nil {
				t.Fatal("the first holder's release undid the second's claim")
			}
			_ = store.Release(ctx, second)
			if c, _ := store.Claim(ctx, event, time.Minute); c == nil {
				t.Fatal("the second holder's release must free the id")
			}
		})
		t.Run(name+"/spec 6.2.3 credit once under concurrency, and after a failure on the next call", func(t *testing.T) {
			paymentID := "pay_" + randomHex(6)
			var wg sync.WaitGroup
			var mu sync.Mutex
			credited := 0
			for i := 0; i < 8; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := store.credit(paymentID, false)
					if err != nil {
						t.Error(err)
					}
					if r.Credited {
						mu.Lock()
						credited++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if credited != 1 {
				t.Fatalf("credited %d times", credited)
			}
			other := "pay_" + randomHex(6)
			if _, err := store.credit(other, true); err == nil {
				t.Fatal("the work's error must be returned")
			}
			if r, _ := store.credit(other, false); !r.Credited {
				t.Fatal("after a failure the next call credits")
			}
			if r, _ := store.credit(other, false); r.Credited {
				t.Fatal("credited twice")
			}
		})
	}
}

func TestRetentionUnder30DaysIsRefused(t *testing.T) {
	if _, err := NewPostgresStore(testDB(t), PostgresOptions{Retention: time.Hour}); !errors.Is(err, ErrConfig) {
		t.Fatalf("got %v", err)
	}
	if _, err := NewRedisStore(func(context.Context, ...string) (any, error) { return nil, nil }, RedisOptions{Retention: time.Hour}); !errors.Is(err, ErrConfig) {
		t.Fatalf("got %v", err)
	}
}

func TestSpec6_2_3PostgresTheCreditMarkerAndTheLedgerRowCommitTogether(t *testing.T) {
	db := testDB(t)
	store, _ := NewPostgresStore(db, PostgresOptions{})
	ctx := context.Background()
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS ledger (payment_id text, amount numeric)"); err != nil {
		t.Fatal(err)
	}
	paymentID := "pay_" + randomHex(6)
	_, err := store.CreditOnce(ctx, paymentID, func(tx *sql.Tx) error {
		if _, err := tx.Exec("INSERT INTO ledger VALUES ($1, 1)", paymentID); err != nil {
			return err
		}
		return errors.New("after the ledger row")
	})
	if err == nil {
		t.Fatal("the error must be returned")
	}
	count := func() (n int) {
		_ = db.QueryRow("SELECT count(*) FROM ledger WHERE payment_id = $1", paymentID).Scan(&n)
		return n
	}
	if count() != 0 {
		t.Fatal("the ledger row must roll back with the marker")
	}
	if _, err := store.CreditOnce(ctx, paymentID, func(tx *sql.Tx) error {
		_, err := tx.Exec("INSERT INTO ledger VALUES ($1, 1)", paymentID)
		return err
	}); err != nil || count() != 1 {
		t.Fatalf("got %v, %d rows", err, count())
	}
}

func TestPostgresDurableWorkSurvivesARestartAndFailedWorkIsKept(t *testing.T) {
	db := testDB(t)
	store, _ := NewPostgresStore(db, PostgresOptions{})
	ctx := context.Background()
	calls := make(chan int, 10)
	var mu sync.Mutex
	var done []string
	work := func(_ context.Context, e *Event, ec EventContext) error {
		calls <- ec.Attempt
		meta, _ := e.Object()["metadata"].(map[string]any)
		if meta["account"] == "fail" {
			return errors.New("work failed")
		}
		mu.Lock()
		done = append(done, e.ID)
		mu.Unlock()
		return nil
	}
	failing, _ := NewWebhookHandler(Options{Secrets: []string{testSecret}, Store: store, OnEvent: work,
		RetryDelays: []time.Duration{10 * time.Millisecond}, PollInterval: 50 * time.Millisecond, OnError: func(error, ErrorInfo) {}})
	bad := paymentEvent("fail", "payment.succeeded")
	body, headers := delivery(t, bad, testSecret)
	if res := failing.Handle(ctx, body, headers); res.Status != 200 {
		t.Fatal(res.Status)
	}
	if a, b := <-calls, <-calls; a != 1 || b != 2 {
		t.Fatalf("attempts %d %d", a, b)
	}
	state := func(id string) (s, lastError string) {
		_ = db.QueryRow("SELECT state, coalesce(last_error, '') FROM payhooks_events WHERE event_id = $1", id).Scan(&s, &lastError)
		return
	}
	waitUntil(t, "the event to be kept as failed", func() bool { s, _ := state(bad["id"].(string)); return s == "failed" })
	if _, e := state(bad["id"].(string)); !strings.Contains(e, "work failed") {
		t.Fatalf("last_error %q", e)
	}
	// A replay of a failed event is processed again, not a duplicate.
	if res := failing.Handle(ctx, body, headers); strings.Contains(string(res.Body), "duplicate") {
		t.Fatal("a replay of failed work must be processed")
	}
	failing.Close()
	// Work left pending by a dead process is picked up by the next one.
	pending := eventOf(t, paymentEvent("acct_1", "payment.succeeded"))
	c, _ := store.Claim(ctx, pending, time.Minute)
	_ = store.RetryLater(ctx, c, 0, time.Minute, errors.New("left behind"))
	again, _ := NewWebhookHandler(Options{Secrets: []string{testSecret}, Store: store, OnEvent: work, PollInterval: 50 * time.Millisecond})
	defer again.Close()
	waitUntil(t, "the pending event to be processed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range done {
			if id == pending.ID {
				return true
			}
		}
		return false
	})
}

func TestPostgresPurgeDeletesDoneIdsPastRetention(t *testing.T) {
	db := testDB(t)
	store, _ := NewPostgresStore(db, PostgresOptions{})
	ctx := context.Background()
	event := eventOf(t, paymentEvent("acct_1", "payment.succeeded"))
	c, _ := store.Claim(ctx, event, time.Minute)
	_ = store.Complete(ctx, c)
	if _, err := db.Exec("UPDATE payhooks_events SET updated_at = now() - interval '31 days' WHERE event_id = $1", event.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := store.Purge(ctx); err != nil || n < 1 {
		t.Fatalf("purged %d, %v", n, err)
	}
	if c, _ := store.Claim(ctx, event, time.Minute); c == nil {
		t.Fatal("a purged id is forgotten")
	}
}

func TestRedisADoneIdIsKept30Days(t *testing.T) {
	do, _ := DialRedis(redisURL())
	store, _ := NewRedisStore(do, RedisOptions{Prefix: "payhooks-go-test:" + randomHex(4) + ":"})
	ctx := context.Background()
	event := eventOf(t, paymentEvent("acct_1", "payment.succeeded"))
	c, _ := store.Claim(ctx, event, time.Minute)
	_ = store.Complete(ctx, c)
	ttl, err := do(ctx, "PTTL", store.EventKey(event.ID))
	if err != nil || ttl.(int64) < 29*24*3600*1000 {
		t.Fatalf("ttl %v %v", ttl, err)
	}
}
