<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/**
 * Verification of payhooks deliveries, and signing for tests.
 *
 * A delivery is one POST of a JSON event with two headers: `Service-Event-Id: evt_…` (not signed)
 * and `Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`, where each v1 is the lowercase
 * hex HMAC-SHA256, keyed with the endpoint's whole `whsec_…` secret, of `<t>.<raw body>`.
 * An endpoint with asymmetric signing on also sends `v1a=<base64>` entries: ed25519 signatures of
 * the same bytes, verified with the endpoint's public key (`whpk_…`) by libsodium (ext-sodium,
 * bundled with PHP since 7.2).
 */
final class Webhook
{
    public const SIGNATURE_HEADER = 'Service-Signature';
    public const EVENT_ID_HEADER = 'Service-Event-Id';
    public const SECRET_PREFIX = Formats::SECRET_PREFIX;
    public const PUBLIC_KEY_PREFIX = Formats::PUBLIC_KEY_PREFIX;
    public const DEFAULT_TOLERANCE_SECONDS = 300;

    /**
     * Verifies one delivery and returns its event. Checks, in this order: both headers are there,
     * the signature header is well formed, some `v1` matches under some secret (constant-time
     * comparison of every pair), `t` is within the tolerance of now (in either direction, to the
     * millisecond), the signed body is a JSON event whose `id` equals `Service-Event-Id`.
     *
     * @param string $body the raw request body, byte for byte as received (php://input,
     *                     $request->getContent(), (string) $request->getBody()): never re-encoded JSON
     * @param array<array-key, mixed> $headers header names (any case) to a string or a list of
     *                                         strings, or $_SERVER
     * @param string|list<string> $secret the endpoint's `whsec_` secret, or several during a rotation
     *                                    (an empty list when $publicKeys are given)
     * @param \DateTimeInterface|null $now the current time (for tests); default the system clock
     * @param string|list<string> $publicKeys the endpoint's `whpk_` ed25519 public key(s), instead
     *                                        of or beside $secret: one valid signature of either kind is enough
     *
     * @throws WebhookVerificationException when the delivery must be answered 400
     * @throws \InvalidArgumentException on a programming error (no secret nor public key, a secret
     *                                   without whsec_, a public key that is not whpk_)
     */
    public static function verify(
        string $body,
        array $headers,
        string|array $secret,
        int|float $toleranceSeconds = self::DEFAULT_TOLERANCE_SECONDS,
        ?\DateTimeInterface $now = null,
        string|array $publicKeys = [],
    ): Event {
        $keys = self::publicKeys($publicKeys);
        return self::verifyAt($body, $headers, self::secrets($secret, $keys !== []), self::tolerance($toleranceSeconds), $now === null ? self::nowMs() : (int) $now->format('Uv'), $keys);
    }

