// Package payhooks receives payhooks webhooks correctly: verify the signature over the raw body
// (Verify), record the evt_ id once, answer 200 at once and do the work after (WebhookHandler, an
// http.Handler), and credit each payment once (a store's CreditOnce).
package payhooks

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	SignatureHeader = "Service-Signature"
	EventIDHeader   = "Service-Event-Id"
	// DefaultTolerance is |now - t| allowed, in either direction.
	DefaultTolerance = 300 * time.Second
)

// Reason says why a delivery failed verification: one of the Reason constants, the same codes
// every payhooks receiver library uses and the 400 answer's "error" field carries.
type Reason string

// Reasons a delivery is refused (answer 400, don't process).
const (
	// ReasonMissingHeader: Service-Signature or Service-Event-Id is absent or empty.
	ReasonMissingHeader Reason = "missing_header"
	// ReasonMalformedHeader: Service-Signature is not t=<unix seconds>,v1=<64 lowercase hex>[,v1=...]
	// exactly, or a header was sent more than once.
	ReasonMalformedHeader Reason = "malformed_header"
	// ReasonBadSignature: no v1 matches the HMAC of "<t>.<raw body>" under any configured secret.
	ReasonBadSignature Reason = "bad_signature"
	// ReasonTimestampOutOfTolerance: the signature matched but |now - t| is more than the
	// tolerance, in either direction. errors.Is(err, ErrTimestampTooOld) or
	// errors.Is(err, ErrTimestampTooNew) tells which, and VerificationError.Skew by how much.
	ReasonTimestampOutOfTolerance Reason = "timestamp_out_of_tolerance"
	// ReasonEventIDMismatch: Service-Event-Id (not signed) differs from the signed body's id.
	ReasonEventIDMismatch Reason = "event_id_mismatch"
	// ReasonInvalidJSON: the signed body is not UTF-8 JSON of an object with a string id and type.
	ReasonInvalidJSON Reason = "invalid_json"
)

// Reasons lists every Reason, in the order of the contract.
var Reasons = []Reason{
	ReasonMissingHeader, ReasonMalformedHeader, ReasonBadSignature,
	ReasonTimestampOutOfTolerance, ReasonEventIDMismatch, ReasonInvalidJSON,
}

// The two sides of ReasonTimestampOutOfTolerance, for errors.Is on a verification error: a
// signature older than the tolerance (a replayed capture, a delivery that sat in a queue, a
// receiver clock ahead) or dated further in the future than the tolerance (a receiver clock behind).
// Both are answered 400 with the same reason code.
var (
	ErrTimestampTooOld = errors.New("payhooks: signature timestamp too old")
	ErrTimestampTooNew = errors.New("payhooks: signature timestamp too far in the future")
)

// VerificationError is a delivery that must be answered with HTTP 400 and not processed.
// Get it with errors.As; Reason says why (see the Reason constants).
type VerificationError struct {
	Reason  Reason
	Message string
	// Skew is now - t for ReasonTimestampOutOfTolerance: positive when the signature is too old,
	// negative when it is too far in the future; zero for every other reason.
	Skew time.Duration
}

func (e *VerificationError) Error() string { return string(e.Reason) + ": " + e.Message }

// Status is the HTTP status to answer with.
func (e *VerificationError) Status() int { return http.StatusBadRequest }

// Unwrap makes errors.Is(err, ErrTimestampTooOld) and errors.Is(err, ErrTimestampTooNew) tell the
// two sides of ReasonTimestampOutOfTolerance apart; it is nil for every other reason.
func (e *VerificationError) Unwrap() error {
	if e.Reason != ReasonTimestampOutOfTolerance {
		return nil
	}
	if e.Skew < 0 {
		return ErrTimestampTooNew
	}
	return ErrTimestampTooOld
}

// ErrConfig wraps programming errors (no secret nor public key, a secret without whsec_, a public
// key that is not whpk_ + base64 of 32 bytes).
var ErrConfig = errors.New("payhooks")

// Event is a verified event. Raw is the whole event as decoded JSON (numbers as json.Number).
type Event struct {
	ID   string
	Type string
	Raw  map[string]any
}

// Object is data.object: the Payment or checkout session the event is about (nil if absent).
func (e *Event) Object() map[string]any {
	data, _ := e.Raw["data"].(map[string]any)
	obj, _ := data["object"].(map[string]any)
	return obj
}

// VerifyOptions are Verify's optional settings: Tolerance (default 300 s), Now (tests) and
// PublicKeys.
type VerifyOptions struct {
	Tolerance time.Duration
	Now       time.Time
	// PublicKeys: the endpoint's ed25519 public keys (whpk_..., several during a key rotation),
	// to verify the v1a signatures with. With public keys the secrets may be empty; with both, one
	// valid signature of either kind is enough.
	PublicKeys []string
}

