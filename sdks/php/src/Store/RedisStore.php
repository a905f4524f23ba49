<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Store;

use Payhooks\Receiver\CreditInProgressException;
use Payhooks\Receiver\Event;

/**
 * Redis store over phpredis (a standalone \Redis connection). Each seen id is a hash holding its
 * state and, until the work is done, the event itself, written by one script: the insert-or-ignore
 * is atomic under concurrent duplicates and across processes, and acknowledged work survives the
 * PHP request. A sorted set orders the work by when it is due (a retry's time, or the end of a
 * lease), so a worker or a later request finds retries and work whose process died. Done ids
 * expire after the retention period; failed ones are kept until requeued or replayed. All times
 * are the Redis server's clock.
 *
 * Run Redis with persistence (AOF) and a non-evicting policy (`noeviction`, or `volatile-*` with
 * room): an evicted key is a forgotten id, or lost work.
 *
 * creditOnce marks the payment with SET NX (no expiry) before the callback and `done` after it.
 * The marker is not in your ledger's transaction: if the process dies inside the callback, the
 * payment stays `pending:…` and every later creditOnce for it throws CreditInProgressException
 * (never a second credit) until you check your ledger and delete or set the key (creditKey()) by
 * hand. Prefer PostgresStore for credits.
 */
final class RedisStore implements WebhookStore, CreditStore
{
    private const NOW = "local function now() local t = redis.call('TIME') return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end\n";

