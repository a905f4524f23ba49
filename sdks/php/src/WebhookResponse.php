<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/** The answer to send for one delivery. Adapters turn it into your framework's response. */
final class WebhookResponse
{
    /**
     * @param array<string, string> $headers
     */
    public function __construct(
        public readonly int $status,
        public readonly array $headers,
        public readonly string $body,
    ) {
    }

    /** @param array<string, mixed> $body */
    public static function json(int $status, array $body): self
    {
        return new self($status, ['Content-Type' => 'application/json; charset=utf-8'], json_encode($body, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES));
    }
}
