<?php

declare(strict_types=1);

/*
 * The webhook handler, shared by the web routes (router.php) and the worker
 * (payhooks-worker webhooks.php): verify, record the evt_ id with the event in PostgreSQL, answer
 * 200 at once, then credit `payment.succeeded` once per payment id. Returns the WebhookHandler.
 */

use Payhooks\Receiver\ErrorInfo;
use Payhooks\Receiver\Event;
use Payhooks\Receiver\EventTypes;
use Payhooks\Receiver\Store\PostgresStore;
use Payhooks\Receiver\WebhookHandler;
use Payhooks\Receiver\WebhookVerificationException;

// With Composer: require 'vendor/autoload.php' (composer require payhooks/receiver).
require_once is_file(__DIR__ . '/vendor/autoload.php') ? __DIR__ . '/vendor/autoload.php' : __DIR__ . '/../../sdks/php/autoload.php';
require_once __DIR__ . '/database.php';

$pdo = PostgresStore::pdoFromUrl(database_url()); // setup.php created it
$store = new PostgresStore($pdo); // payhooks_events and payhooks_credits

/** Credits a succeeded payment exactly once, whoever asks: the webhook, a replay, a status poll. */
$creditPayment = static function (array $payment) use ($store): void {
    // `payhooks check-receiver` sends made-up payments (metadata.payhooks_check): nothing to credit.
    if (($payment['metadata']['payhooks_check'] ?? null) === true) {
        log_line("{$payment['id']} is a payhooks check-receiver test payment; nothing to credit");
        return;
    }
    $account = $payment['metadata']['account'] ?? null;
    if (!is_string($account) || $account === '') {
        // Retried, then kept as a failed row in payhooks_events for a human to look at.
        throw new RuntimeException("payment {$payment['id']} has no metadata.account");
    }
    $store->creditOnce($payment['id'], static function (PDO $tx) use ($payment, $account): void {
        $tx->prepare('INSERT INTO ledger_entries (account, amount, asset_code, payment_id) VALUES (?, ?, ?, ?)')
            ->execute([$account, $payment['amount'], $payment['asset_code'], $payment['id']]);
    });
};

return new WebhookHandler(
    secret: array_map('trim', explode(',', (string) getenv('PAYHOOKS_WEBHOOK_SECRET'))), // several during a rotation
    store: $store,
    types: [EventTypes::PAYMENT_SUCCEEDED], // every other type: 200 and ignored
    onEvent: static function (Event $event) use ($creditPayment): void {
        if (($event->object()['status'] ?? null) === 'succeeded') {
            $creditPayment($event->object());
        }
    },
    // One line per failed attempt at the work (the event and the reason), not a stack trace.
    onError: static function (Throwable $error, ErrorInfo $info): void {
        $where = $info->event !== null ? " for {$info->event->id} (attempt {$info->attempt})" : '';
        log_line("{$info->phase} error{$where}: {$error->getMessage()}" . ($info->willRetry ? '; will retry' : '; kept as failed'));
    },
    // A delivery refused with 400 (wrong secret, tampered body, stale timestamp): one line.
    onRejected: static function (WebhookVerificationException $error): void {
        log_line("rejected a delivery with 400: {$error->reason->value}: {$error->getMessage()}");
    },
);
