<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/**
 * A verified event: `{"id":"evt_…","object":"event","type":"payment.succeeded",…,"data":{"object":{…}}}`.
 * `$payload` is the whole body decoded as arrays; `object()` is `data.object` (for payment.*
 * events, the Payment with its `metadata`).
 */
final class Event
{
    /**
     * @param array<string, mixed> $payload
     * @param string|null $json the JSON it was decoded from, kept as is (an empty `{}` and `[]`
     *                          decode to the same PHP array, so re-encoding could change it)
     */
    public function __construct(
        public readonly string $id,
        public readonly string $type,
        public readonly array $payload,
        private readonly ?string $json = null,
    ) {
    }

    /**
     * Decodes a JSON event object (for a delivery, after its signature was verified: see
     * Webhook::verify). Throws \UnexpectedValueException when it is not UTF-8 JSON of an object
     * with a string `id` and `type`.
     */
    public static function fromJson(string $json): self
    {
        // A leading byte-order mark is not part of the JSON text (WHATWG's UTF-8 decode drops it too).
        $text = str_starts_with($json, "\xEF\xBB\xBF") ? substr($json, 3) : $json;
        // json_decode with arrays cannot tell `[...]` from `{...}`: an event is an object.
        if (!str_starts_with(ltrim($text, " \t\n\r"), '{')) {
            throw new \UnexpectedValueException('payhooks: the body is not a JSON object');
        }
        try {
            $payload = json_decode($text, true, 512, JSON_THROW_ON_ERROR | JSON_BIGINT_AS_STRING);
        } catch (\JsonException $e) {
            throw new \UnexpectedValueException('payhooks: the body is not UTF-8 JSON: ' . $e->getMessage(), 0, $e);
        }
        if (!is_array($payload) || !is_string($payload['id'] ?? null) || !is_string($payload['type'] ?? null)) {
            throw new \UnexpectedValueException('payhooks: the body is not an event object with a string id and type');
        }
        return new self($payload['id'], $payload['type'], $payload, $text);
    }

    /** `data.object`: the Payment for payment.* events, the checkout session for checkout_session.*. */
    public function object(): array
    {
        $object = $this->payload['data']['object'] ?? null;
        return is_array($object) ? $object : [];
    }

    /** A payment.* event, whose `object()` is the Payment. */
    public function isPaymentEvent(): bool
    {
        return str_starts_with($this->type, 'payment.');
    }

    /** The event as JSON: the text it was decoded from when there is one. */
    public function toJson(): string
    {
        return $this->json ?? json_encode($this->payload, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_PRESERVE_ZERO_FRACTION);
    }
}
