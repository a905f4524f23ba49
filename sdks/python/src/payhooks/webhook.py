"""Verifying a delivery.

The Service-Signature header is ``t=<unix seconds>,v1=<hex>[,v1=<hex>...]``, where v1 is
HMAC-SHA256, keyed with the endpoint's whole ``whsec_`` secret (prefix included), of
``"<t>." + raw body``. Verification compares every v1 with every configured secret in constant
time, then requires |now - t| <= tolerance (compared in milliseconds), then parses the body.

An endpoint with asymmetric signing on also sends ``v1a=<base64>`` entries: ed25519 signatures of
the same bytes, verified with the endpoint's public key (``whpk_`` + base64 of its 32 bytes) and
the ``cryptography`` package (the optional ``ed25519`` extra; Debian's python3-cryptography).
One valid signature of either kind is enough.
"""

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from decimal import Decimal
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._generated import (
    PUBLIC_KEY_FORMAT,
    PUBLIC_KEY_PREFIX,
    SCHEME_FORMAT,
    SECRET_PREFIX,
    TIMESTAMP_FORMAT,
    V1_FORMAT,
    V1A_FORMAT,
)
from .errors import ConfigurationError, WebhookVerificationError

SIGNATURE_HEADER = "Service-Signature"
EVENT_ID_HEADER = "Service-Event-Id"
#: |now - t| allowed, in seconds, in either direction.
DEFAULT_TOLERANCE = 300

#: One whsec_ secret, or several during a rotation.
Secret = Union[str, Sequence[str]]
#: One whpk_ ed25519 public key, or several during a key rotation.
PublicKeys = Union[str, Sequence[str]]
#: A verified event: the parsed JSON body.
Event = Dict[str, Any]


def _whole(fmt: str) -> "re.Pattern[str]":
    """A format from the contract (_generated.py), matching a whole value only."""
    return re.compile(r"\A(?:" + fmt + r")\Z")


_TIMESTAMP = _whole(TIMESTAMP_FORMAT)
_V1 = _whole(V1_FORMAT)
_SCHEME = _whole(SCHEME_FORMAT)
_V1A = _whole(V1A_FORMAT)
_PUBLIC_KEY = _whole(PUBLIC_KEY_FORMAT)


def secrets_of(secret: Optional[Secret], have_public_keys: bool = False) -> List[bytes]:
    """The configured secret(s) as HMAC keys; raises ConfigurationError (a ValueError) for a programming error."""
    items = [secret] if isinstance(secret, str) else list(secret or [])
    if not items:
        if have_public_keys:
            return []
        raise ConfigurationError(
            "payhooks: secret is required: the endpoint's whsec_ signing secret (or public_keys, its whpk_ public keys)"
        )
    keys: List[bytes] = []
    for s in items:
        if not isinstance(s, str) or not s.startswith(SECRET_PREFIX) or len(s) <= len(SECRET_PREFIX):
            raise ConfigurationError(
                "payhooks: secret must be the endpoint's signing secret, which starts with \"whsec_\"; "
                "it is used whole, prefix included, as the HMAC key"
            )
        keys.append(s.encode("utf-8"))
    return keys


def public_keys_of(public_keys: Optional[PublicKeys]) -> List[Any]:
    """The configured whpk_ key(s) as ``Ed25519PublicKey`` objects; raises ConfigurationError."""
    items = [public_keys] if isinstance(public_keys, str) else list(public_keys or [])
    if not items:
        return []
    raw: List[bytes] = []
    for k in items:
        body = k[len(PUBLIC_KEY_PREFIX):] if isinstance(k, str) and k.startswith(PUBLIC_KEY_PREFIX) else ""
        if not _PUBLIC_KEY.match(body):
            raise ConfigurationError(
                "payhooks: each of public_keys must be one of the endpoint's public keys: "
                "\"whpk_\" followed by the base64 of its 32 bytes"
            )
        raw.append(base64.b64decode(body, validate=True))
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:
        raise ConfigurationError(
            "payhooks: public_keys needs the cryptography package: pip install 'payhooks[ed25519]' "
            "(or Debian's python3-cryptography)"
        ) from None
    return [Ed25519PublicKey.from_public_bytes(b) for b in raw]


