package payhooks

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DedupRetention is how long seen event ids are kept, at least.
const DedupRetention = 30 * 24 * time.Hour

// Claim is the right to process one event, handed by a store's Claim to exactly one caller.
// Token fences a holder whose lease expired: its later writes are ignored.
type Claim struct {
	EventID string
	Token   string
	Attempt int
}

// CreditResult is the outcome of CreditOnce: Credited is true for the one call that ran the work.
type CreditResult struct {
	Credited bool
}

// Store is what every store does:
//
//   - Claim: the insert-or-ignore. Records the id and returns a Claim, or nil when the id was seen
//     (done, being processed under a live lease, or waiting for a retry). Concurrent identical
//     calls get at most one claim.
//   - Complete: keeps the id as done for the retention period.
//   - RetryLater: keeps the id as seen while the work waits.
//   - Release: forgets the id, so the next delivery of the event is processed.
type Store interface {
	Claim(ctx context.Context, event *Event, lease time.Duration) (*Claim, error)
	Complete(ctx context.Context, claim *Claim) error
	RetryLater(ctx context.Context, claim *Claim, delay, lease time.Duration, cause error) error
	Release(ctx context.Context, claim *Claim) error
}

// DueWork is an event handed back by a durable store, with its claim.
type DueWork struct {
	Claim *Claim
	Event *Event
}

// DurableStore also keeps the event with its id and hands due work back (retries, and work whose
// holder died), and keeps work that failed for good.
type DurableStore interface {
	Store
	ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]DueWork, error)
	MarkFailed(ctx context.Context, claim *Claim, cause error) error
}

// Purger deletes ids past their retention.
type Purger interface {
	Purge(ctx context.Context) (int64, error)
}

// ErrCreditInProgress is returned by the Redis store's CreditOnce when another caller is crediting
// the same payment and did not finish in time. Nothing was credited by this call: retry later.
var ErrCreditInProgress = errors.New("payhooks: the payment is being credited by another caller; try again later")

func checkRetention(retention time.Duration) (time.Duration, error) {
	if retention == 0 {
		return DedupRetention, nil
	}
	if retention < DedupRetention {
		return 0, fmt.Errorf("%w: seen ids must be kept at least 30 days", ErrConfig)
	}
	return retention, nil
}

func checkPaymentID(paymentID string) error {
	if paymentID == "" {
		return fmt.Errorf("%w: CreditOnce needs the payment id (data.object.id, pay_...)", ErrConfig)
	}
	return nil
}

func errorText(cause error) string {
	if cause == nil {
		return ""
	}
	s := cause.Error()
	if len(s) > 4000 {
		s = s[:4000]
	}
	return s
}
