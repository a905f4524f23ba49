<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Unit;

use Nyholm\Psr7\Factory\Psr17Factory;
use Payhooks\Receiver\Adapter\Psr7Adapter;
use Payhooks\Receiver\Adapter\SymfonyAdapter;
use Payhooks\Receiver\Event;
use Payhooks\Receiver\Store\MemoryStore;
use Payhooks\Receiver\Webhook;
use Payhooks\Receiver\WebhookHandler;
use PHPUnit\Framework\TestCase;
use Symfony\Component\HttpFoundation\Request;

/**
 * The Symfony HttpFoundation and PSR-7 adapters in process: the raw body and the headers reach the
 * handler untouched, the answer comes back as the framework's response. (Over real HTTP, with the
 * response finished before the work runs: tests/Integration/HttpTest.php.)
 */
final class AdaptersTest extends TestCase
{
    private const SECRET = 'whsec_adapters';

    /** @var list<string> */
    private array $ran = [];

    private function webhooks(): WebhookHandler
    {
        return new WebhookHandler(self::SECRET, new MemoryStore(), function (Event $event): void {
            $this->ran[] = $event->id;
        }, onRejected: static function (): void {
        });
    }

    /** Bytes that re-encoding would change: indentation, escaped slashes and non-ASCII. */
    private static function delivery(): array
    {
        $body = "{\n  \"id\": \"evt_adapter\",\n  \"type\": \"payment.succeeded\",\n  \"data\": {\"object\": {\"note\": \"Zo\\u00eb \\/ \u{1F680}\"}}\n}";
        return Webhook::signTestDelivery($body, self::SECRET);
    }

    public function testSymfonyHttpFoundationRequestToResponse(): void
    {
        $webhooks = $this->webhooks();
        $d = self::delivery();
        $server = [];
        foreach ($d['headers'] as $name => $value) {
            $server['HTTP_' . strtoupper(str_replace('-', '_', $name))] = $value;
        }
        $request = Request::create('/webhooks/payhooks', 'POST', [], [], [], $server + ['CONTENT_TYPE' => 'application/json'], $d['body']);
        $response = SymfonyAdapter::handle($webhooks, $request);
        self::assertSame(200, $response->getStatusCode());
        self::assertSame('{"received":true}', $response->getContent());
        self::assertSame('application/json; charset=utf-8', $response->headers->get('Content-Type'));
        self::assertSame((string) strlen('{"received":true}'), $response->headers->get('Content-Length'));
        self::assertSame([], $this->ran);
        $webhooks->afterResponse();
        self::assertSame(['evt_adapter'], $this->ran);

        $duplicate = SymfonyAdapter::handle($webhooks, Request::create('/webhooks/payhooks', 'POST', [], [], [], $server, $d['body']));
        self::assertSame('{"received":true,"duplicate":true}', $duplicate->getContent());
        $tampered = SymfonyAdapter::handle($webhooks, Request::create('/webhooks/payhooks', 'POST', [], [], [], $server, $d['body'] . ' '));
        self::assertSame(400, $tampered->getStatusCode());
        self::assertSame('bad_signature', json_decode((string) $tampered->getContent(), true)['error']);
        $get = SymfonyAdapter::handle($webhooks, Request::create('/webhooks/payhooks', 'GET'));
        self::assertSame(405, $get->getStatusCode());
        self::assertSame('POST', $get->headers->get('Allow'));
    }

    public function testPsr7ServerRequestToResponseWithAnyPsr17Factories(): void
    {
        $webhooks = $this->webhooks();
        $factory = new Psr17Factory();
        $adapter = new Psr7Adapter($webhooks, $factory, $factory);
        $d = self::delivery();
        $request = $factory->createServerRequest('POST', 'https://shop.example/webhooks/payhooks')->withBody($factory->createStream($d['body']));
        foreach ($d['headers'] as $name => $value) {
            $request = $request->withHeader(strtolower($name), $value);
        }
        // A middleware read the body before us: the adapter rewinds it.
        $request->getBody()->getContents();
        $response = $adapter->handle($request);
        self::assertSame(200, $response->getStatusCode());
        self::assertSame('{"received":true}', (string) $response->getBody());
        self::assertSame(['application/json; charset=utf-8'], $response->getHeader('content-type'));
        $webhooks->afterResponse();
        self::assertSame(['evt_adapter'], $this->ran);

        $missing = $adapter->handle($request->withoutHeader('Service-Signature'));
        self::assertSame(400, $missing->getStatusCode());
        self::assertSame('missing_header', json_decode((string) $missing->getBody(), true)['error']);
        $get = $adapter->handle($factory->createServerRequest('GET', '/webhooks/payhooks'));
        self::assertSame(405, $get->getStatusCode());
    }
}
