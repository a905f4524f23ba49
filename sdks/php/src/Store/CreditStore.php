<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Store;

/**
 * Crediting idempotent on `payment.id`: `$fn` runs, and its credit counts, at most once per payment
 * id, whoever calls (the webhook, its replay, a status poll from your server), however concurrently.
 * When `$fn` throws, nothing is marked and the exception is rethrown, so a later call can credit.
 */
interface CreditStore
{
    /**
     * @param callable $fn receives the store's transaction handle (PostgresStore: the \PDO inside
     *                     the transaction; the others: nothing) and does the credit
     */
    public function creditOnce(string $paymentId, callable $fn): CreditResult;
}
