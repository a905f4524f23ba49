<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/**
 * Why a delivery failed verification. Each one is answered 400 and the event is not processed.
 * The string values are the ones every payhooks receiver library reports.
 */
enum VerificationReason: string
{
    /** `Service-Signature` or `Service-Event-Id` is absent or empty. */
    case MissingHeader = 'missing_header';
    /** `Service-Signature` is not `t=<unix seconds>,v1=<64 lowercase hex>[,v1=…]` exactly, or a header was repeated. */
    case MalformedHeader = 'malformed_header';
    /** No `v1` matches HMAC-SHA256 of `<t>.<raw body>` under any configured secret. */
    case BadSignature = 'bad_signature';
    /** The signature matched but |now - t| is more than the tolerance (300 s). */
    case TimestampOutOfTolerance = 'timestamp_out_of_tolerance';
    /** `Service-Event-Id` (not covered by the signature) differs from the signed body's `id`. */
    case EventIdMismatch = 'event_id_mismatch';
    /** The signed body is not UTF-8 JSON of an object with a string `id` and `type`. */
    case InvalidJson = 'invalid_json';
}
