<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Unit;

use Payhooks\Receiver\Event;
use Payhooks\Receiver\VerificationReason;
use Payhooks\Receiver\Webhook;
use Payhooks\Receiver\WebhookVerificationException;
use PHPUnit\Framework\TestCase;

/** Spec 5.1 beyond the shared vectors: PHP's own pitfalls, the header shapes, the test signer. */
final class VerifyTest extends TestCase
{
    private const SECRET = 'whsec_test_php_secret';

    /** @return array<string, mixed> */
    private static function event(string $id = 'evt_php_1', string $type = 'payment.succeeded'): array
    {
        return ['id' => $id, 'object' => 'event', 'type' => $type, 'data' => ['object' => ['id' => 'pay_1', 'object' => 'payment', 'metadata' => []]]];
    }

    private static function reason(callable $fn): ?string
    {
        try {
            $fn();
        } catch (WebhookVerificationException $e) {
            self::assertSame(400, $e::STATUS);
            return $e->reason->value;
        }
        return null;
    }

    public function testSpec51SignTestDeliveryRoundTripsAndDecodesTheEvent(): void
    {
        $signed = Webhook::signTestDelivery(self::event(), self::SECRET);
        $event = Webhook::verify($signed['body'], $signed['headers'], self::SECRET);
        self::assertSame('evt_php_1', $event->id);
        self::assertSame('payment.succeeded', $event->type);
        self::assertTrue($event->isPaymentEvent());
        self::assertSame('pay_1', $event->object()['id']);
        // The stored JSON is the text received: `{}` stays an object, not PHP's `[]`.
        self::assertStringContainsString('"metadata":[]', $signed['body']);
        $withObject = '{"id":"evt_obj","type":"payment.succeeded","data":{"object":{"metadata":{}}}}';
        self::assertSame($withObject, Event::fromJson($withObject)->toJson());
    }

    public function testSpec51ATrailingNewlineInTheTimestampOrSignatureIsMalformed(): void
    {
        // PCRE's `$` matches before a final "\n": the parser must not accept "t=123\n".
        $signed = Webhook::signTestDelivery(self::event(), self::SECRET);
        [$t, $v1] = explode(',', $signed['headers']['Service-Signature']);
        foreach (["{$t}\n,{$v1}", "{$t},{$v1}\n"] as $header) {
            $headers = ['Service-Signature' => $header] + $signed['headers'];
            self::assertSame('malformed_header', self::reason(fn () => Webhook::verify($signed['body'], $headers, self::SECRET)));
        }
    }

    public function testSpec51ARepeatedHeaderIsMalformedInEveryShape(): void
    {
        $signed = Webhook::signTestDelivery(self::event(), self::SECRET);
        $sig = $signed['headers']['Service-Signature'];
        $shapes = [
            'a list of two values (PSR-7, Symfony)' => ['service-signature' => [$sig, $sig], 'service-event-id' => ['evt_php_1']],
            'two spellings of the name' => ['Service-Signature' => $sig, 'service-signature' => $sig, 'Service-Event-Id' => 'evt_php_1'],
            'joined by the web server ($_SERVER)' => ['HTTP_SERVICE_SIGNATURE' => "{$sig}, {$sig}", 'HTTP_SERVICE_EVENT_ID' => 'evt_php_1'],
            'the event id twice' => ['Service-Signature' => $sig, 'service-event-id' => ['evt_php_1', 'evt_php_1']],
        ];
        foreach ($shapes as $shape => $headers) {
            self::assertSame('malformed_header', self::reason(fn () => Webhook::verify($signed['body'], $headers, self::SECRET)), $shape);
        }
        // One value in a list is fine.
        $event = Webhook::verify($signed['body'], ['service-signature' => [$sig], 'service-event-id' => ['evt_php_1']], self::SECRET);
        self::assertSame('evt_php_1', $event->id);
    }

    public function testSpec51MissingOrEmptyHeaders(): void
    {
        $signed = Webhook::signTestDelivery(self::event(), self::SECRET);
        self::assertSame('missing_header', self::reason(fn () => Webhook::verify($signed['body'], [], self::SECRET)));
        self::assertSame('missing_header', self::reason(fn () => Webhook::verify($signed['body'], ['Service-Signature' => $signed['headers']['Service-Signature']], self::SECRET)));
        self::assertSame('missing_header', self::reason(fn () => Webhook::verify($signed['body'], ['service-signature' => [], 'service-event-id' => 'evt_php_1'], self::SECRET)));
        self::assertSame('missing_header', self::reason(fn () => Webhook::verify($signed['body'], ['Service-Signature' => $signed['headers']['Service-Signature'], 'Service-Event-Id' => ''], self::SECRET)));
    }

