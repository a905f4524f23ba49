package payhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"time"
)

// EventContext is what OnEvent receives besides the event: Attempt (1 for the first attempt at
// this event's work) and MaxAttempts.
type EventContext struct {
	Attempt     int
	MaxAttempts int
}

// ErrorInfo says where an error happened: Phase is "process", "store", "receive" or "poll".
type ErrorInfo struct {
	Phase     string
	Event     *Event
	Attempt   int
	WillRetry bool
}

// Options configure a WebhookHandler. Secrets (or PublicKeys), Store and OnEvent are required.
type Options struct {
	// Secrets: the endpoint's whsec_ secret, or several during a rotation.
	Secrets []string
	// PublicKeys: the endpoint's ed25519 public keys (whpk_...), to verify v1a signatures without
	// holding a secret. With Secrets too, one valid signature of either kind is enough.
	PublicKeys []string
	// Store: NewMemoryStore, NewPostgresStore or NewRedisStore.
	Store Store
	// OnEvent does the work for one event; return an error (or panic) to have it retried.
	OnEvent func(ctx context.Context, event *Event, ec EventContext) error
	// Types you handle; others are answered 200 and ignored. A type outside the catalog is refused
	// by NewWebhookHandler (a typo would acknowledge and drop every payment).
	Types []string
	// OnError is called for failed work and store errors (default: one log line).
	OnError func(err error, info ErrorInfo)
	// OnRejected is called with each delivery answered 400 (default: one log line).
	OnRejected func(err *VerificationError)
	// Tolerance of the signature's timestamp (default 300 s).
	Tolerance time.Duration
	// RetryDelays between attempts of the work (default 1 s, 10 s, 1 min, 10 min, 1 h: 6 attempts).
	RetryDelays []time.Duration
	// Concurrency: goroutines doing work (default 4).
	Concurrency int
	// Lease: how long one attempt may hold an event before another process takes it over (5 min).
	Lease time.Duration
	// PollInterval: durable stores are polled for due work this often (5 s).
	PollInterval time.Duration
	// PurgeInterval: seen ids past retention are deleted this often (1 h).
	PurgeInterval time.Duration
	// MaxBodyBytes: larger bodies are answered 413 (1 MiB).
	MaxBodyBytes int64
	// Now is the clock (tests).
	Now func() time.Time
}

// DefaultRetryDelays are the delays between attempts of the work.
var DefaultRetryDelays = []time.Duration{time.Second, 10 * time.Second, time.Minute, 10 * time.Minute, time.Hour}

type job struct {
	event *Event
	claim *Claim
}

// WebhookHandler is the receive pipeline: verify -> acknowledge and ignore the types you don't
// handle -> insert-or-ignore the evt_ id -> answer 200 at once -> run the work on a goroutine of
// its pool, retried when it fails. It is an http.Handler for net/http (and anything built on it).
//
// The work is at-least-once: a retry after a failure, or a takeover after a crash, runs it again.
// Make its effects idempotent and credit with the store's CreditOnce.
type WebhookHandler struct {
	opts        Options
	types       map[string]bool
	durable     DurableStore
	maxAttempts int
	jobs        chan job
	mu          sync.Mutex
	outstanding int
	idle        *sync.Cond
	timers      map[*time.Timer]*job
	closed      bool
	jobsClosed  bool
	stop        chan struct{}
	workers     sync.WaitGroup
}

// NewWebhookHandler checks the options and starts the work goroutines and timers.
func NewWebhookHandler(opts Options) (*WebhookHandler, error) {
	if _, _, err := checkCredentials(opts.Secrets, opts.PublicKeys); err != nil {
		return nil, err
	}
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: Store is required: NewMemoryStore, NewPostgresStore or NewRedisStore", ErrConfig)
	}
	if opts.OnEvent == nil {
		return nil, fmt.Errorf("%w: OnEvent is required: the work for one event", ErrConfig)
	}
	h := &WebhookHandler{opts: opts, timers: map[*time.Timer]*job{}, stop: make(chan struct{})}
	if opts.Types != nil {
		h.types = map[string]bool{}
		for _, t := range opts.Types {
			if !knownType(t) {
				return nil, fmt.Errorf("%w: unknown event type %q in Types; known types: %v", ErrConfig, t, EventTypes)
			}
			h.types[t] = true
		}
	}
	if h.opts.RetryDelays == nil {
		h.opts.RetryDelays = DefaultRetryDelays
	}
	for _, d := range h.opts.RetryDelays {
		if d < 0 {
			return nil, fmt.Errorf("%w: RetryDelays must not be negative", ErrConfig)
		}
	}
	h.maxAttempts = len(h.opts.RetryDelays) + 1
	if h.opts.Concurrency < 0 {
		return nil, fmt.Errorf("%w: Concurrency must be positive", ErrConfig)
	}
	defaults := []struct {
		v *time.Duration
		d time.Duration
	}{{&h.opts.Tolerance, DefaultTolerance}, {&h.opts.Lease, 5 * time.Minute}, {&h.opts.PollInterval, 5 * time.Second}, {&h.opts.PurgeInterval, time.Hour}}
	for _, x := range defaults {
		if *x.v == 0 {
			*x.v = x.d
		}
	}
	if h.opts.Concurrency == 0 {
		h.opts.Concurrency = 4
	}
	if h.opts.MaxBodyBytes == 0 {
		h.opts.MaxBodyBytes = 1 << 20
	}
	if h.opts.Now == nil {
		h.opts.Now = time.Now
	}
	if h.opts.OnError == nil {
		h.opts.OnError = defaultOnError
	}
	if h.opts.OnRejected == nil {
		h.opts.OnRejected = defaultOnRejected
	}
	h.durable, _ = opts.Store.(DurableStore)
	h.idle = sync.NewCond(&h.mu)
	h.jobs = make(chan job, 1024)
	for i := 0; i < h.opts.Concurrency; i++ {
		h.workers.Add(1)
		go h.workLoop()
	}
	if h.durable != nil {
		go h.every(0, h.opts.PollInterval, func() { h.Poll(context.Background()) })
	}
	if purger, ok := opts.Store.(Purger); ok {
		go h.every(h.opts.PurgeInterval, h.opts.PurgeInterval, func() {
			if _, err := purger.Purge(context.Background()); err != nil {
				h.report(err, ErrorInfo{Phase: "store", WillRetry: true})
			}
		})
	}
	return h, nil
}

