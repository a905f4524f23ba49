<?php

declare(strict_types=1);

/*
 * The routes, for PHP's built-in server (`php -S 127.0.0.1:4242 router.php`). Under nginx or
 * Apache with php-fpm, point every request at this file the same way.
 */

use Payhooks\Receiver\Adapter\PlainPhpAdapter;
use Payhooks\Receiver\Store\PostgresStore;

require_once is_file(__DIR__ . '/vendor/autoload.php') ? __DIR__ . '/vendor/autoload.php' : __DIR__ . '/../../sdks/php/autoload.php';
require_once __DIR__ . '/database.php';
log_uncaught_errors();

$path = (string) parse_url($_SERVER['REQUEST_URI'] ?? '/', PHP_URL_PATH);
$method = $_SERVER['REQUEST_METHOD'] ?? 'GET';

function json_answer(int $status, array $body): void
{
    http_response_code($status);
    header('Content-Type: application/json; charset=utf-8');
    echo json_encode($body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
}

if ($path === '/webhooks/payhooks') {
    // Verify over the raw body (php://input), record, answer 200, finish the response, then the work.
    $webhooks = require __DIR__ . '/webhooks.php';
    PlainPhpAdapter::handle($webhooks);
    return;
}

if ($method === 'GET' && preg_match('#^/accounts/([^/]+)/balance$#D', $path, $m) === 1) {
    $account = rawurldecode($m[1]);
    $statement = PostgresStore::pdoFromUrl(database_url())->prepare(
        'SELECT asset_code, sum(amount)::text AS balance FROM ledger_entries WHERE account = ? GROUP BY asset_code ORDER BY asset_code',
    );
    $statement->execute([$account]);
    json_answer(200, ['account' => $account, 'balances' => $statement->fetchAll(PDO::FETCH_ASSOC)]);
    return;
}

if ($method === 'GET' && $path === '/checkout/return') {
    // Where the checkout sends the customer back. It never credits: the redirect may be forged,
    // may come before the webhook, or never come.
    header('Content-Type: text/plain; charset=utf-8');
    echo "Thanks! Your payment is being confirmed; your balance updates as soon as it is.\n";
    return;
}

json_answer(404, ['error' => 'not_found']);
