package payhooks

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// Spec 5.1: every library runs the shared signature vectors made by the contract package.
func TestVectors(t *testing.T) {
	for _, v := range loadVectors(t).Vectors {
		v := v
		t.Run(v.Name, func(t *testing.T) {
			body, err := base64.StdEncoding.DecodeString(v.BodyBase64)
			if err != nil {
				t.Fatal(err)
			}
			headers := http.Header{}
			for k, val := range v.Headers {
				headers.Add(k, val)
			}
			event, err := Verify(body, headers, v.Secrets, VerifyOptions{
				Tolerance:  time.Duration(v.ToleranceSeconds * float64(time.Second)),
				Now:        time.UnixMilli(v.NowMs),
				PublicKeys: v.PublicKeys,
			})
			var got map[string]any
			if err == nil {
				got = map[string]any{"ok": true, "event_id": event.ID, "event_type": event.Type}
			} else if errors.Is(err, ErrConfig) {
				got = map[string]any{"ok": false, "reason": "configuration_error"}
			} else {
				var verr *VerificationError
				if !errors.As(err, &verr) {
					t.Fatalf("not a VerificationError: %v", err)
				}
				if verr.Status() != 400 {
					t.Fatalf("status %d", verr.Status())
				}
				got = map[string]any{"ok": false, "reason": string(verr.Reason)}
			}
			if !reflect.DeepEqual(got, v.Expected) {
				t.Fatalf("%s: got %v, want %v", v.Description, got, v.Expected)
			}
		})
	}
}

func TestTheLibraryKnowsTheContractsEventTypes(t *testing.T) {
	if !reflect.DeepEqual(EventTypes, loadVectors(t).EventTypes) {
		t.Fatalf("EventTypes %v differ from the contract's %v", EventTypes, loadVectors(t).EventTypes)
	}
}

func TestARepeatedHeaderIsMalformed(t *testing.T) {
	for _, v := range loadVectors(t).Vectors {
		if v.Name != "valid" {
			continue
		}
		body, _ := base64.StdEncoding.DecodeString(v.BodyBase64)
		headers := http.Header{}
		for k, val := range v.Headers {
			headers.Add(k, val)
		}
		headers.Add(SignatureHeader, v.Headers[SignatureHeader])
		_, err := Verify(body, headers, v.Secrets, VerifyOptions{Now: time.UnixMilli(v.NowMs)})
		var verr *VerificationError
		if !errors.As(err, &verr) || verr.Reason != ReasonMalformedHeader {
			t.Fatalf("got %v", err)
		}
	}
}

func TestProgrammingErrorsWrapErrConfig(t *testing.T) {
	for _, secrets := range [][]string{nil, {"not-a-secret"}, {"whsec_"}} {
		if _, err := Verify([]byte("{}"), http.Header{}, secrets, VerifyOptions{}); !errors.Is(err, ErrConfig) {
			t.Fatalf("%v: got %v", secrets, err)
		}
	}
	if _, err := Verify([]byte("{}"), http.Header{}, []string{testSecret}, VerifyOptions{Tolerance: -time.Second}); !errors.Is(err, ErrConfig) {
		t.Fatalf("negative tolerance: got %v", err)
	}
}

func TestSignRoundTripsWithTheCurrentClock(t *testing.T) {
	event := paymentEvent("acct_1", "payment.succeeded")
	body, headers := delivery(t, event, testSecret)
	got, err := Verify(body, headers, []string{testSecret}, VerifyOptions{})
	if err != nil || got.ID != event["id"] || got.Object()["amount"] != "10.00" {
		t.Fatalf("got %v %v", got, err)
	}
}

// The reason codes are the contract's, and the two sides of timestamp_out_of_tolerance are told
// apart with errors.Is: the shared "stale" vector is too old, "future" too new.
func TestTimestampTooOldAndTooNewAreDistinct(t *testing.T) {
	var want []Reason
	for _, r := range []string{"missing_header", "malformed_header", "bad_signature", "timestamp_out_of_tolerance", "event_id_mismatch", "invalid_json"} {
		want = append(want, Reason(r))
	}
	if !reflect.DeepEqual(Reasons, want) {
		t.Fatalf("Reasons %v", Reasons)
	}
	seen := map[string]bool{}
	for _, v := range loadVectors(t).Vectors {
		if v.Name != "stale" && v.Name != "future" && v.Name != "valid" {
			continue
		}
		seen[v.Name] = true
		body, _ := base64.StdEncoding.DecodeString(v.BodyBase64)
		headers := http.Header{}
		for k, val := range v.Headers {
			headers.Add(k, val)
		}
		_, err := Verify(body, headers, v.Secrets, VerifyOptions{
			Tolerance: time.Duration(v.ToleranceSeconds * float64(time.Second)),
			Now:       time.UnixMilli(v.NowMs),
		})
		var verr *VerificationError
		switch v.Name {
		case "valid":
			if err != nil {
				t.Fatalf("valid: %v", err)
			}
		case "stale":
			if !errors.As(err, &verr) || verr.Reason != ReasonTimestampOutOfTolerance || verr.Skew != time.Hour ||
				!errors.Is(err, ErrTimestampTooOld) || errors.Is(err, ErrTimestampTooNew) {
				t.Fatalf("stale: got %#v", err)
			}
		case "future":
			if !errors.As(err, &verr) || verr.Reason != ReasonTimestampOutOfTolerance || verr.Skew >= 0 ||
				!errors.Is(err, ErrTimestampTooNew) || errors.Is(err, ErrTimestampTooOld) {
				t.Fatalf("future: got %#v", err)
			}
		}
	}
	if len(seen) != 3 {
		t.Fatalf("vectors found: %v", seen)
	}
	// Every other reason wraps nothing.
	if errors.Is(&VerificationError{Reason: ReasonBadSignature}, ErrTimestampTooOld) {
		t.Fatal("bad_signature is not a timestamp error")
	}
}

// A handler configured with public keys only verifies v1a with crypto/ed25519 and needs no secret.
func TestAHandlerWithOnlyPublicKeys(t *testing.T) {
	want := map[string]int{"v1a_valid_public_key_only": 200, "v1a_wrong_key": 400, "v1a_tampered_body": 400}
	for _, v := range loadVectors(t).Vectors {
		status, ok := want[v.Name]
		if !ok {
			continue
		}
		delete(want, v.Name)
		nowMs := v.NowMs
		h, err := NewWebhookHandler(Options{PublicKeys: v.PublicKeys, Store: NewMemoryStore(),
			OnEvent:    func(context.Context, *Event, EventContext) error { return nil },
			OnRejected: func(*VerificationError) {},
			Now:        func() time.Time { return time.UnixMilli(nowMs) }})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := base64.StdEncoding.DecodeString(v.BodyBase64)
		headers := http.Header{}
		for k, val := range v.Headers {
			headers.Add(k, val)
		}
		if got := h.Handle(context.Background(), body, headers).Status; got != status {
			t.Fatalf("%s: status %d, want %d", v.Name, got, status)
		}
		h.Close()
	}
	if len(want) != 0 {
		t.Fatalf("vectors not found: %v", want)
	}
	if _, err := NewWebhookHandler(Options{PublicKeys: []string{"whpk_AAAA"}, Store: NewMemoryStore(),
		OnEvent: func(context.Context, *Event, EventContext) error { return nil }}); !errors.Is(err, ErrConfig) {
		t.Fatalf("a malformed public key: got %v", err)
	}
}
