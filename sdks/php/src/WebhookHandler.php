<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

use Payhooks\Receiver\Store\Claim;
use Payhooks\Receiver\Store\WebhookStore;

/**
 * The receive pipeline: verify, ignore the types you do not handle, record the evt_ id
 * (insert-or-ignore, with the event), acknowledge at once, then run your work, retrying it when it
 * fails.
 *
 * A PHP request ends with its response, so the work is never held in memory only: the store keeps
 * it. receive() records the event and returns the 200 to send; afterResponse() runs the work once
 * the response is out (adapters call both, with fastcgi_finish_request() in between under
 * php-fpm). Failed work waits in the store for its next attempt, which work() (a long-running
 * worker) or runDue() (from cron) runs, and which afterResponse() also picks up after later
 * deliveries. With Processing::Worker the request only records and answers, and the worker does
 * all the work.
 */
final class WebhookHandler
{
    /** Delays between attempts at failed work: 1 s, 10 s, 1 min, 10 min, 1 h (six attempts in all). */
    public const DEFAULT_RETRY_DELAYS_MS = [1_000, 10_000, 60_000, 600_000, 3_600_000];

    /** @var list<string> */
    private readonly array $secrets;
    /** @var list<string> raw 32-byte ed25519 public keys */
    private readonly array $publicKeys;
    private readonly int|float $tolerance;
    /** @var \Closure(Event, EventContext): mixed */
    private readonly \Closure $onEvent;
    /** @var array<string, true>|null */
    private readonly ?array $types;
    /** @var \Closure(\Throwable, ErrorInfo): void */
    private readonly \Closure $onError;
    /** @var \Closure(WebhookVerificationException): void */
    private readonly \Closure $onRejected;
    /** @var list<int> */
    private readonly array $delays;
    /** @var \Closure(): int */
    private readonly \Closure $clock;
    /** @var list<array{0: Claim, 1: Event}> events this request claimed and has not processed yet */
    private array $pending = [];
    /** Whether receive() ran since the last afterResponse(): other requests' afterResponse() does nothing. */
    private bool $received = false;
    private bool $stopping = false;

    /**
     * @param string|list<string> $secret the endpoint's `whsec_` secret, or several during a rotation
     * @param WebhookStore $store where seen ids and their work are kept (PostgresStore in production)
     * @param callable(Event, EventContext): mixed $onEvent the work for one event. It may run more
     *        than once for an event (a retry after a failure, a takeover after a crash): make its
     *        effects idempotent, and credit with creditOnce().
     * @param list<string>|null $types the event types you handle; others are answered 200 and
     *        ignored. Only types payhooks sends are accepted (a typo would drop every payment).
     *        Default: every type goes to onEvent, which must ignore the ones it does not know.
     * @param (callable(\Throwable, ErrorInfo): void)|null $onError failures of the work or the store; default one error_log() line
     * @param (callable(WebhookVerificationException): void)|null $onRejected a delivery failed verification (answered 400); default one error_log() line
     * @param list<int> $retryDelaysMs delays between attempts at failed work
     * @param int $leaseMs how long one attempt may hold an event before a worker may take it over
     *        (its process died): longer than your max_execution_time
     * @param int $dueAfterResponse how many due retries afterResponse() also runs (0: leave them to a worker)
     * @param int $maxBodyBytes a larger body is answered 413 unread (payhooks' events are a few KiB)
     * @param (callable(): int)|null $clock epoch milliseconds, for tests
     * @param string|list<string> $publicKeys the endpoint's `whpk_` ed25519 public key(s), instead
     *        of or beside $secret (pass `secret: []` to verify with public keys only)
     */
    public function __construct(
        string|array $secret,
        private readonly WebhookStore $store,
        callable $onEvent,
        ?array $types = null,
        ?callable $onError = null,
        ?callable $onRejected = null,
        int|float $toleranceSeconds = Webhook::DEFAULT_TOLERANCE_SECONDS,
        array $retryDelaysMs = self::DEFAULT_RETRY_DELAYS_MS,
        private readonly int $leaseMs = 300_000,
        private readonly Processing $processing = Processing::AfterResponse,
        private readonly int $dueAfterResponse = 10,
        public readonly int $maxBodyBytes = 1_048_576,
        ?callable $clock = null,
        string|array $publicKeys = [],
    ) {
        $this->publicKeys = Webhook::publicKeys($publicKeys);
        $this->secrets = Webhook::secrets($secret, $this->publicKeys !== []);
        $this->tolerance = Webhook::tolerance($toleranceSeconds);
        $this->onEvent = \Closure::fromCallable($onEvent);
        $this->types = $types === null ? null : self::checkTypes($types);
        $this->onError = $onError !== null ? \Closure::fromCallable($onError) : self::defaultOnError(...);
        $this->onRejected = $onRejected !== null ? \Closure::fromCallable($onRejected) : self::defaultOnRejected(...);
        foreach ($retryDelaysMs as $delay) {
            if (!is_int($delay) || $delay < 0) {
                throw new \InvalidArgumentException('payhooks: retryDelaysMs must be a list of non-negative integers (milliseconds)');
            }
        }
        $this->delays = array_values($retryDelaysMs);
        if ($leaseMs <= 0 || $dueAfterResponse < 0 || $maxBodyBytes <= 0) {
            throw new \InvalidArgumentException('payhooks: leaseMs and maxBodyBytes must be positive, dueAfterResponse not negative');
        }
        $this->clock = $clock !== null ? \Closure::fromCallable($clock) : Webhook::nowMs(...);
    }