func defaultOnError(err error, info ErrorInfo) {
	where := ""
	if info.Event != nil {
		where = fmt.Sprintf(" for %s (%s), attempt %d", info.Event.ID, info.Event.Type, info.Attempt)
	}
	retry := ""
	if info.WillRetry {
		retry = ", will retry"
	}
	log.Printf("[payhooks] %s error%s%s: %v", info.Phase, where, retry, err)
}

func defaultOnRejected(err *VerificationError) {
	hint := ""
	if err.Reason == ReasonBadSignature {
		hint = " If every delivery is rejected, check that the secret is this endpoint's whsec_ signing secret."
	}
	log.Printf("[payhooks] rejected a delivery with 400: %s: %s.%s", err.Reason, err.Message, hint)
}

// Response is the answer to send for one delivery.
type Response struct {
	Status int
	Body   []byte
}

func answer(status int, body map[string]any) Response {
	b, _ := json.Marshal(body)
	return Response{Status: status, Body: b}
}

// Handle handles one delivery (the raw body and the request headers) and returns the answer.
func (h *WebhookHandler) Handle(ctx context.Context, body []byte, headers http.Header) Response {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return answer(http.StatusServiceUnavailable, map[string]any{"error": "receiver_closed"})
	}
	event, err := Verify(body, headers, h.opts.Secrets, VerifyOptions{Tolerance: h.opts.Tolerance, Now: h.opts.Now(), PublicKeys: h.opts.PublicKeys})
	if err != nil {
		var verr *VerificationError
		if errors.As(err, &verr) {
			// A failed verification is answered 400 and the event is not processed.
			safeHook(func() { h.opts.OnRejected(verr) })
			return answer(http.StatusBadRequest, map[string]any{"error": verr.Reason, "message": verr.Message})
		}
		h.report(err, ErrorInfo{Phase: "receive", WillRetry: true})
		return answer(http.StatusInternalServerError, map[string]any{"error": "internal_error"})
	}
	// Acknowledge and ignore the types this receiver does not handle (the catalog grows).
	if h.types != nil && !h.types[event.Type] {
		return answer(http.StatusOK, map[string]any{"received": true, "ignored": true})
	}
	claim, err := h.opts.Store.Claim(ctx, event, h.opts.Lease)
	if err != nil {
		// Not recorded, not acknowledged: payhooks retries the delivery.
		h.report(err, ErrorInfo{Phase: "store", Event: event, WillRetry: true})
		return answer(http.StatusInternalServerError, map[string]any{"error": "store_unavailable"})
	}
	if claim == nil {
		return answer(http.StatusOK, map[string]any{"received": true, "duplicate": true})
	}
	// Acknowledge now; the work runs on the pool.
	h.enqueue(job{event, claim})
	return answer(http.StatusOK, map[string]any{"received": true})
}