// The prefixes and the formats verification checks (timestampRe, v1Re, v1aRe, schemeRe,
// publicKeyRe) are generated from the contract: contract_gen.go.

func checkPublicKeys(publicKeys []string) ([]ed25519.PublicKey, error) {
	keys := make([]ed25519.PublicKey, 0, len(publicKeys))
	for _, k := range publicKeys {
		body := strings.TrimPrefix(k, PublicKeyPrefix)
		if !strings.HasPrefix(k, PublicKeyPrefix) || !publicKeyRe.MatchString(body) {
			return nil, fmt.Errorf("%w: a public key must be one of the endpoint's public keys: \"whpk_\" followed by the base64 of its 32 bytes", ErrConfig)
		}
		raw, err := base64.StdEncoding.DecodeString(body)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: a public key must be the base64 of 32 bytes", ErrConfig)
		}
		keys = append(keys, ed25519.PublicKey(raw))
	}
	return keys, nil
}

// checkCredentials: secrets may be empty when public keys are given.
func checkCredentials(secrets, publicKeys []string) ([][]byte, []ed25519.PublicKey, error) {
	pks, err := checkPublicKeys(publicKeys)
	if err != nil {
		return nil, nil, err
	}
	if len(secrets) == 0 && len(pks) > 0 {
		return nil, pks, nil
	}
	keys, err := checkSecrets(secrets)
	return keys, pks, err
}

func checkSecrets(secrets []string) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: a secret is required: the endpoint's whsec_ signing secret (or PublicKeys, its whpk_ public keys)", ErrConfig)
	}
	keys := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		if !strings.HasPrefix(s, SecretPrefix) || len(s) <= len(SecretPrefix) {
			return nil, fmt.Errorf("%w: secret must be the endpoint's signing secret, which starts with \"whsec_\"; it is used whole, prefix included, as the HMAC key", ErrConfig)
		}
		keys = append(keys, []byte(s))
	}
	return keys, nil
}

func readHeader(h http.Header, name string) (string, error) {
	values := h.Values(name)
	if len(values) > 1 {
		return "", &VerificationError{Reason: ReasonMalformedHeader, Message: name + " header sent more than once"}
	}
	if len(values) == 0 || values[0] == "" {
		return "", &VerificationError{Reason: ReasonMissingHeader, Message: "missing " + name + " header"}
	}
	return values[0], nil
}

func malformed() error {
	return &VerificationError{Reason: ReasonMalformedHeader, Message: SignatureHeader + " must be t=<unix seconds>,v1=<64 lowercase hex>[,v1=...][,v1a=<base64 of 64 bytes>...] without spaces"}
}

// parseHeader is the strict parse of t=<int>,v1=<hex>[,v1=<hex>...][,v1a=<base64>...]; unknown
// schemes are skipped.
func parseHeader(header string) (int64, []string, [][]byte, error) {
	var timestamp int64 = -1
	var signatures []string
	var asymmetric [][]byte
	for _, part := range strings.Split(header, ",") {
		key, value, ok := strings.Cut(part, "=")
		if !ok || key == "" {
			return 0, nil, nil, malformed()
		}
		switch key {
		case "t":
			if timestamp >= 0 || !timestampRe.MatchString(value) {
				return 0, nil, nil, malformed()
			}
			t, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return 0, nil, nil, malformed()
			}
			timestamp = t
		case "v1":
			if !v1Re.MatchString(value) {
				return 0, nil, nil, malformed()
			}
			signatures = append(signatures, value)
		case "v1a":
			if !v1aRe.MatchString(value) {
				return 0, nil, nil, malformed()
			}
			raw, err := base64.StdEncoding.DecodeString(value)
			if err != nil || len(raw) != ed25519.SignatureSize {
				return 0, nil, nil, malformed()
			}
			asymmetric = append(asymmetric, raw)
		default:
			if !schemeRe.MatchString(key) {
				return 0, nil, nil, malformed()
			}
		}
	}
	if timestamp < 0 || len(signatures)+len(asymmetric) == 0 {
		return 0, nil, nil, malformed()
	}
	return timestamp, signatures, asymmetric, nil
}

