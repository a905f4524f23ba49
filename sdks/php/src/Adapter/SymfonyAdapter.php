<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Adapter;

use Payhooks\Receiver\WebhookHandler;
use Payhooks\Receiver\WebhookResponse;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\Response;

/**
 * Symfony HttpFoundation (Symfony, Laravel, Drupal, Silex-style front controllers).
 *
 * In a framework, return handle()'s Response from your controller and run the work once the
 * response is sent: Symfony's `kernel.terminate` event, Laravel's `app()->terminating()`, both
 * after fastcgi_finish_request(). Without a kernel, send() does all of it.
 */
final class SymfonyAdapter
{
    /** The answer to one delivery, from the raw body ($request->getContent()) and headers. */
    public static function handle(WebhookHandler $webhooks, Request $request): Response
    {
        if (!$request->isMethod('POST')) {
            $response = self::toResponse(WebhookResponse::json(405, ['error' => 'method_not_allowed', 'message' => 'payhooks delivers webhooks with POST']));
            $response->headers->set('Allow', 'POST');
            return $response;
        }
        return self::toResponse($webhooks->receive($request->getContent(), $request->headers->all()));
    }

    /**
     * Without a kernel: answers the request, finishes the response (Response::send() calls
     * fastcgi_finish_request()), then runs the work. Returns the Response that was sent.
     */
    public static function send(WebhookHandler $webhooks, ?Request $request = null): Response
    {
        $response = self::handle($webhooks, $request ?? Request::createFromGlobals());
        if (!function_exists('fastcgi_finish_request') && !function_exists('litespeed_finish_request')) {
            $response->headers->set('Connection', 'close');
        }
        $response->send();
        PlainPhpAdapter::finishRequest();
        $webhooks->afterResponse();
        return $response;
    }

    public static function toResponse(WebhookResponse $answer): Response
    {
        $response = new Response($answer->body, $answer->status, $answer->headers);
        $response->headers->set('Content-Length', (string) strlen($answer->body));
        return $response;
    }

    private function __construct()
    {
    }
}