// ServeHTTP makes the handler a net/http route: POST only, the raw body, at most MaxBodyBytes.
func (h *WebhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write([]byte(`{"error":"method_not_allowed"}`))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, h.opts.MaxBodyBytes+1))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"unreadable_body"}`))
		return
	}
	if int64(len(body)) > h.opts.MaxBodyBytes {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		_, _ = w.Write([]byte(`{"error":"body_too_large"}`))
		return
	}
	res := h.Handle(r.Context(), body, r.Header)
	w.WriteHeader(res.Status)
	_, _ = w.Write(res.Body)
}

// Drain blocks until no work is queued or running (scheduled retries excluded), or ctx ends.
func (h *WebhookHandler) Drain(ctx context.Context) bool {
	done := make(chan struct{})
	go func() {
		h.mu.Lock()
		for h.outstanding > 0 {
			h.idle.Wait()
		}
		h.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// Poll claims due retries and abandoned work of a durable store now and queues it.
func (h *WebhookHandler) Poll(ctx context.Context) int {
	h.mu.Lock()
	room := h.opts.Concurrency*2 - h.outstanding
	closed := h.closed
	h.mu.Unlock()
	if h.durable == nil || closed {
		return 0
	}
	due, err := h.durable.ClaimDue(ctx, room, h.opts.Lease)
	if err != nil {
		h.report(err, ErrorInfo{Phase: "poll", WillRetry: true})
		return 0
	}
	for _, d := range due {
		h.enqueue(job{d.Event, d.Claim})
	}
	return len(due)
}

// Close stops the timers and waits for running work. Deliveries after this are answered 503.
// With a non-durable store, events waiting for an in-process retry are released, so a
// redelivery of them is processed; with a durable one they stay in the table.
func (h *WebhookHandler) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.stop)
	var waiting []*Claim
	for t, j := range h.timers {
		if t.Stop() && j != nil {
			waiting = append(waiting, j.claim)
		}
	}
	h.timers = map[*time.Timer]*job{}
	h.mu.Unlock()
	for _, c := range waiting {
		_ = h.opts.Store.Release(context.Background(), c)
	}
	h.Drain(context.Background())
	h.mu.Lock()
	h.jobsClosed = true
	h.mu.Unlock()
	close(h.jobs)
	h.workers.Wait()
}

func (h *WebhookHandler) report(err error, info ErrorInfo) {
	safeHook(func() { h.opts.OnError(err, info) })
}

func (h *WebhookHandler) enqueue(j job) {
	h.mu.Lock()
	if h.jobsClosed {
		h.mu.Unlock()
		// Closed meanwhile: a durable store's lease hands it to the next process; others forget it.
		if h.durable == nil {
			_ = h.opts.Store.Release(context.Background(), j.claim)
		}
		return
	}
	h.outstanding++
	h.mu.Unlock()
	h.jobs <- j
}

func (h *WebhookHandler) every(first, interval time.Duration, fn func()) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			fn()
			t.Reset(interval)
		}
	}
}

func (h *WebhookHandler) workLoop() {
	defer h.workers.Done()
	for j := range h.jobs {
		h.attempt(j)
		h.mu.Lock()
		h.outstanding--
		if h.outstanding == 0 {
			h.idle.Broadcast()
		}
		h.mu.Unlock()
	}
}

// One attempt at the work for one event.
func (h *WebhookHandler) attempt(j job) {
	ctx := context.Background()
	err := safeCall(func() error {
		return h.opts.OnEvent(ctx, j.event, EventContext{Attempt: j.claim.Attempt, MaxAttempts: h.maxAttempts})
	})
	if err != nil {
		h.afterFailure(ctx, j, err)
		return
	}
	if err := h.opts.Store.Complete(ctx, j.claim); err != nil {
		// Done but not marked: after the lease it may run again (it must be idempotent).
		h.report(err, ErrorInfo{Phase: "store", Event: j.event, Attempt: j.claim.Attempt, WillRetry: h.durable != nil})
	}
}

func (h *WebhookHandler) afterFailure(ctx context.Context, j job, cause error) {
	willRetry := j.claim.Attempt < h.maxAttempts
	h.report(cause, ErrorInfo{Phase: "process", Event: j.event, Attempt: j.claim.Attempt, WillRetry: willRetry})
	var err error
	switch {
	case willRetry:
		delay := h.opts.RetryDelays[j.claim.Attempt-1]
		if err = h.opts.Store.RetryLater(ctx, j.claim, delay, h.opts.Lease, cause); err != nil {
			break
		}
		if h.durable != nil {
			// The retry lives in the store; any instance's poller picks it up when due.
			h.schedule(delay+10*time.Millisecond, nil)
		} else {
			next := job{j.event, &Claim{EventID: j.claim.EventID, Token: j.claim.Token, Attempt: j.claim.Attempt + 1}}
			if !h.schedule(delay, &next) {
				err = h.opts.Store.Release(ctx, j.claim)
			}
		}
	case h.durable != nil:
		err = h.durable.MarkFailed(ctx, j.claim, cause)
	default:
		// Given up: forget the id, so the next delivery of this event (a replay) is processed.
		err = h.opts.Store.Release(ctx, j.claim)
	}
	if err != nil {
		h.report(err, ErrorInfo{Phase: "store", Event: j.event, Attempt: j.claim.Attempt, WillRetry: h.durable != nil})
	}
}

// schedule runs a retry (j) or a poll (j == nil) after delay; false once closed.
func (h *WebhookHandler) schedule(delay time.Duration, j *job) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		h.mu.Lock()
		_, live := h.timers[t]
		delete(h.timers, t)
		h.mu.Unlock()
		if !live {
			return
		}
		if j == nil {
			h.Poll(context.Background())
		} else {
			h.enqueue(*j)
		}
	})
	h.timers[t] = j
	return true
}

// safeCall runs fn, turning a panic into an error.
func safeCall(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}

func safeHook(fn func()) {
	defer func() { _ = recover() }()
	fn()
}
