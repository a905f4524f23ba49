package payhooks

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var testSecret = "whsec_test_" + randomHex(24)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type vectorFile struct {
	EventTypes []string `json:"event_types"`
	Vectors    []struct {
		Name             string            `json:"name"`
		Description      string            `json:"description"`
		Secrets          []string          `json:"secrets"`
		PublicKeys       []string          `json:"public_keys"`
		Headers          map[string]string `json:"headers"`
		BodyBase64       string            `json:"body_base64"`
		NowMs            int64             `json:"now_ms"`
		ToleranceSeconds float64           `json:"tolerance_seconds"`
		Expected         map[string]any    `json:"expected"`
	} `json:"vectors"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "packages", "contract", "test-vectors", "webhook-signatures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v vectorFile
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func paymentEvent(account, typ string) map[string]any {
	return map[string]any{
		"id": "evt_" + randomHex(10), "object": "event", "type": typ, "api_version": "v1",
		"environment": "test", "merchant_id": "mch_test", "created_at": "2026-01-01T00:00:00Z",
		"data": map[string]any{"object": map[string]any{
			"id": "pay_" + randomHex(8), "object": "payment", "status": "succeeded", "amount": "10.00",
			"asset_code": "USDC.ETH", "metadata": map[string]any{"account": account, "note": "café ✓"},
		}},
	}
}

func delivery(t *testing.T, event map[string]any, secret string) ([]byte, http.Header) {
	t.Helper()
	body, headers, err := SignTestDelivery(event, []string{secret}, time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	return body, headers
}

func eventOf(t *testing.T, event map[string]any) *Event {
	t.Helper()
	raw, _ := json.Marshal(event)
	e, err := parseStored(raw)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// waitUntil polls check until it is true (never a fixed sleep as the assertion).
func waitUntil(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
