<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Store;

use Payhooks\Receiver\Event;

/**
 * Where a receiver records the evt_ ids it has seen, for at least 30 days, with the work for each.
 *
 * A PHP request ends when its response is done, so every store keeps the event with its id, in
 * the same write: work that fails, or whose process died, is still there for the next attempt
 * (by a worker, or after a later request). Each id is in one of four states: `processing` (held
 * by one worker under a lease), `pending` (waiting for its next attempt), `done` (kept for the
 * retention period, then purged) and `failed` (every attempt failed; kept until requeued or
 * replayed).
 *
 * - claim() is the insert-or-ignore: it records the id and hands out a Claim, or returns null when
 *   the id was seen (done, held under a live lease, or waiting for a retry). Concurrent identical
 *   calls get at most one claim. A failed event (a replay re-runs it) and one whose lease expired
 *   are taken over.
 * - enqueue() is the same insert-or-ignore, leaving the work `pending` for a worker.
 */
interface WebhookStore
{
    /** Records the id and leases the work to the caller for `$leaseMs`; null when already seen. */
    public function claim(Event $event, int $leaseMs): ?Claim;

    /** Records the id and queues the work for a worker (due now); false when already seen. */
    public function enqueue(Event $event): bool;

    /** The work succeeded: keep the id as done for the retention period. */
    public function complete(Claim $claim): void;

    /** The work failed and will be tried again in `$delayMs`; the id stays seen meanwhile. */
    public function retryLater(Claim $claim, int $delayMs, \Throwable $error): void;

    /** The last attempt failed: keep the event as failed, with its error, until requeued or replayed. */
    public function markFailed(Claim $claim, \Throwable $error): void;

    /**
     * Leases up to `$limit` events whose work is due: retries whose time came, queued work, and
     * work whose holder's lease expired (its process died).
     *
     * @return list<DueEvent>
     */
    public function claimDue(int $limit, int $leaseMs): array;

    /** Puts failed events (all, or one) back in the queue for another round of attempts; returns how many. */
    public function requeueFailed(?string $eventId = null): int;

    /** Deletes done ids past the retention period; returns how many. */
    public function purge(): int;

    /**
     * What the store holds about one event (for tests, dashboards, support), or null if unseen.
     *
     * @return array{state: string, attempts: int, last_error: ?string}|null
     */
    public function inspect(string $eventId): ?array;
}
