package payhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newHandler(t *testing.T, store Store, onEvent func(context.Context, *Event, EventContext) error, mutate ...func(*Options)) *WebhookHandler {
	t.Helper()
	opts := Options{
		Secrets: []string{testSecret}, Store: store, OnEvent: onEvent,
		RetryDelays: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond},
		OnError:     func(error, ErrorInfo) {}, OnRejected: func(*VerificationError) {},
	}
	for _, m := range mutate {
		m(&opts)
	}
	h, err := NewWebhookHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func decode(t *testing.T, r Response) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Spec 6.2.2: the answer comes before the work.
func TestSpec6_2_2AcknowledgesBeforeTheWorkRuns(t *testing.T) {
	release := make(chan struct{})
	processed := make(chan string, 1)
	h := newHandler(t, NewMemoryStore(), func(_ context.Context, e *Event, _ EventContext) error {
		<-release
		processed <- e.ID
		return nil
	})
	event := paymentEvent("acct_1", "payment.succeeded")
	body, headers := delivery(t, event, testSecret)
	res := h.Handle(context.Background(), body, headers)
	if res.Status != 200 || string(res.Body) != `{"received":true}` {
		t.Fatalf("got %d %s", res.Status, res.Body)
	}
	select {
	case <-processed:
		t.Fatal("the work must not have run before the answer")
	default:
	}
	close(release)
	if got := <-processed; got != event["id"] {
		t.Fatalf("processed %s", got)
	}
}

// Spec 6.2.1: concurrent duplicates are acknowledged and processed once.
func TestSpec6_2_1ADuplicateIsAcknowledgedAndProcessedOnce(t *testing.T) {
	var count int32
	h := newHandler(t, NewMemoryStore(), func(context.Context, *Event, EventContext) error { atomic.AddInt32(&count, 1); return nil })
	body, headers := delivery(t, paymentEvent("acct_1", "payment.succeeded"), testSecret)
	var wg sync.WaitGroup
	var duplicates int32
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := h.Handle(context.Background(), body, headers)
			if res.Status != 200 {
				t.Errorf("status %d", res.Status)
			}
			if bytes.Contains(res.Body, []byte(`"duplicate":true`)) {
				atomic.AddInt32(&duplicates, 1)
			}
		}()
	}
	wg.Wait()
	h.Drain(context.Background())
	if duplicates != 19 || count != 1 {
		t.Fatalf("duplicates %d, processed %d", duplicates, count)
	}
}

// Spec 5.1: a bad signature is answered 400 with the reason and not processed.
func TestSpec5_1ABadSignatureIsRefused(t *testing.T) {
	store := NewMemoryStore()
	var rejected []string
	h := newHandler(t, store, func(context.Context, *Event, EventContext) error { t.Error("processed"); return nil }, func(o *Options) {
		o.OnRejected = func(e *VerificationError) { rejected = append(rejected, string(e.Reason)) }
	})
	body, headers := delivery(t, paymentEvent("acct_1", "payment.succeeded"), "whsec_other_"+randomHex(8))
	res := h.Handle(context.Background(), body, headers)
	if res.Status != 400 || decode(t, res)["error"] != "bad_signature" || len(rejected) != 1 || store.Len() != 0 {
		t.Fatalf("got %d %s %v", res.Status, res.Body, rejected)
	}
}

// Spec 6.1.1: types not handled are acknowledged and ignored.
func TestSpec6_1_1TypesNotHandledAreAcknowledgedAndIgnored(t *testing.T) {
	h := newHandler(t, NewMemoryStore(), func(context.Context, *Event, EventContext) error { t.Error("processed"); return nil }, func(o *Options) {
		o.Types = []string{"payment.succeeded"}
	})
	for _, typ := range []string{"payment.created", "payment.something_new"} {
		body, headers := delivery(t, paymentEvent("acct_1", typ), testSecret)
		res := h.Handle(context.Background(), body, headers)
		if res.Status != 200 || decode(t, res)["ignored"] != true {
			t.Fatalf("%s: got %d %s", typ, res.Status, res.Body)
		}
	}
	h.Drain(context.Background())
}

func TestAMisspeltTypeIsRefusedAtCreation(t *testing.T) {
	_, err := NewWebhookHandler(Options{Secrets: []string{testSecret}, Store: NewMemoryStore(), Types: []string{"payment.succeded"},
		OnEvent: func(context.Context, *Event, EventContext) error { return nil }})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "unknown event type") {
		t.Fatalf("got %v", err)
	}
}

