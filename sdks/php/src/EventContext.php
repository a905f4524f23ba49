<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/** Passed to your onEvent callback with the event. */
final class EventContext
{
    public function __construct(
        /** 1 for the first attempt at this event's work, 2 for the first retry, ... */
        public readonly int $attempt,
        /** Attempts before the work is kept as failed. */
        public readonly int $maxAttempts,
    ) {
    }
}
