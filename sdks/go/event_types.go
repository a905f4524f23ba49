package payhooks

import "strings"

// EventTypes (the catalog) is in contract_gen.go, generated from packages/contract.

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
