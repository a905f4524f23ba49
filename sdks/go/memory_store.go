package payhooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type memoryEntry struct {
	token     string
	expiresAt time.Time
}

// MemoryStore is for tests, development and single-process receivers: lost on exit, not shared
// between processes, safe under concurrent duplicates within the process.
type MemoryStore struct {
	mu        sync.Mutex
	retention time.Duration
	now       func() time.Time
	events    map[string]*memoryEntry
	credits   map[string]string
	done      *sync.Cond
}

// NewMemoryStore makes an in-memory store (seen ids kept 30 days).
func NewMemoryStore() *MemoryStore {
	s := &MemoryStore{retention: DedupRetention, now: time.Now, events: map[string]*memoryEntry{}, credits: map[string]string{}}
	s.done = sync.NewCond(&s.mu)
	return s
}

func (s *MemoryStore) Claim(_ context.Context, event *Event, lease time.Duration) (*Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if e, ok := s.events[event.ID]; ok && e.expiresAt.After(now) {
		return nil, nil
	}
	token := newToken()
	s.events[event.ID] = &memoryEntry{token: token, expiresAt: now.Add(lease)}
	return &Claim{EventID: event.ID, Token: token, Attempt: 1}, nil
}

func (s *MemoryStore) update(claim *Claim, fn func(e *memoryEntry)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.events[claim.EventID]; ok && e.token == claim.Token {
		fn(e)
	}
}

func (s *MemoryStore) Complete(_ context.Context, claim *Claim) error {
	s.update(claim, func(e *memoryEntry) { e.token, e.expiresAt = "", s.now().Add(s.retention) })
	return nil
}

func (s *MemoryStore) RetryLater(_ context.Context, claim *Claim, delay, lease time.Duration, _ error) error {
	s.update(claim, func(e *memoryEntry) { e.expiresAt = s.now().Add(delay + lease) })
	return nil
}

func (s *MemoryStore) Release(_ context.Context, claim *Claim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.events[claim.EventID]; ok && e.token == claim.Token {
		delete(s.events, claim.EventID)
	}
	return nil
}

// Purge deletes ids past retention and expired leases.
func (s *MemoryStore) Purge(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	now := s.now()
	for id, e := range s.events {
		if !e.expiresAt.After(now) {
			delete(s.events, id)
			n++
		}
	}
	return n, nil
}

// Len is how many ids are recorded.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// CreditOnce runs work once per payment id. Concurrent callers wait for the one running; if it
// fails, the next caller credits.
func (s *MemoryStore) CreditOnce(_ context.Context, paymentID string, work func() error) (CreditResult, error) {
	if err := checkPaymentID(paymentID); err != nil {
		return CreditResult{}, err
	}
	s.mu.Lock()
	for {
		state := s.credits[paymentID]
		if state == "done" {
			s.mu.Unlock()
			return CreditResult{}, nil
		}
		if state == "running" {
			s.done.Wait()
			continue
		}
		s.credits[paymentID] = "running"
		break
	}
	s.mu.Unlock()
	err := safeCall(work)
	s.mu.Lock()
	if err != nil {
		delete(s.credits, paymentID)
	} else {
		s.credits[paymentID] = "done"
	}
	s.done.Broadcast()
	s.mu.Unlock()
	if err != nil {
		return CreditResult{}, err
	}
	return CreditResult{Credited: true}, nil
}