    /** Attempts before the work of an event is kept as failed. */
    public function maxAttempts(): int
    {
        return count($this->delays) + 1;
    }

    /**
     * Handles one delivery up to its answer: never throws.
     *
     * | delivery                                        | answer                                          |
     * |-------------------------------------------------|-------------------------------------------------|
     * | fails verification                              | 400 {"error": reason, "message": …}; onRejected |
     * | a type not in `types`                           | 200 {"received": true, "ignored": true}         |
     * | an id already seen (done, in progress, waiting) | 200 {"received": true, "duplicate": true}       |
     * | a new event                                     | 200 {"received": true}, recorded with its work  |
     * | the store is down                               | 500 {"error": "store_unavailable"}: payhooks retries |
     * | a body over `maxBodyBytes`                      | 413 {"error": "payload_too_large"}              |
     *
     * @param string $body the raw body, exactly as received
     * @param array<array-key, mixed> $headers header names (any case) to values, or $_SERVER
     */
    public function receive(string $body, array $headers): WebhookResponse
    {
        $this->received = true;
        if (strlen($body) > $this->maxBodyBytes) {
            return WebhookResponse::json(413, ['error' => 'payload_too_large', 'message' => "the body is larger than {$this->maxBodyBytes} bytes"]);
        }
        try {
            $event = Webhook::verifyAt($body, $headers, $this->secrets, $this->tolerance, ($this->clock)(), $this->publicKeys);
        } catch (WebhookVerificationException $e) {
            // A failed verification is answered 400 and the event is not processed.
            $this->safely(fn () => ($this->onRejected)($e));
            return WebhookResponse::json(400, ['error' => $e->reason->value, 'message' => $e->getMessage()]);
        } catch (\Throwable $e) {
            $this->report($e, new ErrorInfo(ErrorInfo::RECEIVE, willRetry: true));
            $message = $e instanceof \InvalidArgumentException && str_starts_with($e->getMessage(), 'payhooks:') ? ['message' => $e->getMessage()] : [];
            return WebhookResponse::json(500, ['error' => 'internal_error'] + $message);
        }
        // The catalog grows: acknowledge and ignore the types this receiver does not handle.
        if ($this->types !== null && !isset($this->types[$event->type])) {
            return WebhookResponse::json(200, ['received' => true, 'ignored' => true]);
        }
        try {
            if ($this->processing === Processing::Worker) {
                $claim = null;
                $recorded = $this->store->enqueue($event);
            } else {
                $claim = $this->store->claim($event, $this->leaseMs);
                $recorded = $claim !== null;
            }
        } catch (\Throwable $e) {
            // Not recorded, so not acknowledged: payhooks retries the delivery.
            $this->report($e, new ErrorInfo(ErrorInfo::STORE, $event, willRetry: true));
            return WebhookResponse::json(500, ['error' => 'store_unavailable']);
        }
        if (!$recorded) {
            return WebhookResponse::json(200, ['received' => true, 'duplicate' => true]);
        }
        if ($claim !== null) {
            $this->pending[] = [$claim, $event];
        }
        return WebhookResponse::json(200, ['received' => true]);
    }

    /** Whether receive() left work for afterResponse(). */
    public function hasPendingWork(): bool
    {
        return $this->pending !== [];
    }

    /**
     * Runs the work receive() recorded, then up to `dueAfterResponse` due retries (with
     * Processing::Worker, nothing: the worker does it all). Call it once the response has been
     * sent (adapters do). In a request that received no delivery it does nothing, so a framework
     * hook that runs after every response (kernel.terminate) costs nothing. Never throws; returns
     * how many events it ran.
     */
    public function afterResponse(): int
    {
        if (!$this->received) {
            return 0;
        }
        $this->received = false;
        $ran = 0;
        while ($this->pending !== []) {
            [$claim, $event] = array_shift($this->pending);
            $this->attempt($event, $claim);
            $ran++;
        }
        if ($this->processing === Processing::AfterResponse && $this->dueAfterResponse > 0) {
            $ran += $this->runDue($this->dueAfterResponse);
        }
        return $ran;
    }

    /**
     * Claims up to `$limit` events whose work is due (retries whose time came, queued work, work
     * whose process died) and runs them now. For a worker or cron. Never throws; returns how many.
     */
    public function runDue(int $limit = 100): int
    {
        try {
            $due = $this->store->claimDue($limit, $this->leaseMs);
        } catch (\Throwable $e) {
            $this->report($e, new ErrorInfo(ErrorInfo::POLL, willRetry: true));
            return 0;
        }
        foreach ($due as $item) {
            $this->attempt($item->event, $item->claim);
        }
        return count($due);
    }

