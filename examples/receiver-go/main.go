// The smallest real payhooks receiver in Go: net/http, the payhooks library with its PostgreSQL
// store, CreditOnce into a ledger table. Run it with ./start (PORT, DATABASE_URL,
// PAYHOOKS_WEBHOOK_SECRET).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lib/pq"
	payhooks "github.com/payhooks/payhooks/sdks/go"
)

const defaultURL = "postgres://postgres@127.0.0.1:5432/receiver_go?sslmode=disable"

const ledgerSQL = `
CREATE TABLE IF NOT EXISTS ledger_entries (
  id          bigserial PRIMARY KEY,
  account     text NOT NULL,
  amount      numeric(20, 2) NOT NULL,
  asset_code  text NOT NULL,
  payment_id  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS ledger_entries_account_idx ON ledger_entries (account);`

// withSSLMode adds sslmode=disable when the URL does not say (lib/pq defaults to require).
func withSSLMode(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Query().Get("sslmode") != "" {
		return raw
	}
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return u.String()
}

// createIfMissing creates the receiver's database on first start, as createdb would.
func createIfMissing(raw string) error {
	db, err := sql.Open("postgres", raw)
	if err != nil {
		return err
	}
	defer db.Close()
	err = db.Ping()
	var pqErr *pq.Error
	if err == nil || !errors.As(err, &pqErr) || pqErr.Code != "3D000" {
		return err
	}
	u, _ := url.Parse(raw)
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	admin, err := sql.Open("postgres", u.String())
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + pq.QuoteIdentifier(name)); err != nil {
		if errors.As(err, &pqErr) && pqErr.Code == "42P04" {
			return nil // another process created it first
		}
		return err
	}
	fmt.Printf("created database %s\n", name)
	return nil
}

func main() {
	var secrets []string
	for _, s := range strings.Split(os.Getenv("PAYHOOKS_WEBHOOK_SECRET"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) == 0 {
		log.Fatal("Set PAYHOOKS_WEBHOOK_SECRET to the endpoint's whsec_ signing secret (comma-separated during a rotation).")
	}
	databaseURL := os.Getenv("DATABASE_URL")
	if databaseURL == "" {
		databaseURL = defaultURL
	}
	databaseURL = withSSLMode(databaseURL)
	if err := createIfMissing(databaseURL); err != nil {
		log.Fatalf("The receiver could not open its database: %v. Check that PostgreSQL runs and DATABASE_URL (default %s) is right.", err, defaultURL)
	}
	db, err := sql.Open("postgres", databaseURL)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(ledgerSQL); err != nil {
		log.Fatalf("The receiver could not create its ledger table: %v", err)
	}
	store, err := payhooks.NewPostgresStore(db, payhooks.PostgresOptions{}) // payhooks_events and payhooks_credits, created on first use
	if err != nil {
		log.Fatal(err)
	}

	// creditPayment credits a succeeded payment exactly once, whoever asks: the webhook, a
	// replay, a status poll.
	creditPayment := func(ctx context.Context, payment map[string]any) error {
		metadata, _ := payment["metadata"].(map[string]any)
		id, _ := payment["id"].(string)
		// `payhooks check-receiver` sends made-up payments (metadata.payhooks_check): nothing to credit.
		if metadata["payhooks_check"] == true {
			log.Printf("[receiver] %s is a payhooks check-receiver test payment; nothing to credit", id)
			return nil
		}
		account, ok := metadata["account"].(string)
		if !ok {
			// Retried, then kept as a failed row in payhooks_events for a human to look at.
			return fmt.Errorf("payment %s has no metadata.account", id)
		}
		_, err := store.CreditOnce(ctx, id, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO ledger_entries (account, amount, asset_code, payment_id) VALUES ($1, $2, $3, $4)",
				account, payment["amount"], payment["asset_code"], id)
			return err
		})
		return err
	}

	webhooks, err := payhooks.NewWebhookHandler(payhooks.Options{
		Secrets: secrets,
		Store:   store,
		Types:   []string{"payment.succeeded"}, // every other type: 200 and ignored (the catalog grows)
		OnEvent: func(ctx context.Context, event *payhooks.Event, _ payhooks.EventContext) error {
			if payhooks.IsPaymentEvent(event) && event.Object()["status"] == "succeeded" {
				return creditPayment(ctx, event.Object())
			}
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	// The signature covers the raw bytes: the handler reads the body itself.
	mux.Handle("/webhooks/payhooks", webhooks)
	// Where the checkout sends the customer back. It never credits: the redirect may be forged,
	// may come before the webhook, or never come.
	mux.HandleFunc("/checkout/return", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "Thanks! Your payment is being confirmed.")
	})
	mux.HandleFunc("/accounts/", func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/accounts/"), "/")
		if r.Method != http.MethodGet || len(parts) != 2 || parts[1] != "balance" || parts[0] == "" {
			http.NotFound(w, r)
			return
		}
		account := parts[0]
		rows, err := db.QueryContext(r.Context(), `SELECT asset_code, sum(amount)::text FROM ledger_entries
			WHERE account = $1 GROUP BY asset_code ORDER BY asset_code`, account)
		if err != nil {
			http.Error(w, `{"error":"database_unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		defer rows.Close()
		balances := []map[string]string{}
		for rows.Next() {
			var asset, balance string
			if err := rows.Scan(&asset, &balance); err == nil {
				balances = append(balances, map[string]string{"asset_code": asset, "balance": balance})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"account": account, "balances": balances})
	})

	port := os.Getenv("PORT")
	if port == "" {
		port = "4242"
	}
	host := os.Getenv("HOST")
	if host == "" {
		host = "0.0.0.0"
	}
	server := &http.Server{Addr: host + ":" + port, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	}()
	fmt.Printf("receiver listening on http://localhost:%s/webhooks/payhooks\n", port)
	if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	webhooks.Close() // running work finishes; queued retries stay in PostgreSQL
	db.Close()
}
