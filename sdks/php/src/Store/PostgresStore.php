<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Store;

use Payhooks\Receiver\Event;

/**
 * PostgreSQL store over PDO (pdo_pgsql). Durable: the seen id and the event to process are one
 * row, written by one statement, so an acknowledged event is never without its work. The tables
 * are the ones @payhooks/receiver (Node.js) and the other payhooks libraries use, so receivers in
 * several languages can share them.
 *
 * creditOnce($paymentId, fn (\PDO $tx) => …) runs the callback inside a transaction that first
 * inserts the payment id into the credits table (primary key): write your ledger row with $tx and
 * both commit together, or neither does.
 */
final class PostgresStore implements WebhookStore, CreditStore
{
    private const IDENT = '/^[A-Za-z_][A-Za-z0-9_]{0,62}\z/';

    private readonly string $t;
    private readonly string $c;
    private readonly string $base;
    private bool $ready = false;

    /**
     * @param \PDO $pdo a pdo_pgsql connection (PDO::ERRMODE_EXCEPTION, PHP 8's default)
     * @param string $table seen ids and their work; may be `schema.table`
     * @param string $creditsTable credited payment ids; may be `schema.table`
     * @param int $retentionMs how long a done id is kept: at least, and by default, 30 days
     * @param bool $autoMigrate create the tables on first use; otherwise call migrate() or run schemaSql() yourself
     */
    public function __construct(
        private readonly \PDO $pdo,
        public readonly string $table = ReceiverTables::EVENTS_TABLE,
        public readonly string $creditsTable = ReceiverTables::CREDITS_TABLE,
        private readonly int $retentionMs = Support::RETENTION_MS,
        private readonly bool $autoMigrate = true,
    ) {
        if ($pdo->getAttribute(\PDO::ATTR_DRIVER_NAME) !== 'pgsql') {
            throw new \InvalidArgumentException('payhooks: PostgresStore needs a pdo_pgsql connection (new PDO("pgsql:host=...;dbname=..."))');
        }
        if ($pdo->getAttribute(\PDO::ATTR_ERRMODE) !== \PDO::ERRMODE_EXCEPTION) {
            throw new \InvalidArgumentException('payhooks: PostgresStore needs PDO::ATTR_ERRMODE set to PDO::ERRMODE_EXCEPTION (the default since PHP 8)');
        }
        Support::checkRetention($retentionMs);
        [$this->t, $this->base] = self::quoteName($table);
        [$this->c] = self::quoteName($creditsTable);
    }

    /**
     * A PDO connection from a URL such as DATABASE_URL: postgres://user:password@host:5432/dbname?sslmode=require.
     */
    public static function pdoFromUrl(string $url): \PDO
    {
        $parts = parse_url($url);
        if ($parts === false || !in_array($parts['scheme'] ?? '', ['postgres', 'postgresql'], true)) {
            throw new \InvalidArgumentException('payhooks: expected a postgres://user:password@host:port/database URL');
        }
        $dsn = [];
        if (isset($parts['host'])) {
            $dsn['host'] = rawurldecode($parts['host']);
        }
        if (isset($parts['port'])) {
            $dsn['port'] = (string) $parts['port'];
        }
        $dbname = rawurldecode(ltrim($parts['path'] ?? '', '/'));
        if ($dbname !== '') {
            $dsn['dbname'] = $dbname;
        }
        parse_str($parts['query'] ?? '', $query);
        foreach ($query as $key => $value) {
            if (is_string($value) && preg_match('/^[a-z_]+\z/', (string) $key) === 1) {
                $dsn[(string) $key] = $value;
            }
        }
        $pairs = [];
        foreach ($dsn as $key => $value) {
            if (str_contains($value, ';')) {
                throw new \InvalidArgumentException("payhooks: the database URL's {$key} contains a semicolon, which a PDO DSN cannot carry");
            }
            // libpq's quoting, for values with spaces or quotes.
            $pairs[] = $key . '=' . (preg_match('/^[^\s\'\\\\]+\z/', $value) === 1 ? $value : "'" . addcslashes($value, "'\\") . "'");
        }
        return new \PDO('pgsql:' . implode(';', $pairs), isset($parts['user']) ? rawurldecode($parts['user']) : null, isset($parts['pass']) ? rawurldecode($parts['pass']) : null, [
            \PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION,
        ]);
    }

    /** The DDL migrate() runs, for your own migration tool. */
    public function schemaSql(): string
    {
        return ReceiverTables::ddl($this->t, $this->c, $this->base);
    }

