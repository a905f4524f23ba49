<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Support;

use Payhooks\Receiver\Event;
use Payhooks\Receiver\Store\Claim;
use Payhooks\Receiver\Store\CreditStore;
use Payhooks\Receiver\Store\WebhookStore;
use PHPUnit\Framework\TestCase;

/**
 * What every store must do (spec 6.2.1 and 6.2.3), run against each of them on the real service.
 * Times are the store's own clock: leases and delays are a few milliseconds, waited for by polling.
 */
abstract class StoreContractTestCase extends TestCase
{
    abstract protected function store(): WebhookStore&CreditStore;

    protected static function event(string $id, string $type = 'payment.succeeded'): Event
    {
        return Event::fromJson(json_encode(['id' => $id, 'object' => 'event', 'type' => $type, 'data' => ['object' => ['id' => 'pay_' . $id, 'metadata' => ['account' => 'acct_1', 'note' => 'Zoë 🚀']]]], JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR));
    }

    protected static function id(string $name): string
    {
        return 'evt_' . $name . '_' . bin2hex(random_bytes(4));
    }

    public function testSpec621ClaimIsAnInsertOrIgnore(): void
    {
        $store = $this->store();
        $id = self::id('claim');
        $claim = $store->claim(self::event($id), 60_000);
        self::assertInstanceOf(Claim::class, $claim);
        self::assertSame(1, $claim->attempt);
        self::assertNull($store->claim(self::event($id), 60_000), 'held under a live lease');
        self::assertFalse($store->enqueue(self::event($id)));
        self::assertSame(['state' => 'processing', 'attempts' => 1, 'last_error' => null], $store->inspect($id));
        $store->complete($claim);
        self::assertSame('done', $store->inspect($id)['state']);
        self::assertNull($store->claim(self::event($id), 60_000), 'done');
        self::assertFalse($store->enqueue(self::event($id)));
        self::assertNull($store->inspect(self::id('never')));
    }

    public function testFailedWorkWaitsForItsRetryAndComesBackWithTheEvent(): void
    {
        $store = $this->store();
        $id = self::id('retry');
        $claim = $store->claim(self::event($id), 60_000);
        $store->retryLater($claim, 60_000, new \RuntimeException('ledger locked'));
        self::assertSame('pending', $store->inspect($id)['state']);
        self::assertStringContainsString('RuntimeException: ledger locked', (string) $store->inspect($id)['last_error']);
        self::assertNull($store->claim(self::event($id), 60_000), 'waiting for a retry is seen');
        self::assertNotContains($id, $this->dueIds($store->claimDue(100, 60_000)), 'not due for a minute');

        $soon = self::id('retry_soon');
        $store->retryLater($store->claim(self::event($soon), 60_000), 5, new \RuntimeException('once'));
        $due = Services::waitUntil('the retry to be due', fn () => $this->find($store->claimDue(100, 60_000), $soon));
        self::assertSame(2, $due->claim->attempt);
        self::assertSame($soon, $due->event->id);
        self::assertSame('payment.succeeded', $due->event->type);
        // Whole (PostgreSQL's jsonb may reorder the keys).
        self::assertEquals(self::event($soon)->payload, $due->event->payload);
        self::assertSame('processing', $store->inspect($soon)['state']);
        $store->complete($due->claim);
        self::assertSame('done', $store->inspect($soon)['state']);
    }

    public function testFailedForGoodIsKeptThenAReplayOrARequeueRunsItAgain(): void
    {
        $store = $this->store();
        $id = self::id('failed');
        $store->markFailed($store->claim(self::event($id), 60_000), new \RuntimeException("payment has no metadata.account \xC3("));
        $row = $store->inspect($id);
        self::assertSame('failed', $row['state']);
        self::assertStringContainsString('no metadata.account', (string) $row['last_error']);
        self::assertNotContains($id, $this->dueIds($store->claimDue(100, 60_000)));
        // A replay (a new delivery of the id) takes it over as a first attempt.
        $replay = $store->claim(self::event($id), 60_000);
        self::assertNotNull($replay);
        self::assertSame(1, $replay->attempt);
        $store->markFailed($replay, new \RuntimeException('still no account'));
        // Or an operator requeues it.
        self::assertSame(1, $store->requeueFailed($id));
        self::assertSame(0, $store->requeueFailed($id));
        $due = Services::waitUntil('the requeued event', fn () => $this->find($store->claimDue(100, 60_000), $id));
        self::assertSame(1, $due->claim->attempt);
        $store->complete($due->claim);
        self::assertSame('done', $store->inspect($id)['state']);
    }

