<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Adapter;

use Payhooks\Receiver\WebhookHandler;
use Payhooks\Receiver\WebhookResponse;
use Psr\Http\Message\ResponseFactoryInterface;
use Psr\Http\Message\ResponseInterface;
use Psr\Http\Message\ServerRequestInterface;
use Psr\Http\Message\StreamFactoryInterface;

/**
 * PSR-7 (Slim, Mezzio, any PSR-15 stack), with your PSR-17 factories (nyholm/psr7,
 * guzzlehttp/psr7, laminas-diactoros, slim/psr7). handle() has the signature of PSR-15's
 * RequestHandlerInterface::handle(). Once your emitter has sent the response, call
 * afterResponse() to run the work.
 */
final class Psr7Adapter
{
    public function __construct(
        private readonly WebhookHandler $webhooks,
        private readonly ResponseFactoryInterface $responses,
        private readonly StreamFactoryInterface $streams,
    ) {
    }

    public function handle(ServerRequestInterface $request): ResponseInterface
    {
        if ($request->getMethod() !== 'POST') {
            return $this->toResponse(WebhookResponse::json(405, ['error' => 'method_not_allowed', 'message' => 'payhooks delivers webhooks with POST']))
                ->withHeader('Allow', 'POST');
        }
        $stream = $request->getBody();
        if ($stream->isSeekable()) {
            $stream->rewind();
        }
        return $this->toResponse($this->webhooks->receive($stream->getContents(), $request->getHeaders()));
    }

    /**
     * After the emitter sent the response: finishes it for the client (fastcgi_finish_request()
     * under php-fpm) and runs the work. Long-running servers (RoadRunner, Swoole, ReactPHP) call
     * the handler's afterResponse() themselves, off the request path.
     */
    public function afterResponse(): int
    {
        PlainPhpAdapter::finishRequest();
        return $this->webhooks->afterResponse();
    }

    private function toResponse(WebhookResponse $answer): ResponseInterface
    {
        $response = $this->responses->createResponse($answer->status)->withBody($this->streams->createStream($answer->body));
        foreach ($answer->headers as $name => $value) {
            $response = $response->withHeader($name, $value);
        }
        return $response->withHeader('Content-Length', (string) strlen($answer->body));
    }
}