def _ed25519_verifies(key: Any, signature: bytes, signed: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        key.verify(signature, signed)
        return True
    except InvalidSignature:
        return False


def tolerance_of(tolerance: Any) -> float:
    """The tolerance in seconds; raises ConfigurationError unless a finite non-negative number."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or tolerance != tolerance or tolerance < 0 or tolerance == float("inf"):
        raise ConfigurationError("payhooks: tolerance must be a non-negative number of seconds")
    return tolerance


def _body_bytes(body: Any) -> bytes:
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        # A str only round-trips if it was decoded as UTF-8 from the raw bytes.
        return body.encode("utf-8")
    raise ConfigurationError(
        "payhooks: pass the raw request body as bytes exactly as received (request.get_data(), "
        f"request.body); the signature covers the raw bytes, which a parsed {type(body).__name__} no longer has"
    )


def _read_header(headers: Any, name: str) -> str:
    """One header's value from a mapping (any case), a WSGI environ, or a list of pairs."""
    if headers is None:
        raise ConfigurationError("payhooks: headers is required (the request headers)")
    values: List[Any] = []
    environ_key = "HTTP_" + name.upper().replace("-", "_")
    lower = name.lower()
    if hasattr(headers, "getlist") and not isinstance(headers, dict):
        # werkzeug / Django QueryDict style multi-dicts.
        try:
            values = [v for v in headers.getlist(name)]
        except Exception:  # noqa: BLE001 - a getlist of another shape
            values = []
    if not values and hasattr(headers, "get_all"):
        values = list(headers.get_all(name) or [])  # email.message.Message
    if not values:
        pairs: Iterable[Tuple[Any, Any]]
        if isinstance(headers, Mapping) or hasattr(headers, "items"):
            pairs = headers.items()
        else:
            pairs = headers
        for key, value in pairs:
            k = key.decode("latin-1") if isinstance(key, bytes) else str(key)
            if k == environ_key or k.lower() == lower:
                if isinstance(value, (list, tuple)):
                    values.extend(value)
                else:
                    values.append(value)
    values = [v.decode("latin-1") if isinstance(v, bytes) else v for v in values]
    if len(values) > 1:
        raise WebhookVerificationError("malformed_header", f"{name} header sent more than once")
    if not values or values[0] is None or str(values[0]) == "":
        raise WebhookVerificationError("missing_header", f"missing {name} header")
    return str(values[0])


def _malformed() -> WebhookVerificationError:
    return WebhookVerificationError(
        "malformed_header",
        f"{SIGNATURE_HEADER} must be t=<unix seconds>,v1=<64 lowercase hex>[,v1=...][,v1a=<base64 of 64 bytes>...] without spaces",
    )


def parse_header(header: str) -> Tuple[int, List[str], List[bytes]]:
    """Strict parse of t=<int>,v1=<hex>[,v1=<hex>...][,v1a=<base64>...]; unknown schemes (v2=...) are skipped."""
    timestamp: Optional[int] = None
    signatures: List[str] = []
    asymmetric: List[bytes] = []
    for part in header.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise _malformed()
        if key == "t":
            if timestamp is not None or not _TIMESTAMP.match(value):
                raise _malformed()
            timestamp = int(value, 10)
        elif key == "v1":
            if not _V1.match(value):
                raise _malformed()
            signatures.append(value)
        elif key == "v1a":
            if not _V1A.match(value):
                raise _malformed()
            try:
                asymmetric.append(base64.b64decode(value, validate=True))
            except binascii.Error:
                raise _malformed() from None
        elif not _SCHEME.match(key):
            raise _malformed()
    if timestamp is None or not (signatures or asymmetric):
        raise _malformed()
    return timestamp, signatures, asymmetric


def _check_timestamp(timestamp: int, now: float, tolerance: float) -> None:
    now_ms = Decimal(str(now)) * 1000
    offset_ms = now_ms - Decimal(timestamp) * 1000
    if abs(offset_ms) <= Decimal(str(tolerance)) * 1000:
        return
    raise WebhookVerificationError(
        "timestamp_out_of_tolerance",
        f"signature timestamp {timestamp} is {float(offset_ms) / 1000:.3f} s from now; the tolerance is {tolerance} s",
    )


def _parse_event(raw: bytes, event_id: str) -> Event:
    try:
        event = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise WebhookVerificationError("invalid_json", "the signed body is not UTF-8 JSON") from None
    if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not isinstance(event.get("type"), str):
        raise WebhookVerificationError("invalid_json", "the signed body is not an event object with a string id and type")
    if event["id"] != event_id:
        raise WebhookVerificationError("event_id_mismatch", f"{EVENT_ID_HEADER} does not match the id of the signed body")
    return event


def verify(
    body: Any,
    headers: Any,
    secret: Optional[Secret] = None,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
    public_keys: Optional[PublicKeys] = None,
) -> Event:
    """Verifies a delivery and returns the event (a dict).

    Raises WebhookVerificationError (answer 400, don't process) or ConfigurationError (a ValueError) for a programming
    error (no secret nor public key, a secret without whsec_, a public key that is not whpk_, a parsed body).

    ``body``: the raw request body exactly as received (bytes), never parsed JSON.
    ``headers``: the request headers (any case), a WSGI environ, or (name, value) pairs.
    ``secret``: the endpoint's whsec_ secret, or a list of them during a rotation.
    ``public_keys``: the endpoint's whpk_ ed25519 public key(s), instead of or beside ``secret``:
    one valid signature of either kind is enough.
    ``now``: Unix seconds (float), for tests.
    """
    ed_keys = public_keys_of(public_keys)
    keys = secrets_of(secret, bool(ed_keys))
    tol = tolerance_of(tolerance)
    raw = _body_bytes(body)
    signature = _read_header(headers, SIGNATURE_HEADER)
    event_id = _read_header(headers, EVENT_ID_HEADER)
    timestamp, received, asymmetric = parse_header(signature)

    # Compare every v1 with every secret's HMAC without stopping at the first match, so the time
    # taken does not say which one matched.
    signed = f"{timestamp}.".encode("ascii") + raw
    matched = False
    for key in keys:
        expected = hmac.new(key, signed, hashlib.sha256).hexdigest()
        for candidate in received:
            if hmac.compare_digest(expected, candidate):
                matched = True
    for ed_key in ed_keys:
        for sig in asymmetric:
            if _ed25519_verifies(ed_key, sig, signed):
                matched = True
    if not matched:
        raise WebhookVerificationError(
            "bad_signature", "no signature in the header verifies the raw body under the configured secret(s) or public key(s)"
        )
    _check_timestamp(timestamp, time.time() if now is None else now, tol)
    return _parse_event(raw, event_id)


def sign(body: Any, secret: Secret, timestamp: Optional[int] = None) -> str:
    """The Service-Signature header for ``body`` signed with ``secret`` (or several) at
    ``timestamp`` (Unix seconds): for tests of your receiver."""
    keys = secrets_of(secret)
    raw = _body_bytes(body)
    t = int(time.time()) if timestamp is None else int(timestamp)
    parts = [f"t={t}"]
    for key in keys:
        parts.append("v1=" + hmac.new(key, f"{t}.".encode("ascii") + raw, hashlib.sha256).hexdigest())
    return ",".join(parts)


def sign_test_delivery(event: Mapping[str, Any], secret: Secret, timestamp: Optional[int] = None) -> Tuple[bytes, Dict[str, str]]:
    """A signed test delivery of ``event``: (body bytes, headers)."""
    body = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return body, {
        "Content-Type": "application/json",
        EVENT_ID_HEADER: event["id"],
        SIGNATURE_HEADER: sign(body, secret, timestamp),
    }
