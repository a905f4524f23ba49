<?php

declare(strict_types=1);

/**
 * The receiver's own PostgreSQL database: never the server's shared `postgres` database, so its
 * tables (payhooks_events, payhooks_credits, ledger_entries) live beside nothing else.
 */

use Payhooks\Receiver\Store\PostgresStore;

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/receiver_php';

const LEDGER_SQL = <<<'SQL'
    CREATE TABLE IF NOT EXISTS ledger_entries (
      id          bigserial PRIMARY KEY,
      account     text NOT NULL,
      amount      numeric(20, 2) NOT NULL,
      asset_code  text NOT NULL,
      payment_id  text NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now()
    )
    SQL;

/** One line on stderr (php://stderr also works under `php -S`, where STDERR is not defined). */
function log_line(string $message): void
{
    file_put_contents('php://stderr', '[' . gmdate('Y-m-d\\TH:i:s\\Z') . "] [receiver] {$message}\n");
}

/**
 * Under `php -S -q` PHP's own error log is silent: log what would escape (an uncaught exception, a
 * fatal error) as one line on stderr, and answer 500.
 */
function log_uncaught_errors(): void
{
    set_exception_handler(static function (Throwable $e): void {
        log_line('uncaught ' . get_class($e) . ': ' . $e->getMessage() . ' (' . basename($e->getFile()) . ':' . $e->getLine() . ')');
        if (!headers_sent()) {
            http_response_code(500);
        }
    });
    register_shutdown_function(static function (): void {
        $error = error_get_last();
        if ($error !== null && in_array($error['type'], [E_ERROR, E_PARSE, E_CORE_ERROR, E_COMPILE_ERROR], true)) {
            log_line('fatal error: ' . strtok($error['message'], "\n") . ' (' . basename($error['file']) . ':' . $error['line'] . ')');
        }
    });
}

function database_url(): string
{
    return getenv('DATABASE_URL') ?: DEFAULT_DATABASE_URL;
}

/**
 * A connection to the database, created first if it does not exist yet (as `createdb` would; the
 * server's maintenance database is used for that one statement only). Any other failure (server
 * down, authentication) is thrown as is.
 */
function open_database(string $url): PDO
{
    try {
        return PostgresStore::pdoFromUrl($url);
    } catch (PDOException $e) {
        // libpq reports a missing database as a connection failure: only its message tells.
        if (!preg_match('/database "[^"]*" does not exist/', $e->getMessage())) {
            throw $e;
        }
    }
    $name = rawurldecode(ltrim((string) parse_url($url, PHP_URL_PATH), '/'));
    $maintenance = preg_replace('#^([^/]*//[^/]*)/[^?]*#', '$1/postgres', $url, 1);
    $admin = PostgresStore::pdoFromUrl((string) $maintenance);
    try {
        $admin->exec('CREATE DATABASE "' . str_replace('"', '""', $name) . '"');
        log_line("created database {$name}");
    } catch (PDOException $e) {
        if ($e->getCode() !== '42P04') { // another process created it first
            throw $e;
        }
    }
    return PostgresStore::pdoFromUrl($url);
}