    /** Creates the tables if they do not exist (idempotent; safe from several processes at once). */
    public function migrate(): void
    {
        $this->inTransaction(function (): void {
            // Concurrent CREATE TABLE IF NOT EXISTS can still collide: serialise migrations.
            $this->pdo->exec("SELECT pg_advisory_xact_lock(hashtext('" . ReceiverTables::MIGRATION_LOCK . "'))");
            $this->pdo->exec($this->schemaSql());
        });
        $this->ready = true;
    }

    public function claim(Event $event, int $leaseMs): ?Claim
    {
        $this->ensure();
        $token = Support::token();
        // Insert-or-ignore. An existing row is taken over only when its work failed for good (a
        // replay re-runs it) or its holder's lease expired (the holder died).
        $row = $this->fetch(
            "INSERT INTO {$this->t} AS e (event_id, event_type, state, payload, attempts, token, locked_until)
             VALUES (?, ?, 'processing', CAST(? AS jsonb), 1, ?, now() + CAST(? AS float8) * interval '1 millisecond')
             ON CONFLICT (event_id) DO UPDATE SET
               state = 'processing', payload = EXCLUDED.payload, token = EXCLUDED.token,
               attempts = CASE WHEN e.state = 'failed' THEN 1 ELSE e.attempts + 1 END,
               locked_until = EXCLUDED.locked_until, next_attempt_at = NULL, last_error = NULL, updated_at = now()
             WHERE e.state = 'failed' OR (e.state = 'processing' AND e.locked_until < now())
             RETURNING attempts",
            [$event->id, $event->type, $event->toJson(), $token, $leaseMs],
        );
        return $row === null ? null : new Claim($event->id, $token, (int) $row['attempts']);
    }

    public function enqueue(Event $event): bool
    {
        $this->ensure();
        $row = $this->fetch(
            "INSERT INTO {$this->t} AS e (event_id, event_type, state, payload, attempts, next_attempt_at)
             VALUES (?, ?, 'pending', CAST(? AS jsonb), 0, now())
             ON CONFLICT (event_id) DO UPDATE SET
               state = 'pending', payload = EXCLUDED.payload, token = NULL, locked_until = NULL,
               attempts = CASE WHEN e.state = 'failed' THEN 0 ELSE e.attempts END,
               next_attempt_at = now(), last_error = NULL, updated_at = now()
             WHERE e.state = 'failed' OR (e.state = 'processing' AND e.locked_until < now())
             RETURNING event_id",
            [$event->id, $event->type, $event->toJson()],
        );
        return $row !== null;
    }

    public function complete(Claim $claim): void
    {
        $this->run(
            "UPDATE {$this->t} SET state = 'done', payload = NULL, token = NULL, locked_until = NULL,
               next_attempt_at = NULL, last_error = NULL, updated_at = now()
             WHERE event_id = ? AND token = ?",
            [$claim->eventId, $claim->token],
        );
    }

    public function retryLater(Claim $claim, int $delayMs, \Throwable $error): void
    {
        $this->run(
            "UPDATE {$this->t} SET state = 'pending', token = NULL, locked_until = NULL,
               next_attempt_at = now() + CAST(? AS float8) * interval '1 millisecond', last_error = ?, updated_at = now()
             WHERE event_id = ? AND token = ?",
            [$delayMs, Support::errorText($error), $claim->eventId, $claim->token],
        );
    }

    public function markFailed(Claim $claim, \Throwable $error): void
    {
        $this->run(
            "UPDATE {$this->t} SET state = 'failed', token = NULL, locked_until = NULL, next_attempt_at = NULL,
               last_error = ?, updated_at = now()
             WHERE event_id = ? AND token = ?",
            [Support::errorText($error), $claim->eventId, $claim->token],
        );
    }

    public function claimDue(int $limit, int $leaseMs): array
    {
        if ($limit <= 0) {
            return [];
        }
        $this->ensure();
        $statement = $this->run(
            "UPDATE {$this->t} AS e SET state = 'processing', attempts = e.attempts + 1,
               token = gen_random_uuid()::text, locked_until = now() + CAST(? AS float8) * interval '1 millisecond',
               next_attempt_at = NULL, updated_at = now()
             FROM (
               SELECT event_id FROM {$this->t}
               WHERE (state = 'pending' AND next_attempt_at <= now())
                  OR (state = 'processing' AND locked_until < now())
               ORDER BY COALESCE(next_attempt_at, locked_until)
               LIMIT ?
               FOR UPDATE SKIP LOCKED
             ) due
             WHERE e.event_id = due.event_id
             RETURNING e.event_id, e.attempts, e.token, e.payload",
            [$leaseMs, $limit],
        );
        $due = [];
        foreach ($statement->fetchAll(\PDO::FETCH_ASSOC) as $row) {
            $due[] = new DueEvent(new Claim((string) $row['event_id'], (string) $row['token'], (int) $row['attempts']), Event::fromJson((string) $row['payload']));
        }
        return $due;
    }