    // KEYS: event, due, failed. ARGV: id, token ('' = queue for a worker), leaseMs, payload, type.
    private const CLAIM = self::NOW . <<<'LUA'
        local t = now()
        local state = redis.call('HGET', KEYS[1], 'state')
        local attempts = 0
        if state then
          if state == 'failed' then
            attempts = 0
          elseif state == 'processing' and tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]) or '0') < t then
            attempts = tonumber(redis.call('HGET', KEYS[1], 'attempts') or '0')
          else
            return false
          end
        end
        redis.call('SREM', KEYS[3], ARGV[1])
        redis.call('DEL', KEYS[1])
        if ARGV[2] == '' then
          redis.call('HSET', KEYS[1], 'state', 'pending', 'type', ARGV[5], 'payload', ARGV[4], 'attempts', attempts, 'updated', t)
          redis.call('ZADD', KEYS[2], t, ARGV[1])
          return 1
        end
        attempts = attempts + 1
        redis.call('HSET', KEYS[1], 'state', 'processing', 'type', ARGV[5], 'payload', ARGV[4], 'attempts', attempts, 'token', ARGV[2], 'updated', t)
        redis.call('ZADD', KEYS[2], t + tonumber(ARGV[3]), ARGV[1])
        return attempts
        LUA;

    // Every write of a holder is fenced on its token. KEYS: event, due, failed.
    private const HOLDS = "local function holds(token) return redis.call('HGET', KEYS[1], 'state') == 'processing' and redis.call('HGET', KEYS[1], 'token') == token end\n";

    // ARGV: id, token, retentionMs.
    private const COMPLETE = self::NOW . self::HOLDS . <<<'LUA'
        if not holds(ARGV[2]) then return 0 end
        redis.call('HDEL', KEYS[1], 'payload', 'token', 'error')
        redis.call('HSET', KEYS[1], 'state', 'done', 'updated', now())
        redis.call('PEXPIRE', KEYS[1], ARGV[3])
        redis.call('ZREM', KEYS[2], ARGV[1])
        return 1
        LUA;

    // ARGV: id, token, delayMs, error.
    private const RETRY = self::NOW . self::HOLDS . <<<'LUA'
        if not holds(ARGV[2]) then return 0 end
        local t = now()
        redis.call('HDEL', KEYS[1], 'token')
        redis.call('HSET', KEYS[1], 'state', 'pending', 'error', ARGV[4], 'updated', t)
        redis.call('ZADD', KEYS[2], t + tonumber(ARGV[3]), ARGV[1])
        return 1
        LUA;

    // ARGV: id, token, error.
    private const FAIL = self::NOW . self::HOLDS . <<<'LUA'
        if not holds(ARGV[2]) then return 0 end
        redis.call('HDEL', KEYS[1], 'token')
        redis.call('HSET', KEYS[1], 'state', 'failed', 'error', ARGV[3], 'updated', now())
        redis.call('ZREM', KEYS[2], ARGV[1])
        redis.call('SADD', KEYS[3], ARGV[1])
        return 1
        LUA;

    // Leases one due event. ARGV: id, token, leaseMs. Returns {attempts, payload} or nil.
    private const TAKE = self::NOW . <<<'LUA'
        local t = now()
        local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
        if not score or tonumber(score) > t then return false end
        local state = redis.call('HGET', KEYS[1], 'state')
        if state ~= 'pending' and state ~= 'processing' then
          redis.call('ZREM', KEYS[2], ARGV[1])
          return false
        end
        local attempts = tonumber(redis.call('HGET', KEYS[1], 'attempts') or '0') + 1
        redis.call('HSET', KEYS[1], 'state', 'processing', 'token', ARGV[2], 'attempts', attempts, 'updated', t)
        redis.call('ZADD', KEYS[2], t + tonumber(ARGV[3]), ARGV[1])
        return {attempts, redis.call('HGET', KEYS[1], 'payload')}
        LUA;

    // ARGV: id.
    private const REQUEUE = self::NOW . <<<'LUA'
        redis.call('SREM', KEYS[3], ARGV[1])
        if redis.call('HGET', KEYS[1], 'state') ~= 'failed' then return 0 end
        local t = now()
        redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0, 'updated', t)
        redis.call('ZADD', KEYS[2], t, ARGV[1])
        return 1
        LUA;

    private const DELETE_IF = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

    /**
     * @param \Redis $redis a phpredis connection without a serializer
     * @param string $prefix prefix of every key
     * @param int $retentionMs how long a done id is kept: at least, and by default, 30 days
     * @param int $creditWaitMs how long creditOnce waits for a concurrent credit of the same payment
     */
    public function __construct(
        private readonly \Redis $redis,
        public readonly string $prefix = 'payhooks:',
        private readonly int $retentionMs = Support::RETENTION_MS,
        private readonly int $creditWaitMs = 10_000,
    ) {
        Support::checkRetention($retentionMs);
        if ($redis->getOption(\Redis::OPT_SERIALIZER) !== \Redis::SERIALIZER_NONE) {
            throw new \InvalidArgumentException('payhooks: RedisStore needs a \Redis connection without a serializer (Redis::OPT_SERIALIZER = Redis::SERIALIZER_NONE)');
        }
    }

    /** The hash holding an event id's state. */
    public function eventKey(string $eventId): string
    {
        return $this->prefix . 'event:' . $eventId;
    }

    /** The key holding a payment's credit marker. */
    public function creditKey(string $paymentId): string
    {
        return $this->prefix . 'credit:' . $paymentId;
    }

    public function claim(Event $event, int $leaseMs): ?Claim
    {
        $token = Support::token();
        $attempts = $this->script(self::CLAIM, $event->id, [$token, $leaseMs, $event->toJson(), $event->type]);
        return is_int($attempts) ? new Claim($event->id, $token, $attempts) : null;
    }

    public function enqueue(Event $event): bool
    {
        return is_int($this->script(self::CLAIM, $event->id, ['', 0, $event->toJson(), $event->type]));
    }

    public function complete(Claim $claim): void
    {
        $this->script(self::COMPLETE, $claim->eventId, [$claim->token, $this->retentionMs]);
    }

    public function retryLater(Claim $claim, int $delayMs, \Throwable $error): void
    {
        $this->script(self::RETRY, $claim->eventId, [$claim->token, $delayMs, Support::errorText($error)]);
    }

    public function markFailed(Claim $claim, \Throwable $error): void
    {
        $this->script(self::FAIL, $claim->eventId, [$claim->token, Support::errorText($error)]);
    }

    public function claimDue(int $limit, int $leaseMs): array
    {
        if ($limit <= 0) {
            return [];
        }
        [$seconds, $micros] = $this->call(fn () => $this->redis->time());
        $nowMs = (int) $seconds * 1000 + intdiv((int) $micros, 1000);
        /** @var list<string> $ids */
        $ids = $this->call(fn () => $this->redis->zRangeByScore($this->prefix . 'due', '-inf', (string) $nowMs, ['limit' => [0, $limit]]));
        $due = [];
        foreach ($ids as $id) {
            $token = Support::token();
            $taken = $this->script(self::TAKE, $id, [$token, $leaseMs]);
            if (is_array($taken) && is_string($taken[1] ?? null)) {
                $due[] = new DueEvent(new Claim($id, $token, (int) $taken[0]), Event::fromJson($taken[1]));
            }
        }
        return $due;
    }

    public function requeueFailed(?string $eventId = null): int
    {
        $ids = $eventId !== null ? [$eventId] : $this->call(fn () => $this->redis->sMembers($this->prefix . 'failed'));
        $count = 0;
        foreach ($ids as $id) {
            $count += (int) $this->script(self::REQUEUE, (string) $id, []);
        }
        return $count;
    }

    /** Nothing to do: done ids expire by themselves after the retention period. */
    public function purge(): int
    {
        return 0;
    }

    public function inspect(string $eventId): ?array
    {
        $row = $this->call(fn () => $this->redis->hMGet($this->eventKey($eventId), ['state', 'attempts', 'error']));
        if (!is_array($row) || !is_string($row['state'] ?? null)) {
            return null;
        }
        return ['state' => $row['state'], 'attempts' => (int) $row['attempts'], 'last_error' => is_string($row['error']) ? $row['error'] : null];
    }

    public function creditOnce(string $paymentId, callable $fn): CreditResult
    {
        Support::checkPaymentId($paymentId);
        $key = $this->creditKey($paymentId);
        $deadline = microtime(true) + $this->creditWaitMs / 1000;
        $pauseMs = 10;
        for (;;) {
            $mine = 'pending:' . Support::token();
            if ($this->call(fn () => $this->redis->set($key, $mine, ['nx'])) === true) {
                try {
                    $value = $fn(null);
                } catch (\Throwable $e) {
                    $this->call(fn () => $this->redis->eval(self::DELETE_IF, [$key, $mine], 1));
                    throw $e;
                }
                $this->call(fn () => $this->redis->set($key, 'done'));
                return new CreditResult(true, $value);
            }
            $current = $this->call(fn () => $this->redis->get($key));
            if ($current === 'done') {
                return new CreditResult(false);
            }
            if ($current !== false) {
                // Another caller is crediting this payment: wait for its outcome.
                if (microtime(true) >= $deadline) {
                    throw new CreditInProgressException($paymentId);
                }
                usleep($pauseMs * 1000);
                $pauseMs = min($pauseMs * 2, 200);
            }
        }
    }

    /** @param list<int|string> $args */
    private function script(string $lua, string $eventId, array $args): mixed
    {
        $keys = [$this->eventKey($eventId), $this->prefix . 'due', $this->prefix . 'failed'];
        return $this->call(fn () => $this->redis->eval($lua, [...$keys, $eventId, ...array_map('strval', $args)], count($keys)));
    }

    /** phpredis reports some failures as false plus getLastError() instead of an exception. */
    private function call(callable $command): mixed
    {
        $this->redis->clearLastError();
        $result = $command();
        $error = $this->redis->getLastError();
        if ($error !== null) {
            $this->redis->clearLastError();
            throw new \RedisException('payhooks: Redis answered: ' . $error);
        }
        return $result;
    }
}