func TestFailedWorkIsRetriedThenReleasedSoAReplayIsProcessed(t *testing.T) {
	store := NewMemoryStore()
	attempts := make(chan int, 10)
	var mu sync.Mutex
	var retries []bool
	h := newHandler(t, store, func(_ context.Context, _ *Event, ec EventContext) error {
		attempts <- ec.Attempt
		panic("boom") // a panic is a failure too
	}, func(o *Options) {
		o.OnError = func(_ error, info ErrorInfo) { mu.Lock(); retries = append(retries, info.WillRetry); mu.Unlock() }
	})
	body, headers := delivery(t, paymentEvent("acct_1", "payment.succeeded"), testSecret)
	h.Handle(context.Background(), body, headers)
	for want := 1; want <= 3; want++ {
		if got := <-attempts; got != want {
			t.Fatalf("attempt %d, want %d", got, want)
		}
	}
	waitUntil(t, "the id to be released", func() bool { mu.Lock(); defer mu.Unlock(); return len(retries) == 3 && store.Len() == 0 })
	if retries[0] != true || retries[1] != true || retries[2] != false {
		t.Fatalf("will_retry %v", retries)
	}
	res := h.Handle(context.Background(), body, headers)
	if decode(t, res)["duplicate"] == true || <-attempts != 1 {
		t.Fatal("a replay after the work was given up must be processed again")
	}
}

type brokenStore struct{ MemoryStore }

func (*brokenStore) Claim(context.Context, *Event, time.Duration) (*Claim, error) {
	return nil, errors.New("down")
}

func TestTheStoreDownAnswers500SoPayhooksRetries(t *testing.T) {
	h := newHandler(t, &brokenStore{}, func(context.Context, *Event, EventContext) error { return nil })
	body, headers := delivery(t, paymentEvent("acct_1", "payment.succeeded"), testSecret)
	res := h.Handle(context.Background(), body, headers)
	if res.Status != 500 || decode(t, res)["error"] != "store_unavailable" {
		t.Fatalf("got %d %s", res.Status, res.Body)
	}
}

func TestAfterCloseDeliveriesAreAnswered503(t *testing.T) {
	h := newHandler(t, NewMemoryStore(), func(context.Context, *Event, EventContext) error { return nil })
	h.Close()
	body, headers := delivery(t, paymentEvent("acct_1", "payment.succeeded"), testSecret)
	if res := h.Handle(context.Background(), body, headers); res.Status != 503 {
		t.Fatalf("got %d", res.Status)
	}
}

// The handler is a net/http route: POST only, raw body, 413 above the limit.
func TestNetHTTP(t *testing.T) {
	processed := make(chan string, 1)
	h := newHandler(t, NewMemoryStore(), func(_ context.Context, e *Event, _ EventContext) error { processed <- e.ID; return nil })
	server := httptest.NewServer(h)
	defer server.Close()
	event := paymentEvent("acct_1", "payment.succeeded")
	body, headers := delivery(t, event, testSecret)
	post := func(b []byte) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, server.URL, bytes.NewReader(b))
		req.Header = headers.Clone()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := post(body); res.StatusCode != 200 {
		t.Fatalf("got %d", res.StatusCode)
	}
	if got := <-processed; got != event["id"] {
		t.Fatal(got)
	}
	if res := post(append(body, ' ')); res.StatusCode != 400 {
		t.Fatalf("a changed body: got %d", res.StatusCode)
	}
	if res := post(bytes.Repeat([]byte("x"), (1<<20)+1)); res.StatusCode != 413 {
		t.Fatalf("too large: got %d", res.StatusCode)
	}
	res, _ := http.Get(server.URL)
	if res.StatusCode != 405 || res.Header.Get("Allow") != "POST" {
		t.Fatalf("GET: %d", res.StatusCode)
	}
}

// Spec 6.2.3: credit once in memory, under concurrency; a failure credits nothing.
func TestSpec6_2_3CreditOnceInMemory(t *testing.T) {
	store := NewMemoryStore()
	var count, credited int32
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := store.CreditOnce(context.Background(), "pay_1", func() error { atomic.AddInt32(&count, 1); return nil })
			if err == nil && r.Credited {
				atomic.AddInt32(&credited, 1)
			}
		}()
	}
	wg.Wait()
	if count != 1 || credited != 1 {
		t.Fatalf("ran %d, credited %d", count, credited)
	}
	if _, err := store.CreditOnce(context.Background(), "pay_2", func() error { return errors.New("no") }); err == nil {
		t.Fatal("the error must be returned")
	}
	if r, _ := store.CreditOnce(context.Background(), "pay_2", func() error { return nil }); !r.Credited {
		t.Fatal("the next call credits")
	}
}
