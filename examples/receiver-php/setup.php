<?php

declare(strict_types=1);

// Run once by `start`, before the server and the worker: the database, the ledger and the
// library's tables, and a clear message when the secret is missing.
require_once is_file(__DIR__ . '/vendor/autoload.php') ? __DIR__ . '/vendor/autoload.php' : __DIR__ . '/../../sdks/php/autoload.php';
require_once __DIR__ . '/database.php';

use Payhooks\Receiver\Store\PostgresStore;
use Payhooks\Receiver\Webhook;

try {
    Webhook::secrets(array_map('trim', explode(',', (string) getenv('PAYHOOKS_WEBHOOK_SECRET'))));
} catch (InvalidArgumentException) {
    log_line("set PAYHOOKS_WEBHOOK_SECRET to the endpoint's whsec_... signing secret (comma-separated during a rotation)");
    exit(1);
}
$pdo = open_database(database_url());
$pdo->exec(LEDGER_SQL);
(new PostgresStore($pdo))->migrate();
