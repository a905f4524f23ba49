<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Integration;

use Payhooks\Receiver\CreditInProgressException;
use Payhooks\Receiver\Store\CreditStore;
use Payhooks\Receiver\Store\RedisStore;
use Payhooks\Receiver\Store\Support;
use Payhooks\Receiver\Store\WebhookStore;
use Payhooks\Receiver\Tests\Support\Race;
use Payhooks\Receiver\Tests\Support\Services;
use Payhooks\Receiver\Tests\Support\StoreContractTestCase;

/** The Redis store on a real server, under a key prefix of its own. */
final class RedisStoreTest extends StoreContractTestCase
{
    private static \Redis $redis;
    private static string $prefix;

    public static function setUpBeforeClass(): void
    {
        self::$redis = Services::redis();
        self::$prefix = 'payhooks_php_test_' . bin2hex(random_bytes(4)) . ':';
    }

    public static function tearDownAfterClass(): void
    {
        Services::deleteKeys(self::$redis, self::$prefix);
    }

    protected function store(): WebhookStore&CreditStore
    {
        return new RedisStore(self::$redis, self::$prefix);
    }

    public function testSpec8DoneIdsExpireAfter30DaysAndFailedOrPendingOnesDoNot(): void
    {
        $store = new RedisStore(self::$redis, self::$prefix);
        $done = self::id('ttl');
        $store->complete($store->claim(self::event($done), 60_000));
        $ttl = self::$redis->pTTL($store->eventKey($done));
        self::assertGreaterThan(Support::RETENTION_MS - 60_000, $ttl);
        self::assertLessThanOrEqual(Support::RETENTION_MS, $ttl);
        self::assertSame([], array_diff(self::$redis->hKeys($store->eventKey($done)), ['state', 'type', 'attempts', 'updated']), 'the payload is dropped once done');
        $failed = self::id('ttl_failed');
        $store->markFailed($store->claim(self::event($failed), 60_000), new \RuntimeException('x'));
        self::assertSame(-1, self::$redis->pTTL($store->eventKey($failed)));
        $pending = self::id('ttl_pending');
        $store->retryLater($store->claim(self::event($pending), 60_000), 60_000, new \RuntimeException('x'));
        self::assertSame(-1, self::$redis->pTTL($store->eventKey($pending)));
        self::assertSame(0, $store->purge());
    }

    public function testSpec621ConcurrentCopiesOfADeliveryGetOneClaim(): void
    {
        $results = Race::run(8, 'redis', self::$prefix, 'claim', self::id('race'));
        self::assertSame(1, count(array_filter($results, static fn (array $r): bool => $r['claimed'])), json_encode($results));
    }

    public function testSpec623ConcurrentCreditsOfAPaymentCreditOnce(): void
    {
        $payment = 'pay_race_' . bin2hex(random_bytes(4));
        $results = Race::run(8, 'redis', self::$prefix, 'credit', $payment);
        self::assertSame(1, count(array_filter($results, static fn (array $r): bool => $r['credited'])), json_encode($results));
        self::assertSame('1', self::$redis->get(self::$prefix . 'ledger:' . $payment));
    }

    public function testACreditStuckInProgressIsNeverRepeated(): void
    {
        $store = new RedisStore(self::$redis, self::$prefix, creditWaitMs: 50);
        $payment = 'pay_stuck_' . bin2hex(random_bytes(4));
        // A process died inside its callback: the marker stays pending.
        self::$redis->set($store->creditKey($payment), 'pending:dead-process');
        try {
            $store->creditOnce($payment, fn () => self::fail('credited a payment whose credit may have happened'));
            self::fail('no CreditInProgressException');
        } catch (CreditInProgressException $e) {
            self::assertSame($payment, $e->paymentId);
        }
    }

    public function testAClientWithASerializerIsRefused(): void
    {
        $redis = Services::redis();
        $redis->setOption(\Redis::OPT_SERIALIZER, \Redis::SERIALIZER_PHP);
        $this->expectException(\InvalidArgumentException::class);
        new RedisStore($redis);
    }
}
