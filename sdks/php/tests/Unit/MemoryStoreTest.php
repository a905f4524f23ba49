<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Unit;

use Payhooks\Receiver\CreditInProgressException;
use Payhooks\Receiver\Store\CreditStore;
use Payhooks\Receiver\Store\MemoryStore;
use Payhooks\Receiver\Store\WebhookStore;
use Payhooks\Receiver\Tests\Support\StoreContractTestCase;

final class MemoryStoreTest extends StoreContractTestCase
{
    private int $offset = 0;

    protected function store(): WebhookStore&CreditStore
    {
        return new MemoryStore(clock: fn (): int => (int) floor(microtime(true) * 1000) + $this->offset);
    }

    public function testSpec8DoneIdsArePurgedAfter30DaysOnly(): void
    {
        $store = $this->store();
        $store->complete($store->claim(self::event('evt_old'), 1000));
        $this->offset = 30 * 24 * 3600 * 1000 - 60_000;
        self::assertSame(0, $store->purge());
        $this->offset = 30 * 24 * 3600 * 1000 + 1000;
        self::assertSame(1, $store->purge());
        self::assertNull($store->inspect('evt_old'));
    }

    public function testANestedCreditOfTheSamePaymentIsRefusedNotDoubled(): void
    {
        $store = $this->store();
        $this->expectException(CreditInProgressException::class);
        $store->creditOnce('pay_nested', fn () => $store->creditOnce('pay_nested', fn () => 1));
    }
}
