package payhooks

import "strings"

// EventTypes are the event types payhooks sends. The catalog grows: a receiver acknowledges the
// types it does not handle and ignores them. (Checked against the contract's list by the tests.)
var EventTypes = []string{
	"payment.created",
	"payment.requires_action",
	"payment.under_review",
	"payment.processing",
	"payment.succeeded",
	"payment.failed",
	"payment.cancelled",
	"payment.expired",
	"checkout_session.completed",
	"checkout_session.expired",
	"webhook_endpoint.disabled",
}

// IsPaymentEvent is true for payment.* events, whose data.object is a Payment.
func IsPaymentEvent(e *Event) bool { return e != nil && strings.HasPrefix(e.Type, "payment.") }

func knownType(t string) bool {
	for _, k := range EventTypes {
		if k == t {
			return true
		}
	}
	return false
}
