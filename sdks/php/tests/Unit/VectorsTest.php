<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Unit;

use Payhooks\Receiver\Store\MemoryStore;
use Payhooks\Receiver\Webhook;
use Payhooks\Receiver\WebhookHandler;
use Payhooks\Receiver\WebhookVerificationException;
use Payhooks\Receiver\Tests\Support\Services;
use PHPUnit\Framework\TestCase;

/**
 * Spec 5.1: every case of the shared signature vectors, which every payhooks receiver library
 * runs. Each one is checked with its headers as given, lowercased, and in $_SERVER form.
 */
final class VectorsTest extends TestCase
{
    /** @return iterable<string, array{0: array<string, mixed>}> */
    public static function vectors(): iterable
    {
        foreach (Services::vectors()['vectors'] as $vector) {
            yield $vector['name'] => [$vector];
        }
    }

    /**
     * @dataProvider vectors
     * @param array<string, mixed> $vector
     */
    public function testVector(array $vector): void
    {
        $body = base64_decode($vector['body_base64'], true);
        self::assertIsString($body);
        $now = \DateTimeImmutable::createFromFormat('U.v', sprintf('%d.%03d', intdiv($vector['now_ms'], 1000), $vector['now_ms'] % 1000));
        self::assertInstanceOf(\DateTimeImmutable::class, $now);
        $lower = array_change_key_case($vector['headers'], CASE_LOWER);
        $server = [];
        foreach ($vector['headers'] as $name => $value) {
            $server['HTTP_' . strtoupper(str_replace('-', '_', $name))] = $value;
        }
        foreach (['as given' => $vector['headers'], 'lowercase' => $lower, '$_SERVER' => $server] as $shape => $headers) {
            $outcome = self::outcome($body, $headers, $vector['secrets'], $vector['tolerance_seconds'], $now, $vector['public_keys']);
            self::assertSame($vector['expected'], $outcome, "{$vector['name']} ({$shape} headers): {$vector['description']}");
        }
    }

    public function testAHandlerWithOnlyAPublicKeyAnswersByTheVectors(): void
    {
        $want = ['v1a_valid_public_key_only' => 200, 'v1a_wrong_key' => 400, 'v1a_tampered_body' => 400];
        foreach (Services::vectors()['vectors'] as $vector) {
            if (!isset($want[$vector['name']])) {
                continue;
            }
            $nowMs = $vector['now_ms'];
            $webhooks = new WebhookHandler(
                secret: [],
                store: new MemoryStore(),
                onEvent: static fn () => null,
                onRejected: static fn () => null,
                clock: static fn (): int => $nowMs,
                publicKeys: $vector['public_keys'],
            );
            $body = base64_decode($vector['body_base64'], true);
            self::assertIsString($body);
            self::assertSame($want[$vector['name']], $webhooks->receive($body, $vector['headers'])->status, $vector['name']);
            unset($want[$vector['name']]);
        }
        self::assertSame([], $want);
        $this->expectException(\InvalidArgumentException::class);
        new WebhookHandler(secret: [], store: new MemoryStore(), onEvent: static fn () => null, publicKeys: ['whpk_AAAA']);
    }

    public function testTheVectorsAreThere(): void
    {
        $vectors = Services::vectors();
        self::assertSame(1, $vectors['version']);
        self::assertGreaterThanOrEqual(39, count($vectors['vectors']));
    }

    /**
     * @param array<string, string> $headers
     * @param list<string> $secrets
     * @param list<string> $publicKeys
     * @return array<string, mixed>
     */
    private static function outcome(string $body, array $headers, array $secrets, int $tolerance, \DateTimeImmutable $now, array $publicKeys): array
    {
        try {
            $event = Webhook::verify($body, $headers, $secrets, $tolerance, $now, $publicKeys);
            return ['ok' => true, 'event_id' => $event->id, 'event_type' => $event->type];
        } catch (WebhookVerificationException $e) {
            return ['ok' => false, 'reason' => $e->reason->value];
        } catch (\InvalidArgumentException $e) {
            // A key that is not a whpk_ key is refused without being echoed.
            self::assertStringNotContainsString(substr($publicKeys[0], 5), $e->getMessage());
            return ['ok' => false, 'reason' => 'configuration_error'];
        }
    }
}
