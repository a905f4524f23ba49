<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Integration;

use Payhooks\Receiver\Event;
use Payhooks\Receiver\Store\PostgresStore;
use Payhooks\Receiver\Tests\Support\Services;
use PHPUnit\Framework\TestCase;

/** bin/payhooks-worker: runs queued work from cron (--once) or until SIGTERM. */
final class WorkerTest extends TestCase
{
    private const BIN = __DIR__ . '/../../bin/payhooks-worker';
    private const BOOTSTRAP = __DIR__ . '/../fixtures/worker-bootstrap.php';

    private static string $url;
    private static \PDO $pdo;

    public static function setUpBeforeClass(): void
    {
        [self::$url, self::$pdo] = Services::createDatabase();
        self::$pdo->exec('CREATE TABLE processed (event_id text NOT NULL)');
    }

    public static function tearDownAfterClass(): void
    {
        Services::dropDatabase(self::$url);
    }

    private function enqueue(string $id): void
    {
        self::assertTrue((new PostgresStore(self::$pdo))->enqueue(Event::fromJson(json_encode(['id' => $id, 'type' => 'payment.succeeded']))));
    }

    /** @return list<string> */
    private function processed(): array
    {
        return self::$pdo->query('SELECT event_id FROM processed ORDER BY event_id')->fetchAll(\PDO::FETCH_COLUMN);
    }

    /** @return array{0: int, 1: string} */
    private function runWorker(array $args): array
    {
        $proc = proc_open([PHP_BINARY, self::BIN, ...$args], [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, ['PAYHOOKS_TEST_DB' => self::$url] + getenv());
        $output = stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]);
        return [proc_close($proc), $output];
    }

    public function testOnceRunsWhatIsDueAndExits(): void
    {
        self::$pdo->exec('TRUNCATE processed');
        $this->enqueue('evt_worker_a');
        $this->enqueue('evt_worker_b');
        [$code, $output] = $this->runWorker([self::BOOTSTRAP, '--once']);
        self::assertSame(0, $code, $output);
        self::assertSame(['evt_worker_a', 'evt_worker_b'], $this->processed());
        self::assertSame('done', (new PostgresStore(self::$pdo))->inspect('evt_worker_a')['state']);
    }

    public function testRunsUntilSigtermThenStopsAfterTheEventInHand(): void
    {
        self::$pdo->exec('TRUNCATE processed');
        $proc = proc_open([PHP_BINARY, self::BIN, self::BOOTSTRAP, '--poll-ms=50'], [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, ['PAYHOOKS_TEST_DB' => self::$url] + getenv());
        self::assertStringContainsString('running', (string) fgets($pipes[2]));
        $this->enqueue('evt_worker_live');
        Services::waitUntil('the worker to run the queued event', fn () => $this->processed() === ['evt_worker_live'] ?: null);
        proc_terminate($proc, SIGTERM);
        $rest = stream_get_contents($pipes[2]);
        self::assertSame(0, proc_close($proc), (string) $rest);
        self::assertStringContainsString('stopped', (string) $rest);
    }

    public function testUsageErrors(): void
    {
        [$code, $output] = $this->runWorker([]);
        self::assertSame(64, $code);
        self::assertStringContainsString('usage: payhooks-worker', $output);
        [$code, $output] = $this->runWorker([__FILE__ . '.missing-bootstrap-is-not-php.php', '--bogus']);
        self::assertSame(64, $code);
        self::assertStringContainsString('unknown argument --bogus', $output);
    }
}