    /**
     * A long-running worker: runs due work as it comes due, purges ids past retention hourly, and
     * returns when stop() is called, `$shouldStop()` answers true, or (with ext-pcntl) on SIGTERM
     * or SIGINT, after the event in hand. Run it under systemd, supervisord or a container.
     *
     * @param (callable(): bool)|null $shouldStop
     */
    public function work(int $pollIntervalMs = 1_000, ?callable $shouldStop = null, int $purgeIntervalMs = 3_600_000, int $batchSize = 10): void
    {
        $this->stopping = false;
        $restore = $this->trapSignals();
        try {
            $nextPurge = 0;
            while (!$this->stopped($shouldStop)) {
                $ran = $this->runDue($batchSize);
                if (($this->clock)() >= $nextPurge) {
                    $nextPurge = ($this->clock)() + $purgeIntervalMs;
                    try {
                        $this->store->purge();
                    } catch (\Throwable $e) {
                        $this->report($e, new ErrorInfo(ErrorInfo::STORE, willRetry: true));
                    }
                }
                if ($ran === 0) {
                    // Idle: sleep in short slices so a stop is seen quickly.
                    $until = microtime(true) + $pollIntervalMs / 1000;
                    while (microtime(true) < $until && !$this->stopped($shouldStop)) {
                        usleep((int) min(100_000, max(1, ($until - microtime(true)) * 1_000_000)));
                    }
                }
            }
        } finally {
            $restore();
        }
    }

    /** Makes work() return after the event in hand. Safe to call from a signal handler. */
    public function stop(): void
    {
        $this->stopping = true;
    }

    private function stopped(?callable $shouldStop): bool
    {
        return $this->stopping || ($shouldStop !== null && $shouldStop());
    }

    /** @return callable(): void puts the previous handlers back */
    private function trapSignals(): callable
    {
        if (!function_exists('pcntl_signal') || !function_exists('pcntl_async_signals')) {
            return static function (): void {
            };
        }
        $async = pcntl_async_signals(true);
        $previous = [];
        foreach ([SIGTERM, SIGINT] as $signal) {
            $previous[$signal] = pcntl_signal_get_handler($signal);
            pcntl_signal($signal, fn () => $this->stop());
        }
        return static function () use ($previous, $async): void {
            foreach ($previous as $signal => $handler) {
                pcntl_signal($signal, $handler);
            }
            pcntl_async_signals($async);
        };
    }

    /** One attempt at the work of one event, then its outcome recorded in the store. */
    private function attempt(Event $event, Claim $claim): void
    {
        try {
            ($this->onEvent)($event, new EventContext($claim->attempt, $this->maxAttempts()));
        } catch (\Throwable $error) {
            $willRetry = $claim->attempt < $this->maxAttempts();
            $this->report($error, new ErrorInfo(ErrorInfo::PROCESS, $event, $claim->attempt, $willRetry));
            try {
                if ($willRetry) {
                    $this->store->retryLater($claim, $this->delays[$claim->attempt - 1], $error);
                } else {
                    $this->store->markFailed($claim, $error);
                }
            } catch (\Throwable $storeError) {
                // Not recorded: once the lease expires a worker takes the event over.
                $this->report($storeError, new ErrorInfo(ErrorInfo::STORE, $event, $claim->attempt, true));
            }
            return;
        }
        try {
            $this->store->complete($claim);
        } catch (\Throwable $storeError) {
            // The work is done but not marked: after the lease it may run again (it is idempotent).
            $this->report($storeError, new ErrorInfo(ErrorInfo::STORE, $event, $claim->attempt, true));
        }
    }

    private function report(\Throwable $error, ErrorInfo $info): void
    {
        $this->safely(fn () => ($this->onError)($error, $info));
    }

    /** A hook that throws must not change the answer or stop the pipeline. */
    private function safely(callable $hook): void
    {
        try {
            $hook();
        } catch (\Throwable) {
        }
    }

    /**
     * @param array<array-key, mixed> $types
     * @return array<string, true>
     */
    private static function checkTypes(array $types): array
    {
        $set = [];
        foreach ($types as $type) {
            if (!is_string($type) || !EventTypes::isKnown($type)) {
                throw new \InvalidArgumentException('payhooks: unknown event type ' . json_encode($type) . ' in types; known types: ' . implode(', ', EventTypes::ALL));
            }
            $set[$type] = true;
        }
        return $set;
    }

    private static function defaultOnError(\Throwable $error, ErrorInfo $info): void
    {
        $where = $info->event !== null ? " for {$info->event->id} ({$info->event->type}), attempt " . ($info->attempt ?? '-') : '';
        error_log("[payhooks] {$info->phase} error{$where}" . ($info->willRetry ? ', will retry' : '') . ': ' . get_class($error) . ': ' . $error->getMessage());
    }

    private static function defaultOnRejected(WebhookVerificationException $error): void
    {
        error_log(
            "[payhooks] rejected a delivery with 400: {$error->reason->value}: {$error->getMessage()}."
            . ($error->reason === VerificationReason::BadSignature ? " If every delivery is rejected, check that the secret is this endpoint's whsec_ signing secret." : ''),
        );
    }
}