    /**
     * @param list<string> $secrets already checked by secrets()
     * @param list<string> $publicKeys raw 32-byte keys from publicKeys()
     * @internal the handler's entry, with its clock in epoch milliseconds
     */
    public static function verifyAt(string $body, array $headers, array $secrets, int|float $toleranceSeconds, int $nowMs, array $publicKeys = []): Event
    {
        $signature = Headers::read($headers, self::SIGNATURE_HEADER);
        if ($signature === null) {
            throw new WebhookVerificationException(VerificationReason::MissingHeader, 'missing ' . self::SIGNATURE_HEADER . ' header');
        }
        if ($signature === false) {
            throw new WebhookVerificationException(VerificationReason::MalformedHeader, self::SIGNATURE_HEADER . ' header sent more than once');
        }
        $eventId = Headers::read($headers, self::EVENT_ID_HEADER);
        if ($eventId === null) {
            throw new WebhookVerificationException(VerificationReason::MissingHeader, 'missing ' . self::EVENT_ID_HEADER . ' header');
        }
        if ($eventId === false) {
            throw new WebhookVerificationException(VerificationReason::MalformedHeader, self::EVENT_ID_HEADER . ' header sent more than once');
        }
        $parsed = self::parseSignatureHeader($signature);
        if ($parsed === null) {
            throw new WebhookVerificationException(
                VerificationReason::MalformedHeader,
                self::SIGNATURE_HEADER . ' must be t=<unix seconds>,v1=<64 lowercase hex>[,v1=...][,v1a=<base64 of 64 bytes>...] without spaces',
            );
        }
        [$timestamp, $received, $asymmetric] = $parsed;
        $matched = false;
        foreach ($secrets as $key) {
            $expected = self::computeSignature($key, $timestamp, $body);
            foreach ($received as $candidate) {
                // No early exit: every pair is compared, so the timing does not say which matched.
                if (hash_equals($expected, $candidate)) {
                    $matched = true;
                }
            }
        }
        if ($publicKeys !== [] && $asymmetric !== []) {
            // ed25519: one valid signature of either kind is enough (as in Standard Webhooks).
            $message = $timestamp . '.' . $body;
            foreach ($publicKeys as $publicKey) {
                foreach ($asymmetric as $candidate) {
                    if (sodium_crypto_sign_verify_detached($candidate, $message, $publicKey)) {
                        $matched = true;
                    }
                }
            }
        }
        if (!$matched) {
            throw new WebhookVerificationException(VerificationReason::BadSignature, 'no signature in the header verifies the body under the configured secret(s) or public key(s)');
        }
        // In milliseconds: rounding the clock to whole seconds would stretch the window by up to a second.
        $offsetMs = $nowMs - $timestamp * 1000;
        if (abs($offsetMs) > $toleranceSeconds * 1000) {
            throw new WebhookVerificationException(
                VerificationReason::TimestampOutOfTolerance,
                sprintf('signature timestamp %d is %.3f s from now; the tolerance is %s s', $timestamp, $offsetMs / 1000, $toleranceSeconds),
            );
        }
        try {
            $event = Event::fromJson($body);
        } catch (\UnexpectedValueException) {
            throw new WebhookVerificationException(VerificationReason::InvalidJson, 'the signed body is not UTF-8 JSON of an event object with a string id and type');
        }
        if ($event->id !== $eventId) {
            throw new WebhookVerificationException(VerificationReason::EventIdMismatch, self::EVENT_ID_HEADER . ' does not match the id of the signed body');
        }
        return $event;
    }

    /**
     * Splits `t=<seconds>,v1=<hex>[,v1=<hex>…][,v1a=<base64>…]`. Unknown lowercase schemes
     * (`v2=…`) are skipped; anything else that is not exactly this shape is refused. The third
     * element holds the `v1a` signatures as raw 64-byte strings.
     *
     * @return array{0: int, 1: list<string>, 2: list<string>}|null
     */
    public static function parseSignatureHeader(string $header): ?array
    {
        $timestamp = null;
        $signatures = [];
        $asymmetric = [];
        foreach (explode(',', $header) as $part) {
            $eq = strpos($part, '=');
            if ($eq === false || $eq === 0) {
                return null;
            }
            $key = substr($part, 0, $eq);
            $value = substr($part, $eq + 1);
            if ($key === 't') {
                // \z, not $: PCRE's $ also matches before a trailing newline.
                if ($timestamp !== null || preg_match(Formats::TIMESTAMP, $value) !== 1) {
                    return null;
                }
                $timestamp = (int) $value;
            } elseif ($key === 'v1') {
                if (preg_match(Formats::V1, $value) !== 1) {
                    return null;
                }
                $signatures[] = $value;
            } elseif ($key === 'v1a') {
                // Canonical base64 of 64 bytes: the last data character carries zero padding bits.
                $raw = preg_match(Formats::V1A, $value) === 1 ? base64_decode($value, true) : false;
                if ($raw === false || strlen($raw) !== SODIUM_CRYPTO_SIGN_BYTES) {
                    return null;
                }
                $asymmetric[] = $raw;
            } elseif (preg_match(Formats::SCHEME, $key) !== 1) {
                return null;
            }
        }
        if ($timestamp === null || ($signatures === [] && $asymmetric === [])) {
            return null;
        }
        return [$timestamp, $signatures, $asymmetric];
    }

