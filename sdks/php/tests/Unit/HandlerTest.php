<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Unit;

use Payhooks\Receiver\ErrorInfo;
use Payhooks\Receiver\Event;
use Payhooks\Receiver\EventContext;
use Payhooks\Receiver\Processing;
use Payhooks\Receiver\Store\Claim;
use Payhooks\Receiver\Store\MemoryStore;
use Payhooks\Receiver\Store\WebhookStore;
use Payhooks\Receiver\Webhook;
use Payhooks\Receiver\WebhookHandler;
use Payhooks\Receiver\WebhookVerificationException;
use PHPUnit\Framework\TestCase;

/** Spec 6.2 in order, on the memory store with a clock the test moves. */
final class HandlerTest extends TestCase
{
    private const SECRET = 'whsec_handler_test';

    private int $now = 1_767_225_600_000;
    /** @var list<array{0: string, 1: int}> */
    private array $ran = [];
    /** @var list<array{0: string, 1: ErrorInfo}> */
    private array $errors = [];
    /** @var list<string> */
    private array $rejected = [];
    private MemoryStore $store;

    protected function setUp(): void
    {
        $this->store = new MemoryStore(clock: fn (): int => $this->now);
    }

    /** @param array<string, mixed> $options */
    private function handler(callable $onEvent = null, array $options = []): WebhookHandler
    {
        return new WebhookHandler(...$options + [
            'secret' => self::SECRET,
            'store' => $this->store,
            'onEvent' => $onEvent ?? function (Event $event, EventContext $context): void {
                $this->ran[] = [$event->id, $context->attempt];
            },
            'onError' => function (\Throwable $e, ErrorInfo $info): void {
                $this->errors[] = [$e->getMessage(), $info];
            },
            'onRejected' => function (WebhookVerificationException $e): void {
                $this->rejected[] = $e->reason->value;
            },
            'clock' => fn (): int => $this->now,
        ]);
    }

    /** @return array{body: string, headers: array<string, string>} */
    private function delivery(string $id = 'evt_h_1', string $type = 'payment.succeeded'): array
    {
        return Webhook::signTestDelivery(
            ['id' => $id, 'object' => 'event', 'type' => $type, 'data' => ['object' => ['id' => 'pay_' . $id, 'object' => 'payment']]],
            self::SECRET,
            intdiv($this->now, 1000),
        );
    }

    public function testSpec62RecordsAcknowledgesThenProcessesAfterTheResponse(): void
    {
        $webhooks = $this->handler();
        $d = $this->delivery();
        $response = $webhooks->receive($d['body'], $d['headers']);
        self::assertSame(200, $response->status);
        self::assertSame(['received' => true], json_decode($response->body, true));
        self::assertSame('application/json; charset=utf-8', $response->headers['Content-Type']);
        // Recorded before the answer, processed only after it.
        self::assertSame('processing', $this->store->inspect('evt_h_1')['state']);
        self::assertSame([], $this->ran);
        self::assertTrue($webhooks->hasPendingWork());
        self::assertSame(1, $webhooks->afterResponse());
        self::assertSame([['evt_h_1', 1]], $this->ran);
        self::assertSame('done', $this->store->inspect('evt_h_1')['state']);
        self::assertFalse($webhooks->hasPendingWork());
    }

    public function testSpec621ADuplicateIsAcknowledgedAndNotProcessedAgain(): void
    {
        $webhooks = $this->handler();
        $d = $this->delivery();
        $webhooks->receive($d['body'], $d['headers']);
        // While the first is still in hand, then after it is done.
        self::assertSame(['received' => true, 'duplicate' => true], json_decode($webhooks->receive($d['body'], $d['headers'])->body, true));
        $webhooks->afterResponse();
        $again = $webhooks->receive($d['body'], $d['headers']);
        self::assertSame(200, $again->status);
        self::assertSame(['received' => true, 'duplicate' => true], json_decode($again->body, true));
        $webhooks->afterResponse();
        self::assertSame([['evt_h_1', 1]], $this->ran);
    }

    public function testSpec517AFailedVerificationIs400WithTheReasonAndNothingIsRecorded(): void
    {
        $webhooks = $this->handler();
        $d = $this->delivery();
        $tampered = str_replace('pay_evt_h_1', 'pay_evil', $d['body']);
        $response = $webhooks->receive($tampered, $d['headers']);
        self::assertSame(400, $response->status);
        $body = json_decode($response->body, true);
        self::assertSame('bad_signature', $body['error']);
        self::assertIsString($body['message']);
        self::assertSame(['bad_signature'], $this->rejected);
        self::assertNull($this->store->inspect('evt_h_1'));
        self::assertSame(0, $webhooks->afterResponse());
        self::assertSame([], $this->ran);
        $stale = $this->delivery();
        $this->now += 301_000;
        self::assertSame('timestamp_out_of_tolerance', json_decode($webhooks->receive($stale['body'], $stale['headers'])->body, true)['error']);
    }

