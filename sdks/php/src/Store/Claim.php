<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Store;

/**
 * The right to process one event, handed by a store to exactly one caller. `token` fences a
 * holder whose lease expired: its later writes are ignored.
 */
final class Claim
{
    public function __construct(
        public readonly string $eventId,
        public readonly string $token,
        /** 1 for the first attempt at the work, 2 for the first retry, ... */
        public readonly int $attempt,
    ) {
    }
}
