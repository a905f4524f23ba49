<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Adapter;

use Payhooks\Receiver\WebhookHandler;
use Payhooks\Receiver\WebhookResponse;

/**
 * Plain PHP (php-fpm, Apache mod_php, `php -S`): the raw body from php://input, the headers from
 * $_SERVER, the answer with header() and echo, then the response is finished and the work runs.
 *
 *     // public/webhooks/payhooks.php
 *     require __DIR__ . '/../../vendor/autoload.php';
 *     PlainPhpAdapter::handle(require __DIR__ . '/../../config/webhooks.php');
 */
final class PlainPhpAdapter
{
    /**
     * Answers the current request, finishes the response, then runs the work (afterResponse()).
     *
     * @param string|null $body the raw body; default php://input
     * @param array<string, mixed>|null $server default $_SERVER
     */
    public static function handle(WebhookHandler $webhooks, ?string $body = null, ?array $server = null): void
    {
        $server ??= $_SERVER;
        $method = $server['REQUEST_METHOD'] ?? 'POST';
        if ($method !== 'POST') {
            self::send(WebhookResponse::json(405, ['error' => 'method_not_allowed', 'message' => 'payhooks delivers webhooks with POST']), ['Allow' => 'POST']);
            return;
        }
        if ($body === null) {
            // One byte over the limit is enough to answer 413 without reading the rest.
            $read = file_get_contents('php://input', false, null, 0, $webhooks->maxBodyBytes + 1);
            $body = $read === false ? '' : $read;
        }
        self::send($webhooks->receive($body, $server));
        self::finishRequest();
        $webhooks->afterResponse();
    }

    /**
     * Sends a response with header() and echo. Under SAPIs without fastcgi_finish_request() it
     * carries `Connection: close`, so the client does not wait for the work that follows.
     *
     * @param array<string, string> $extraHeaders
     */
    public static function send(WebhookResponse $response, array $extraHeaders = []): void
    {
        if (!headers_sent()) {
            http_response_code($response->status);
            foreach ($response->headers + $extraHeaders as $name => $value) {
                header($name . ': ' . $value);
            }
            header('Content-Length: ' . strlen($response->body));
            if (!self::canFinish()) {
                header('Connection: close');
            }
        }
        echo $response->body;
    }

    /**
     * Ends the response for the client while the script goes on: fastcgi_finish_request() under
     * php-fpm, litespeed_finish_request() under LiteSpeed, otherwise every output buffer flushed
     * (the answer has its Content-Length and `Connection: close`, which is as good for the client).
     * A client hanging up no longer aborts the script.
     */
    public static function finishRequest(): void
    {
        ignore_user_abort(true);
        if (function_exists('fastcgi_finish_request')) {
            fastcgi_finish_request();
            return;
        }
        if (function_exists('litespeed_finish_request')) {
            litespeed_finish_request();
            return;
        }
        while (ob_get_level() > 0 && @ob_end_flush()) {
        }
        flush();
    }

    private static function canFinish(): bool
    {
        return function_exists('fastcgi_finish_request') || function_exists('litespeed_finish_request');
    }

    private function __construct()
    {
    }
}