    public function testSpec611TypesNotHandledAreAcknowledgedAndIgnored(): void
    {
        $webhooks = $this->handler(options: ['types' => ['payment.succeeded']]);
        foreach (['payment.failed', 'payment.refunded_in_the_future'] as $i => $type) {
            $d = $this->delivery("evt_t_{$i}", $type);
            $response = $webhooks->receive($d['body'], $d['headers']);
            self::assertSame(200, $response->status);
            self::assertSame(['received' => true, 'ignored' => true], json_decode($response->body, true));
        }
        $webhooks->afterResponse();
        self::assertSame([], $this->ran);
        // Without `types`, every type reaches onEvent, which ignores what it does not know.
        $all = $this->handler();
        $d = $this->delivery('evt_t_new', 'payment.refunded_in_the_future');
        self::assertSame(200, $all->receive($d['body'], $d['headers'])->status);
        $all->afterResponse();
        self::assertSame([['evt_t_new', 1]], $this->ran);
    }

    public function testATypoInTypesIsRefusedWhenTheHandlerIsCreated(): void
    {
        $this->expectException(\InvalidArgumentException::class);
        $this->expectExceptionMessage('payment.succeded');
        $this->handler(options: ['types' => ['payment.succeded']]);
    }

    public function testFailedWorkIsRetriedOnTheScheduleThenKeptAsFailedAndAReplayRunsItAgain(): void
    {
        $fail = true;
        $webhooks = $this->handler(function (Event $event, EventContext $context) use (&$fail): void {
            $this->ran[] = [$event->id, $context->attempt];
            self::assertSame(3, $context->maxAttempts);
            if ($fail) {
                throw new \RuntimeException("no account for {$event->id}");
            }
        }, ['retryDelaysMs' => [1_000, 10_000], 'dueAfterResponse' => 0]);
        $d = $this->delivery();
        $webhooks->receive($d['body'], $d['headers']);
        $webhooks->afterResponse();
        self::assertSame(['state' => 'pending', 'attempts' => 1], array_slice($this->store->inspect('evt_h_1'), 0, 2));
        self::assertStringContainsString('RuntimeException: no account for evt_h_1', $this->store->inspect('evt_h_1')['last_error']);
        self::assertSame(ErrorInfo::PROCESS, $this->errors[0][1]->phase);
        self::assertTrue($this->errors[0][1]->willRetry);
        // A redelivery while the retry waits is a duplicate.
        self::assertStringContainsString('duplicate', $webhooks->receive($d['body'], $d['headers'])->body);
        self::assertSame(0, $webhooks->runDue(), 'not due before its delay');
        $this->now += 1_000;
        self::assertSame(1, $webhooks->runDue());
        self::assertSame(0, $webhooks->runDue());
        $this->now += 10_000;
        self::assertSame(1, $webhooks->runDue());
        self::assertSame([['evt_h_1', 1], ['evt_h_1', 2], ['evt_h_1', 3]], $this->ran);
        self::assertSame('failed', $this->store->inspect('evt_h_1')['state']);
        self::assertFalse($this->errors[2][1]->willRetry);
        $this->now += 3_600_000;
        self::assertSame(0, $webhooks->runDue(), 'a failed event waits for a human or a replay');
        // A replay from the Portal (the same evt_ id, signed again) is processed, not a duplicate.
        $fail = false;
        $replay = $this->delivery();
        self::assertSame(['received' => true], json_decode($webhooks->receive($replay['body'], $replay['headers'])->body, true));
        $webhooks->afterResponse();
        self::assertSame(['evt_h_1', 1], $this->ran[3]);
        self::assertSame('done', $this->store->inspect('evt_h_1')['state']);
    }

    public function testDueRetriesRunAfterLaterResponsesWithoutAWorker(): void
    {
        $failures = 1;
        $webhooks = $this->handler(function (Event $event, EventContext $context) use (&$failures): void {
            $this->ran[] = [$event->id, $context->attempt];
            if ($event->id === 'evt_h_1' && $failures-- > 0) {
                throw new \RuntimeException('database busy');
            }
        });
        $d = $this->delivery();
        $webhooks->receive($d['body'], $d['headers']);
        $webhooks->afterResponse();
        $this->now += 1_000;
        self::assertSame(0, $webhooks->afterResponse(), 'a request that received no delivery (kernel.terminate after any page) does nothing');
        $next = $this->delivery('evt_h_2');
        $webhooks->receive($next['body'], $next['headers']);
        self::assertSame(2, $webhooks->afterResponse());
        self::assertSame([['evt_h_1', 1], ['evt_h_2', 1], ['evt_h_1', 2]], $this->ran);
        self::assertSame('done', $this->store->inspect('evt_h_1')['state']);
    }