    /** The lowercase hex HMAC-SHA256 of `<t>.<body>` keyed with the whole secret. */
    public static function computeSignature(string $secret, int $timestamp, string $body): string
    {
        return hash_hmac('sha256', $timestamp . '.' . $body, $secret);
    }

    /**
     * Signs a delivery the way payhooks does, for your receiver's tests: returns the body and the
     * headers to POST.
     *
     * @param Event|array<string, mixed>|string $event an event (id, type, data), or its JSON
     * @param string|list<string> $secret one secret, or several (one v1 each, as during a rotation)
     * @return array{body: string, headers: array<string, string>}
     */
    public static function signTestDelivery(Event|array|string $event, string|array $secret, ?int $timestamp = null): array
    {
        $body = match (true) {
            $event instanceof Event => $event->toJson(),
            is_array($event) => json_encode($event, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE),
            default => $event,
        };
        $id = Event::fromJson($body)->id;
        $t = $timestamp ?? intdiv(self::nowMs(), 1000);
        $v1 = array_map(static fn (string $s): string => 'v1=' . self::computeSignature($s, $t, $body), self::secrets($secret));
        return [
            'body' => $body,
            'headers' => [
                'Content-Type' => 'application/json',
                self::EVENT_ID_HEADER => $id,
                self::SIGNATURE_HEADER => "t={$t}," . implode(',', $v1),
            ],
        ];
    }

    /**
     * Checks the secrets a merchant configured once (a programming error, not a bad delivery).
     *
     * @param string|array<array-key, mixed> $secret
     * @return list<string>
     * @internal
     */
    public static function secrets(string|array $secret, bool $havePublicKeys = false): array
    {
        $list = is_string($secret) ? [$secret] : array_values($secret);
        if ($list === [] && $havePublicKeys) {
            return [];
        }
        if ($list === []) {
            throw new \InvalidArgumentException("payhooks: a secret is required: the endpoint's whsec_ signing secret (or publicKeys, its whpk_ public keys)");
        }
        foreach ($list as $s) {
            if (!is_string($s) || !str_starts_with($s, self::SECRET_PREFIX) || strlen($s) <= strlen(self::SECRET_PREFIX)) {
                throw new \InvalidArgumentException(
                    'payhooks: the secret must be the endpoint\'s signing secret, which starts with "whsec_"; it is used whole, prefix included, as the HMAC key',
                );
            }
        }
        return $list;
    }

    /**
     * Checks the public keys a merchant configured once: each `whpk_` + base64 of 32 bytes.
     *
     * @param string|array<array-key, mixed> $publicKeys
     * @return list<string> the raw 32-byte keys
     * @internal
     */
    public static function publicKeys(string|array $publicKeys): array
    {
        $keys = [];
        foreach (is_string($publicKeys) ? [$publicKeys] : array_values($publicKeys) as $key) {
            $body = is_string($key) && str_starts_with($key, self::PUBLIC_KEY_PREFIX) ? substr($key, strlen(self::PUBLIC_KEY_PREFIX)) : '';
            $raw = preg_match(Formats::PUBLIC_KEY, $body) === 1 ? base64_decode($body, true) : false;
            if ($raw === false || strlen($raw) !== SODIUM_CRYPTO_SIGN_PUBLICKEYBYTES) {
                throw new \InvalidArgumentException('payhooks: each public key must be one of the endpoint\'s public keys: "whpk_" followed by the base64 of its 32 bytes');
            }
            $keys[] = $raw;
        }
        return $keys;
    }

    /** @internal */
    public static function tolerance(int|float $toleranceSeconds): int|float
    {
        if (!is_finite((float) $toleranceSeconds) || $toleranceSeconds < 0) {
            throw new \InvalidArgumentException('payhooks: toleranceSeconds must be a non-negative number of seconds');
        }
        return $toleranceSeconds;
    }

    /** @internal The system clock in epoch milliseconds. */
    public static function nowMs(): int
    {
        return (int) floor(microtime(true) * 1000);
    }

    private function __construct()
    {
    }
}
