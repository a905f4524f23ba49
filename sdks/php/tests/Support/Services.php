<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Support;

use Payhooks\Receiver\Store\PostgresStore;

/** The real services the integration tests use, and the shared signature vectors. */
final class Services
{
    /** The server's maintenance database: each test class creates and drops a database of its own. */
    public static function adminUrl(): string
    {
        return getenv('PAYHOOKS_TEST_DATABASE_URL') ?: 'postgres://postgres@127.0.0.1:5432/postgres';
    }

    /** @return array{0: string, 1: \PDO} the new database's URL and a connection to it */
    public static function createDatabase(): array
    {
        $name = 'payhooks_php_' . bin2hex(random_bytes(5));
        PostgresStore::pdoFromUrl(self::adminUrl())->exec("CREATE DATABASE {$name}");
        $url = preg_replace('#/[^/?]*(\?|$)#', "/{$name}$1", self::adminUrl(), 1);
        return [$url, PostgresStore::pdoFromUrl($url)];
    }

    public static function dropDatabase(string $url): void
    {
        $name = basename((string) parse_url($url, PHP_URL_PATH));
        PostgresStore::pdoFromUrl(self::adminUrl())->exec("DROP DATABASE IF EXISTS {$name} WITH (FORCE)");
    }

    /** @return array{host: string, port: int} */
    public static function redisAddress(): array
    {
        $parts = parse_url(getenv('PAYHOOKS_TEST_REDIS_URL') ?: 'redis://127.0.0.1:6379');
        return ['host' => $parts['host'] ?? '127.0.0.1', 'port' => (int) ($parts['port'] ?? 6379)];
    }

    public static function redis(): \Redis
    {
        $address = self::redisAddress();
        $redis = new \Redis();
        $redis->connect($address['host'], $address['port'], 5.0);
        return $redis;
    }

    /** Deletes the keys a test wrote under its prefix. */
    public static function deleteKeys(\Redis $redis, string $prefix): void
    {
        $iterator = null;
        while (($keys = $redis->scan($iterator, $prefix . '*', 500)) !== false) {
            if ($keys !== []) {
                $redis->del($keys);
            }
            if ($iterator === 0) {
                break;
            }
        }
    }

    /**
     * The shared vectors: packages/contract/test-vectors/webhook-signatures.json of the repository
     * (PAYHOOKS_TEST_VECTORS to point elsewhere).
     *
     * @return array<string, mixed>
     */
    public static function vectors(): array
    {
        $path = getenv('PAYHOOKS_TEST_VECTORS') ?: __DIR__ . '/../../../../packages/contract/test-vectors/webhook-signatures.json';
        $json = file_get_contents($path);
        if ($json === false) {
            throw new \RuntimeException("cannot read the shared test vectors at {$path}");
        }
        return json_decode($json, true, 512, JSON_THROW_ON_ERROR);
    }

    /** Polls $check until it returns something other than false/null, or fails after $timeoutS. */
    public static function waitUntil(string $what, callable $check, float $timeoutS = 30.0): mixed
    {
        $deadline = microtime(true) + $timeoutS;
        for (;;) {
            $value = $check();
            if ($value !== false && $value !== null) {
                return $value;
            }
            if (microtime(true) > $deadline) {
                throw new \RuntimeException("timed out waiting for {$what}");
            }
            usleep(20_000);
        }
    }

    /** A TCP port nobody listens on right now. */
    public static function freePort(): int
    {
        $socket = stream_socket_server('tcp://127.0.0.1:0', $errno, $error);
        if ($socket === false) {
            throw new \RuntimeException("cannot find a free port: {$error}");
        }
        $name = stream_socket_get_name($socket, false);
        fclose($socket);
        return (int) substr((string) strrchr((string) $name, ':'), 1);
    }
}
