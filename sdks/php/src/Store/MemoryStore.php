<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Store;

use Payhooks\Receiver\CreditInProgressException;
use Payhooks\Receiver\Event;

/**
 * In-process store, for tests and long-running PHP processes (a worker, ReactPHP, RoadRunner).
 * Under php-fpm or `php -S` each request starts empty: use PostgresStore or RedisStore there.
 */
final class MemoryStore implements WebhookStore, CreditStore
{
    /** @var array<string, array{state: string, event: Event, attempts: int, token: ?string, due: ?int, error: ?string, updated: int}> */
    private array $events = [];
    /** @var array<string, string> payment id => 'pending' | 'done' */
    private array $credits = [];
    /** @var \Closure(): int */
    private \Closure $clock;

    /**
     * @param (callable(): int)|null $clock epoch milliseconds, for tests; default the system clock
     */
    public function __construct(private readonly int $retentionMs = Support::RETENTION_MS, ?callable $clock = null)
    {
        Support::checkRetention($retentionMs);
        $this->clock = $clock !== null ? \Closure::fromCallable($clock) : static fn (): int => (int) floor(microtime(true) * 1000);
    }

    public function claim(Event $event, int $leaseMs): ?Claim
    {
        $attempts = $this->takeOver($event->id);
        if ($attempts === null) {
            return null;
        }
        $token = Support::token();
        $this->events[$event->id] = ['state' => 'processing', 'event' => $event, 'attempts' => $attempts + 1, 'token' => $token, 'due' => $this->now() + $leaseMs, 'error' => null, 'updated' => $this->now()];
        return new Claim($event->id, $token, $attempts + 1);
    }

    public function enqueue(Event $event): bool
    {
        $attempts = $this->takeOver($event->id);
        if ($attempts === null) {
            return false;
        }
        $this->events[$event->id] = ['state' => 'pending', 'event' => $event, 'attempts' => $attempts, 'token' => null, 'due' => $this->now(), 'error' => null, 'updated' => $this->now()];
        return true;
    }

    public function complete(Claim $claim): void
    {
        if ($this->holds($claim)) {
            $row = &$this->events[$claim->eventId];
            $row = ['state' => 'done', 'token' => null, 'due' => null, 'error' => null, 'updated' => $this->now()] + $row;
        }
    }

    public function retryLater(Claim $claim, int $delayMs, \Throwable $error): void
    {
        if ($this->holds($claim)) {
            $row = &$this->events[$claim->eventId];
            $row = ['state' => 'pending', 'token' => null, 'due' => $this->now() + $delayMs, 'error' => Support::errorText($error), 'updated' => $this->now()] + $row;
        }
    }

    public function markFailed(Claim $claim, \Throwable $error): void
    {
        if ($this->holds($claim)) {
            $row = &$this->events[$claim->eventId];
            $row = ['state' => 'failed', 'token' => null, 'due' => null, 'error' => Support::errorText($error), 'updated' => $this->now()] + $row;
        }
    }

    public function claimDue(int $limit, int $leaseMs): array
    {
        $now = $this->now();
        $due = array_filter($this->events, static fn (array $row): bool => in_array($row['state'], ['pending', 'processing'], true) && $row['due'] <= $now
            && ($row['state'] === 'pending' || $row['due'] < $now));
        uasort($due, static fn (array $a, array $b): int => $a['due'] <=> $b['due']);
        $claimed = [];
        foreach (array_slice(array_keys($due), 0, max(0, $limit)) as $id) {
            $id = (string) $id;
            $token = Support::token();
            $row = &$this->events[$id];
            $row = ['state' => 'processing', 'attempts' => $row['attempts'] + 1, 'token' => $token, 'due' => $now + $leaseMs, 'updated' => $now] + $row;
            $claimed[] = new DueEvent(new Claim($id, $token, $row['attempts']), $row['event']);
            unset($row);
        }
        return $claimed;
    }

    public function requeueFailed(?string $eventId = null): int
    {
        $count = 0;
        foreach ($this->events as $id => &$row) {
            if ($row['state'] === 'failed' && ($eventId === null || $eventId === (string) $id)) {
                $row = ['state' => 'pending', 'attempts' => 0, 'due' => $this->now(), 'updated' => $this->now()] + $row;
                $count++;
            }
        }
        return $count;
    }

    public function purge(): int
    {
        $before = count($this->events);
        $cutoff = $this->now() - $this->retentionMs;
        $this->events = array_filter($this->events, static fn (array $row): bool => !($row['state'] === 'done' && $row['updated'] < $cutoff));
        return $before - count($this->events);
    }

    /**
     * One process, one thread: a call for a payment whose callback is still running (a nested
     * call) throws CreditInProgressException rather than crediting twice.
     */
    public function creditOnce(string $paymentId, callable $fn): CreditResult
    {
        Support::checkPaymentId($paymentId);
        $state = $this->credits[$paymentId] ?? null;
        if ($state === 'done') {
            return new CreditResult(false);
        }
        if ($state === 'pending') {
            throw new CreditInProgressException($paymentId);
        }
        $this->credits[$paymentId] = 'pending';
        try {
            $value = $fn(null);
        } catch (\Throwable $e) {
            unset($this->credits[$paymentId]);
            throw $e;
        }
        $this->credits[$paymentId] = 'done';
        return new CreditResult(true, $value);
    }

    /**
     * What the store holds about one event, for tests and dashboards.
     *
     * @return array{state: string, attempts: int, last_error: ?string}|null
     */
    public function inspect(string $eventId): ?array
    {
        $row = $this->events[$eventId] ?? null;
        return $row === null ? null : ['state' => $row['state'], 'attempts' => $row['attempts'], 'last_error' => $row['error']];
    }

    /** The attempts already made when the id may be (re)claimed, or null when it is taken. */
    private function takeOver(string $id): ?int
    {
        $row = $this->events[$id] ?? null;
        return match (true) {
            $row === null, $row['state'] === 'failed' => 0,
            $row['state'] === 'processing' && $row['due'] < $this->now() => $row['attempts'],
            default => null,
        };
    }

    private function holds(Claim $claim): bool
    {
        $row = $this->events[$claim->eventId] ?? null;
        return $row !== null && $row['state'] === 'processing' && $row['token'] === $claim->token;
    }

    private function now(): int
    {
        return ($this->clock)();
    }
}