func hmacHex(key []byte, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Verify checks a delivery and returns the event. It returns a *VerificationError (answer 400,
// don't process) or an error wrapping ErrConfig for a programming error.
//
// body is the raw request body exactly as received (io.ReadAll(r.Body)), never re-encoded JSON;
// secrets holds the endpoint's whsec_ secret, or several during a rotation (empty when
// opts.PublicKeys holds the endpoint's ed25519 public keys).
func Verify(body []byte, headers http.Header, secrets []string, opts VerifyOptions) (*Event, error) {
	keys, publicKeys, err := checkCredentials(secrets, opts.PublicKeys)
	if err != nil {
		return nil, err
	}
	tolerance := opts.Tolerance
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	if tolerance < 0 {
		return nil, fmt.Errorf("%w: tolerance must not be negative", ErrConfig)
	}
	signature, err := readHeader(headers, SignatureHeader)
	if err != nil {
		return nil, err
	}
	eventID, err := readHeader(headers, EventIDHeader)
	if err != nil {
		return nil, err
	}
	timestamp, received, asymmetric, err := parseHeader(signature)
	if err != nil {
		return nil, err
	}
	// Compare every v1 with every secret's HMAC without stopping at the first match, so the time
	// taken does not say which one matched.
	matched := false
	for _, key := range keys {
		expected := []byte(hmacHex(key, timestamp, body))
		for _, candidate := range received {
			if hmac.Equal(expected, []byte(candidate)) {
				matched = true
			}
		}
	}
	if len(publicKeys) > 0 && len(asymmetric) > 0 {
		// ed25519: one valid signature of either kind is enough (as in Standard Webhooks).
		message := append([]byte(strconv.FormatInt(timestamp, 10)+"."), body...)
		for _, key := range publicKeys {
			for _, candidate := range asymmetric {
				if ed25519.Verify(key, message, candidate) {
					matched = true
				}
			}
		}
	}
	if !matched {
		return nil, &VerificationError{Reason: ReasonBadSignature, Message: "no signature in the header verifies the raw body under the configured secret(s) or public key(s)"}
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	offsetMs := float64(now.UnixMilli()) - float64(timestamp)*1000
	if math.Abs(offsetMs) > float64(tolerance.Milliseconds()) {
		skew := time.Duration(offsetMs) * time.Millisecond
		message := fmt.Sprintf("signature timestamp %d is %.3f s old; the tolerance is %v", timestamp, offsetMs/1000, tolerance)
		if offsetMs < 0 {
			message = fmt.Sprintf("signature timestamp %d is %.3f s in the future; the tolerance is %v (is this clock behind?)", timestamp, -offsetMs/1000, tolerance)
		}
		return nil, &VerificationError{Reason: ReasonTimestampOutOfTolerance, Message: message, Skew: skew}
	}
	return parseEvent(body, eventID)
}

// After the signature matched: parse the (now trusted) bytes and bind the unsigned
// Service-Event-Id header to the signed body's id.
func parseEvent(body []byte, eventID string) (*Event, error) {
	if !utf8.Valid(body) {
		return nil, &VerificationError{Reason: ReasonInvalidJSON, Message: "the signed body is not UTF-8 JSON"}
	}
	decoder := json.NewDecoder(bytes.NewReader(body))
	decoder.UseNumber()
	var raw any
	if err := decoder.Decode(&raw); err != nil || decoder.More() {
		return nil, &VerificationError{Reason: ReasonInvalidJSON, Message: "the signed body is not UTF-8 JSON"}
	}
	object, ok := raw.(map[string]any)
	id, idOK := object["id"].(string)
	typ, typeOK := object["type"].(string)
	if !ok || !idOK || !typeOK {
		return nil, &VerificationError{Reason: ReasonInvalidJSON, Message: "the signed body is not an event object with a string id and type"}
	}
	if id != eventID {
		return nil, &VerificationError{Reason: ReasonEventIDMismatch, Message: EventIDHeader + " does not match the id of the signed body"}
	}
	return &Event{ID: id, Type: typ, Raw: object}, nil
}

// Sign returns the Service-Signature header for body signed with each secret at timestamp (Unix
// seconds): for tests of your receiver.
func Sign(body []byte, secrets []string, timestamp int64) (string, error) {
	keys, err := checkSecrets(secrets)
	if err != nil {
		return "", err
	}
	parts := []string{"t=" + strconv.FormatInt(timestamp, 10)}
	for _, key := range keys {
		parts = append(parts, "v1="+hmacHex(key, timestamp, body))
	}
	return strings.Join(parts, ","), nil
}

// SignTestDelivery encodes event and returns the body and headers of a signed test delivery.
func SignTestDelivery(event map[string]any, secrets []string, timestamp int64) ([]byte, http.Header, error) {
	body, err := json.Marshal(event)
	if err != nil {
		return nil, nil, err
	}
	signature, err := Sign(body, secrets, timestamp)
	if err != nil {
		return nil, nil, err
	}
	id, _ := event["id"].(string)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(EventIDHeader, id)
	h.Set(SignatureHeader, signature)
	return body, h, nil
}