    public function requeueFailed(?string $eventId = null): int
    {
        $this->ensure();
        return $this->run(
            "UPDATE {$this->t} SET state = 'pending', attempts = 0, next_attempt_at = now(), updated_at = now()
             WHERE state = 'failed'" . ($eventId === null ? '' : ' AND event_id = ?'),
            $eventId === null ? [] : [$eventId],
        )->rowCount();
    }

    public function purge(): int
    {
        $this->ensure();
        return $this->run(
            "DELETE FROM {$this->t} WHERE state = 'done' AND updated_at < now() - CAST(? AS float8) * interval '1 millisecond'",
            [$this->retentionMs],
        )->rowCount();
    }

    public function inspect(string $eventId): ?array
    {
        $this->ensure();
        $row = $this->fetch("SELECT state, attempts, last_error FROM {$this->t} WHERE event_id = ?", [$eventId]);
        return $row === null ? null : ['state' => (string) $row['state'], 'attempts' => (int) $row['attempts'], 'last_error' => $row['last_error']];
    }

    /**
     * Runs `$fn($pdo)` in a transaction that first inserts the payment id into the credits table.
     * A concurrent call waits on the primary key, then sees the credit (or, if the first rolled
     * back, credits). Inside a transaction of yours, a savepoint is used: the marker then commits
     * with your transaction.
     */
    public function creditOnce(string $paymentId, callable $fn): CreditResult
    {
        Support::checkPaymentId($paymentId);
        $this->ensure();
        $nested = $this->begin();
        try {
            $inserted = $this->run("INSERT INTO {$this->c} (payment_id) VALUES (?) ON CONFLICT (payment_id) DO NOTHING", [$paymentId])->rowCount();
            if ($inserted === 0) {
                $this->rollBack($nested);
                return new CreditResult(false);
            }
            $value = $fn($this->pdo);
        } catch (\Throwable $e) {
            $this->rollBack($nested);
            throw $e;
        }
        $this->commit($nested);
        return new CreditResult(true, $value);
    }

    /** @param callable(): void $fn */
    private function inTransaction(callable $fn): void
    {
        $nested = $this->begin();
        try {
            $fn();
        } catch (\Throwable $e) {
            $this->rollBack($nested);
            throw $e;
        }
        $this->commit($nested);
    }

    /** Opens a transaction, or a savepoint inside the caller's; returns whether it is nested. */
    private function begin(): bool
    {
        if ($this->pdo->inTransaction()) {
            $this->pdo->exec('SAVEPOINT payhooks_receiver');
            return true;
        }
        $this->pdo->beginTransaction();
        return false;
    }

    private function commit(bool $nested): void
    {
        if ($nested) {
            $this->pdo->exec('RELEASE SAVEPOINT payhooks_receiver');
        } else {
            $this->pdo->commit();
        }
    }

    private function rollBack(bool $nested): void
    {
        try {
            if ($nested) {
                $this->pdo->exec('ROLLBACK TO SAVEPOINT payhooks_receiver');
            } elseif ($this->pdo->inTransaction()) {
                $this->pdo->rollBack();
            }
        } catch (\PDOException) {
            // The connection is gone: the server rolled the transaction back itself.
        }
    }

    private function ensure(): void
    {
        if (!$this->ready && $this->autoMigrate) {
            $this->migrate();
        }
    }

    /** @param list<mixed> $params */
    private function run(string $sql, array $params): \PDOStatement
    {
        $statement = $this->pdo->prepare($sql);
        foreach ($params as $i => $value) {
            $statement->bindValue($i + 1, $value, is_int($value) ? \PDO::PARAM_INT : \PDO::PARAM_STR);
        }
        $statement->execute();
        return $statement;
    }

    /**
     * @param list<mixed> $params
     * @return array<string, mixed>|null
     */
    private function fetch(string $sql, array $params): ?array
    {
        $row = $this->run($sql, $params)->fetch(\PDO::FETCH_ASSOC);
        return $row === false ? null : $row;
    }

    /** @return array{0: string, 1: string} the quoted name and its last part */
    private static function quoteName(string $name): array
    {
        $parts = explode('.', $name);
        foreach ($parts as $part) {
            if (preg_match(self::IDENT, $part) !== 1) {
                throw new \InvalidArgumentException('payhooks: invalid table name ' . json_encode($name));
            }
        }
        if (count($parts) > 2) {
            throw new \InvalidArgumentException('payhooks: invalid table name ' . json_encode($name));
        }
        return [implode('.', array_map(static fn (string $p): string => '"' . $p . '"', $parts)), $parts[count($parts) - 1]];
    }
}
