<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Integration;

use Payhooks\Receiver\Tests\Support\FastCgi;
use Payhooks\Receiver\Tests\Support\Services;
use Payhooks\Receiver\Webhook;
use PHPUnit\Framework\TestCase;

/**
 * Spec 6.2.2 under php-fpm, the usual production setup: the adapters end the request with
 * fastcgi_finish_request() before the work runs. Spoken to over FastCGI as nginx would.
 */
final class FpmTest extends TestCase
{
    private const ROUTER = __DIR__ . '/../fixtures/http-router.php';

    private static string $url;
    private static \PDO $pdo;
    private static string $dir;
    private static int $port;
    /** @var resource */
    private static $fpm;

    public static function setUpBeforeClass(): void
    {
        $binary = glob('/usr/sbin/php-fpm*')[0] ?? null;
        if ($binary === null) {
            throw new \RuntimeException('php-fpm is not installed (apt-get install php-fpm)');
        }
        [self::$url, self::$pdo] = Services::createDatabase();
        self::$pdo->exec('CREATE TABLE processed (event_id text NOT NULL, adapter text NOT NULL)');
        self::$dir = sys_get_temp_dir() . '/payhooks-fpm-' . bin2hex(random_bytes(4));
        mkdir(self::$dir . '/gates', 0777, true);
        self::$port = Services::freePort();
        $user = function_exists('posix_getuid') && posix_getuid() === 0 ? "user = root\ngroup = root\n" : '';
        $dir = self::$dir;
        $port = self::$port;
        file_put_contents(self::$dir . '/fpm.conf', <<<CONF
            [global]
            error_log = {$dir}/fpm.log
            daemonize = no
            [payhooks]
            {$user}listen = 127.0.0.1:{$port}
            pm = static
            pm.max_children = 3
            clear_env = no
            catch_workers_output = yes
            CONF);
        $env = getenv();
        $env['PAYHOOKS_TEST_DB'] = self::$url;
        $env['PAYHOOKS_TEST_GATES'] = self::$dir . '/gates';
        self::$fpm = proc_open(
            [$binary, '--nodaemonize', '--fpm-config', self::$dir . '/fpm.conf', '--allow-to-run-as-root'],
            [0 => ['file', '/dev/null', 'r'], 1 => ['file', self::$dir . '/out.log', 'a'], 2 => ['file', self::$dir . '/out.log', 'a']],
            $pipes,
            null,
            $env,
        );
        Services::waitUntil('php-fpm to listen', static function () {
            if (!proc_get_status(self::$fpm)['running']) {
                throw new \RuntimeException('php-fpm exited: ' . @file_get_contents(self::$dir . '/fpm.log') . @file_get_contents(self::$dir . '/out.log'));
            }
            $socket = @stream_socket_client('tcp://127.0.0.1:' . self::$port, $errno, $error, 1.0);
            if ($socket === false) {
                return false;
            }
            fclose($socket);
            return true;
        });
    }

    public static function tearDownAfterClass(): void
    {
        proc_terminate(self::$fpm, SIGTERM); // the master ends its workers
        proc_close(self::$fpm);
        array_map('unlink', glob(self::$dir . '/gates/*') ?: []);
        @rmdir(self::$dir . '/gates');
        array_map('unlink', glob(self::$dir . '/*') ?: []);
        @rmdir(self::$dir);
        Services::dropDatabase(self::$url);
    }

    /** @return iterable<string, array{0: string}> */
    public static function adapters(): iterable
    {
        yield 'plain PHP' => ['/plain'];
        yield 'Symfony HttpFoundation' => ['/symfony'];
        yield 'PSR-7' => ['/psr7'];
    }

    /** @dataProvider adapters */
    public function testSpec622TheRequestEndsBeforeTheWorkRuns(string $path): void
    {
        $id = 'evt_fpm_' . bin2hex(random_bytes(4));
        $d = Webhook::signTestDelivery(['id' => $id, 'type' => 'payment.succeeded', 'data' => ['object' => ['note' => 'Zoë']]], 'whsec_http_test');
        $answer = $this->post($path, $d['body'], $d['headers']);
        self::assertSame(200, $answer['status'], $answer['body'] . $answer['stderr'] . $this->log());
        self::assertSame('{"received":true}', $answer['body']);
        self::assertSame([], $this->processed($id), 'the work ran before php-fpm ended the request');
        touch(self::$dir . '/gates/' . $id);
        self::assertSame([$path], Services::waitUntil("the work of {$id}", fn () => $this->processed($id) ?: null));

        $forged = $this->post($path, $d['body'], ['Service-Event-Id' => $id, 'Service-Signature' => 't=1,v1=' . str_repeat('0', 64)]);
        self::assertSame(400, $forged['status']);
        self::assertSame('bad_signature', json_decode($forged['body'], true)['error']);
    }

    /**
     * @param array<string, string> $headers
     * @return array{status: int, headers: array<string, string>, body: string, stderr: string}
     */
    private function post(string $path, string $body, array $headers): array
    {
        $params = [
            'GATEWAY_INTERFACE' => 'FastCGI/1.0',
            'REQUEST_METHOD' => 'POST',
            'SCRIPT_FILENAME' => realpath(self::ROUTER),
            'SCRIPT_NAME' => '/index.php',
            'REQUEST_URI' => $path,
            'QUERY_STRING' => '',
            'SERVER_PROTOCOL' => 'HTTP/1.1',
            'SERVER_NAME' => 'shop.example',
            'SERVER_PORT' => '443',
            'REMOTE_ADDR' => '127.0.0.1',
            'CONTENT_TYPE' => 'application/json',
            'CONTENT_LENGTH' => (string) strlen($body),
        ];
        foreach ($headers as $name => $value) {
            $params['HTTP_' . strtoupper(str_replace('-', '_', $name))] = $value;
        }
        return FastCgi::request('127.0.0.1', self::$port, $params, $body);
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
        return "\n--- php-fpm ---\n" . @file_get_contents(self::$dir . '/fpm.log') . @file_get_contents(self::$dir . '/out.log');
    }
}