    public function testSpec51ToleranceInBothDirectionsToTheMillisecondAndConfigurable(): void
    {
        $t = 1_767_225_600;
        $signed = Webhook::signTestDelivery(self::event(), self::SECRET, $t);
        $at = static fn (int $ms) => \DateTimeImmutable::createFromFormat('U.v', sprintf('%d.%03d', intdiv($ms, 1000), $ms % 1000));
        $verifyAt = fn (int $ms, int $tolerance = 300) => self::reason(fn () => Webhook::verify($signed['body'], $signed['headers'], self::SECRET, $tolerance, $at($ms)));
        self::assertNull($verifyAt($t * 1000 + 300_000));
        self::assertNull($verifyAt($t * 1000 - 300_000));
        self::assertSame('timestamp_out_of_tolerance', $verifyAt($t * 1000 + 300_001));
        self::assertSame('timestamp_out_of_tolerance', $verifyAt($t * 1000 - 300_001));
        self::assertSame('timestamp_out_of_tolerance', $verifyAt($t * 1000 + 60_001, 60));
        self::assertNull($verifyAt($t * 1000 + 600_000, 600));
        // The default clock is the system's: a delivery signed now verifies.
        $fresh = Webhook::signTestDelivery(self::event(), self::SECRET);
        self::assertSame('evt_php_1', Webhook::verify($fresh['body'], $fresh['headers'], self::SECRET)->id);
    }

    public function testSpec51RotationEitherSecretAndEitherPosition(): void
    {
        $old = 'whsec_old_one';
        $new = 'whsec_new_one';
        $both = Webhook::signTestDelivery(self::event(), [$new, $old]);
        self::assertSame('evt_php_1', Webhook::verify($both['body'], $both['headers'], $old)->id);
        self::assertSame('evt_php_1', Webhook::verify($both['body'], $both['headers'], $new)->id);
        $oldOnly = Webhook::signTestDelivery(self::event(), $old);
        self::assertSame('evt_php_1', Webhook::verify($oldOnly['body'], $oldOnly['headers'], [$new, $old])->id);
        self::assertSame('bad_signature', self::reason(fn () => Webhook::verify($oldOnly['body'], $oldOnly['headers'], [$new])));
    }

    public function testSpec51TheBodyIsAnEventObjectWhoseIdMatchesTheHeader(): void
    {
        $cases = [
            'a JSON array of an event' => ['[{"id":"evt_php_1","type":"payment.succeeded"}]', 'invalid_json'],
            'an object with numeric keys' => ['{"0":"evt_php_1"}', 'invalid_json'],
            'an id that is a number' => ['{"id":1,"type":"payment.succeeded"}', 'invalid_json'],
            'no type' => ['{"id":"evt_php_1"}', 'invalid_json'],
            'a JSON string' => ['"evt_php_1"', 'invalid_json'],
            'empty' => ['', 'invalid_json'],
            'another id' => ['{"id":"evt_other","type":"payment.succeeded"}', 'event_id_mismatch'],
        ];
        foreach ($cases as $case => [$body, $reason]) {
            $t = time();
            $headers = ['Service-Event-Id' => 'evt_php_1', 'Service-Signature' => "t={$t},v1=" . Webhook::computeSignature(self::SECRET, $t, $body)];
            self::assertSame($reason, self::reason(fn () => Webhook::verify($body, $headers, self::SECRET)), $case);
        }
        // A leading byte-order mark is not part of the JSON text.
        $body = "\xEF\xBB\xBF" . json_encode(self::event());
        $t = time();
        $headers = ['Service-Event-Id' => 'evt_php_1', 'Service-Signature' => "t={$t},v1=" . Webhook::computeSignature(self::SECRET, $t, $body)];
        self::assertSame('evt_php_1', Webhook::verify($body, $headers, self::SECRET)->id);
    }

    public function testEveryReasonHasItsStringValue(): void
    {
        self::assertSame(
            ['missing_header', 'malformed_header', 'bad_signature', 'timestamp_out_of_tolerance', 'event_id_mismatch', 'invalid_json'],
            array_map(static fn (VerificationReason $r): string => $r->value, VerificationReason::cases()),
        );
    }

    public function testSpec511ASecretIsRequiredWholeWithItsPrefix(): void
    {
        $signed = Webhook::signTestDelivery(self::event(), self::SECRET);
        foreach (['', 'whsec_', 'test_php_secret', []] as $secret) {
            try {
                Webhook::verify($signed['body'], $signed['headers'], $secret);
                self::fail('accepted the secret ' . json_encode($secret));
            } catch (\InvalidArgumentException $e) {
                self::assertStringStartsWith('payhooks:', $e->getMessage());
            }
        }
        $this->expectException(\InvalidArgumentException::class);
        Webhook::verify($signed['body'], $signed['headers'], self::SECRET, -1);
    }
}