    public function testWorkWhoseProcessDiedIsTakenOverAfterTheLease(): void
    {
        $webhooks = $this->handler(options: ['leaseMs' => 60_000]);
        $d = $this->delivery();
        $webhooks->receive($d['body'], $d['headers']);
        // The process dies here: afterResponse() never runs.
        $other = $this->handler(options: ['leaseMs' => 60_000]);
        self::assertSame(0, $other->runDue());
        self::assertStringContainsString('duplicate', $other->receive($d['body'], $d['headers'])->body);
        $this->now += 60_001;
        self::assertSame(1, $other->runDue());
        self::assertSame([['evt_h_1', 2]], $this->ran);
        // The dead holder's late writes are fenced off by its token.
        $this->store->retryLater(new Claim('evt_h_1', 'stale-token', 1), 0, new \RuntimeException('late'));
        self::assertSame('done', $this->store->inspect('evt_h_1')['state']);
    }

    public function testProcessingWorkerRecordsAndAnswersAndTheWorkerRunsTheWork(): void
    {
        $webhooks = $this->handler(options: ['processing' => Processing::Worker]);
        $d = $this->delivery();
        self::assertSame(['received' => true], json_decode($webhooks->receive($d['body'], $d['headers'])->body, true));
        self::assertSame('pending', $this->store->inspect('evt_h_1')['state']);
        self::assertFalse($webhooks->hasPendingWork());
        self::assertSame(0, $webhooks->afterResponse());
        self::assertStringContainsString('duplicate', $webhooks->receive($d['body'], $d['headers'])->body);
        self::assertSame(1, $webhooks->runDue());
        self::assertSame([['evt_h_1', 1]], $this->ran);
        self::assertSame('done', $this->store->inspect('evt_h_1')['state']);
    }

    public function testWorkLoopStopsWhenAskedAndRunsWhatIsDue(): void
    {
        $webhooks = $this->handler(options: ['processing' => Processing::Worker]);
        foreach (['evt_w_1', 'evt_w_2'] as $id) {
            $d = $this->delivery($id);
            $webhooks->receive($d['body'], $d['headers']);
        }
        $webhooks->work(10, fn (): bool => count($this->ran) === 2);
        self::assertSame([['evt_w_1', 1], ['evt_w_2', 1]], $this->ran);
    }

    public function testSpec8TheStoreDownOnReceiptIs500AndNothingIsAcknowledged(): void
    {
        $store = $this->createMock(WebhookStore::class);
        $store->method('claim')->willThrowException(new \RuntimeException('connection refused'));
        $webhooks = new WebhookHandler(self::SECRET, $store, fn () => null, onError: function (\Throwable $e, ErrorInfo $info): void {
            $this->errors[] = [$e->getMessage(), $info];
        });
        $d = Webhook::signTestDelivery(['id' => 'evt_down', 'type' => 'payment.succeeded'], self::SECRET);
        $response = $webhooks->receive($d['body'], $d['headers']);
        self::assertSame(500, $response->status);
        self::assertSame(['error' => 'store_unavailable'], json_decode($response->body, true));
        self::assertSame('store', $this->errors[0][1]->phase);
        self::assertTrue($this->errors[0][1]->willRetry);
    }

    public function testABodyOverTheLimitIs413AndNothingIsRecorded(): void
    {
        $webhooks = $this->handler(options: ['maxBodyBytes' => 200]);
        $d = Webhook::signTestDelivery(['id' => 'evt_big', 'type' => 'payment.succeeded', 'data' => ['object' => ['note' => str_repeat('x', 300)]]], self::SECRET, intdiv($this->now, 1000));
        $response = $webhooks->receive($d['body'], $d['headers']);
        self::assertSame(413, $response->status);
        self::assertSame('payload_too_large', json_decode($response->body, true)['error']);
        self::assertNull($this->store->inspect('evt_big'));
    }

    public function testHooksThatThrowDoNotChangeTheAnswer(): void
    {
        $webhooks = new WebhookHandler(self::SECRET, $this->store, function (): void {
            throw new \RuntimeException('work failed');
        }, onError: function (): void {
            throw new \LogicException('broken hook');
        }, onRejected: function (): void {
            throw new \LogicException('broken hook');
        }, clock: fn (): int => $this->now);
        $d = $this->delivery();
        self::assertSame(400, $webhooks->receive($d['body'], [])->status);
        self::assertSame(200, $webhooks->receive($d['body'], $d['headers'])->status);
        self::assertSame(1, $webhooks->afterResponse());
        self::assertSame('pending', $this->store->inspect('evt_h_1')['state']);
    }

    public function testConfigurationErrorsAreRefusedAtOnce(): void
    {
        foreach ([
            ['secret' => 'not_a_secret'],
            ['retryDelaysMs' => [-1]],
            ['leaseMs' => 0],
            ['maxBodyBytes' => 0],
        ] as $bad) {
            try {
                $this->handler(options: $bad);
                self::fail('accepted ' . json_encode($bad));
            } catch (\InvalidArgumentException $e) {
                self::assertStringStartsWith('payhooks:', $e->getMessage());
            }
        }
        $this->expectException(\InvalidArgumentException::class);
        new MemoryStore(retentionMs: 1000);
    }
}
