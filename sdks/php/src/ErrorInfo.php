<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/** Passed to your onError callback with the exception. */
final class ErrorInfo
{
    /** onEvent threw. */
    public const PROCESS = 'process';
    /** The store failed (on receipt the delivery was answered 500, so payhooks retries it). */
    public const STORE = 'store';
    /** A programming error on receipt (answered 500). */
    public const RECEIVE = 'receive';
    /** Claiming due work from the store failed. */
    public const POLL = 'poll';

    public function __construct(
        public readonly string $phase,
        public readonly ?Event $event = null,
        public readonly ?int $attempt = null,
        /** Whether the work will be tried again (by this library, or by payhooks after a 500). */
        public readonly bool $willRetry = false,
    ) {
    }
}
