<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Integration;

use Payhooks\Receiver\Tests\Support\Http;
use Payhooks\Receiver\Tests\Support\Services;
use Payhooks\Receiver\Webhook;
use PHPUnit\Framework\TestCase;

/**
 * Spec 6.2.2 over real HTTP: `php -S` serving the plain PHP, Symfony and PSR-7 adapters on the
 * PostgreSQL store. The answer must reach the client while the event's work is still waiting.
 */
final class HttpTest extends TestCase
{
    private static string $url;
    private static \PDO $pdo;
    private static string $gates;
    /** @var resource */
    private static $server;
    private static string $base;
    private static string $log;

    public static function setUpBeforeClass(): void
    {
        [self::$url, self::$pdo] = Services::createDatabase();
        self::$pdo->exec('CREATE TABLE processed (event_id text NOT NULL, adapter text NOT NULL)');
        self::$gates = sys_get_temp_dir() . '/payhooks-gates-' . bin2hex(random_bytes(4));
        mkdir(self::$gates);
        self::$log = self::$gates . '.log';
        $port = Services::freePort();
        self::$base = "http://127.0.0.1:{$port}";
        $env = getenv();
        $env['PAYHOOKS_TEST_DB'] = self::$url;
        $env['PAYHOOKS_TEST_GATES'] = self::$gates;
        $env['PHP_CLI_SERVER_WORKERS'] = '4';
        self::$server = proc_open(
            ['setsid', PHP_BINARY, '-S', "127.0.0.1:{$port}", __DIR__ . '/../fixtures/http-router.php'],
            [0 => ['file', '/dev/null', 'r'], 1 => ['file', self::$log, 'a'], 2 => ['file', self::$log, 'a']],
            $pipes,
            null,
            $env,
        );
        Services::waitUntil('php -S to listen', static function () {
            try {
                return Http::request('GET', self::$base . '/nowhere', '', [], 2.0)['status'] === 404;
            } catch (\RuntimeException) {
                return false;
            }
        });
    }

    public static function tearDownAfterClass(): void
    {
        $status = proc_get_status(self::$server);
        // setsid made php -S the leader of its own process group: end it with its workers.
        posix_kill(-$status['pid'], SIGTERM);
        proc_close(self::$server);
        array_map('unlink', glob(self::$gates . '/*') ?: []);
        @rmdir(self::$gates);
        @unlink(self::$log);
        Services::dropDatabase(self::$url);
    }

    /** @return iterable<string, array{0: string}> */
    public static function adapters(): iterable
    {
        yield 'plain PHP (php://input, $_SERVER)' => ['/plain'];
        yield 'Symfony HttpFoundation' => ['/symfony'];
        yield 'PSR-7' => ['/psr7'];
    }

    /** @dataProvider adapters */
    public function testSpec622AcknowledgedBeforeTheWorkRunsThenProcessedOnce(string $path): void
    {
        $id = 'evt_http_' . bin2hex(random_bytes(4));
        $body = "{\n  \"id\": \"{$id}\",\n  \"type\": \"payment.succeeded\",\n  \"data\": {\"object\": {\"note\": \"Zo\\u00eb \\/ \u{1F680}\"}}\n}";
        $d = Webhook::signTestDelivery($body, 'whsec_http_test');
        $answer = Http::request('POST', self::$base . $path, $d['body'], $d['headers']);
        self::assertSame(200, $answer['status'], $answer['body'] . $this->log());
        self::assertSame('{"received":true}', $answer['body']);
        self::assertStringStartsWith('application/json', $answer['headers']['content-type']);
        self::assertSame([], $this->processed($id), 'the work ran before the answer was sent');

        $duplicate = Http::request('POST', self::$base . $path, $d['body'], $d['headers']);
        self::assertSame(200, $duplicate['status']);
        self::assertSame('{"received":true,"duplicate":true}', $duplicate['body']);

        touch(self::$gates . '/' . $id);
        $rows = Services::waitUntil("the work of {$id}", fn () => $this->processed($id) ?: null);
        self::assertSame([$path], $rows);

        $tampered = Http::request('POST', self::$base . $path, $d['body'] . ' ', $d['headers']);
        self::assertSame(400, $tampered['status']);
        self::assertSame('bad_signature', json_decode($tampered['body'], true)['error']);
        $unsigned = Http::request('POST', self::$base . $path, $d['body'], ['Service-Event-Id' => $id]);
        self::assertSame(400, $unsigned['status']);
        self::assertSame('missing_header', json_decode($unsigned['body'], true)['error']);
        self::assertSame(405, Http::request('GET', self::$base . $path)['status']);
        $huge = Http::request('POST', self::$base . $path, str_repeat(' ', 1_048_577), $d['headers']);
        self::assertSame(413, $huge['status']);
        self::assertSame([$path], $this->processed($id));
    }

    /** @return list<string> */
    private function processed(string $id): array
    {
        $statement = self::$pdo->prepare('SELECT adapter FROM processed WHERE event_id = ?');
        $statement->execute([$id]);
        return $statement->fetchAll(\PDO::FETCH_COLUMN);
    }

    private function log(): string
    {
        return "\n--- php -S ---\n" . (string) @file_get_contents(self::$log);
    }
}