    public function testWorkWhoseHolderDiedIsTakenOverAndTheOldHolderIsFencedOff(): void
    {
        $store = $this->store();
        $id = self::id('lease');
        $dead = $store->claim(self::event($id), 5);
        $taken = Services::waitUntil('the lease to expire', fn () => $this->find($store->claimDue(100, 60_000), $id));
        self::assertSame(2, $taken->claim->attempt);
        self::assertNotSame($dead->token, $taken->claim->token);
        // The first holder wakes up: its writes change nothing.
        $store->complete($dead);
        $store->markFailed($dead, new \RuntimeException('late'));
        self::assertSame('processing', $store->inspect($id)['state']);
        $store->complete($taken->claim);
        self::assertSame('done', $store->inspect($id)['state']);
        // A redelivery also takes over an expired lease.
        $other = self::id('lease2');
        $store->claim(self::event($other), 5);
        $again = Services::waitUntil('a redelivery to take over', fn () => $store->claim(self::event($other), 60_000));
        self::assertSame(2, $again->attempt);
    }

    public function testEnqueuedWorkIsDueAtOnceAndClaimDueRespectsItsLimit(): void
    {
        $store = $this->store();
        $ids = [self::id('q1'), self::id('q2'), self::id('q3')];
        foreach ($ids as $id) {
            self::assertTrue($store->enqueue(self::event($id)));
            self::assertSame(['state' => 'pending', 'attempts' => 0, 'last_error' => null], $store->inspect($id));
        }
        self::assertFalse($store->enqueue(self::event($ids[0])));
        self::assertNull($store->claim(self::event($ids[0]), 60_000));
        $seen = [];
        Services::waitUntil('all three queued events', function () use ($store, $ids, &$seen) {
            $batch = $store->claimDue(1, 60_000);
            self::assertLessThanOrEqual(1, count($batch));
            foreach ($batch as $due) {
                self::assertSame(1, $due->claim->attempt);
                $store->complete($due->claim);
                $seen[] = $due->event->id;
            }
            return array_values(array_intersect($ids, $seen)) === $ids;
        });
        self::assertSame([], $store->claimDue(0, 60_000));
    }

    public function testSpec623CreditOnce(): void
    {
        $store = $this->store();
        $payment = 'pay_' . bin2hex(random_bytes(4));
        $first = $store->creditOnce($payment, fn () => 'credited 12.34');
        self::assertTrue($first->credited);
        self::assertSame('credited 12.34', $first->value);
        $calls = 0;
        $second = $store->creditOnce($payment, function () use (&$calls) {
            $calls++;
        });
        self::assertFalse($second->credited);
        self::assertSame(0, $calls);

        $other = 'pay_' . bin2hex(random_bytes(4));
        try {
            $store->creditOnce($other, function (): void {
                throw new \DomainException('ledger full');
            });
            self::fail('the exception was swallowed');
        } catch (\DomainException $e) {
            self::assertSame('ledger full', $e->getMessage());
        }
        self::assertTrue($store->creditOnce($other, fn () => 1)->credited, 'a failed credit leaves no marker');
        $this->expectException(\InvalidArgumentException::class);
        $store->creditOnce('', fn () => 1);
    }

    /** @param list<\Payhooks\Receiver\Store\DueEvent> $due */
    private function find(array $due, string $id): ?\Payhooks\Receiver\Store\DueEvent
    {
        foreach ($due as $item) {
            if ($item->event->id === $id) {
                return $item;
            }
        }
        return null;
    }

    /**
     * @param list<\Payhooks\Receiver\Store\DueEvent> $due
     * @return list<string>
     */
    private function dueIds(array $due): array
    {
        return array_map(static fn ($d): string => $d->event->id, $due);
    }
}
