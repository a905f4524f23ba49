<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/**
 * Reads one request header from what PHP frameworks hand over, case-insensitively:
 * - an array of header names to a string or a list of strings (PSR-7's getHeaders(),
 *   Symfony's $request->headers->all(), getallheaders());
 * - $_SERVER, where `Service-Signature` is `HTTP_SERVICE_SIGNATURE`.
 *
 * @internal
 */
final class Headers
{
    /**
     * @param array<array-key, mixed> $headers
     * @return string|false|null the value; null when absent or empty; false when sent more than once
     */
    public static function read(array $headers, string $name): string|false|null
    {
        $lower = strtolower($name);
        $cgi = 'HTTP_' . strtoupper(str_replace('-', '_', $name));
        $found = [];
        foreach ($headers as $key => $value) {
            if (!is_string($key)) {
                continue;
            }
            if (strtolower($key) === $lower || $key === $cgi) {
                foreach (is_array($value) ? $value : [$value] as $one) {
                    if (is_string($one)) {
                        $found[] = $one;
                    }
                }
            }
        }
        if (count($found) > 1) {
            return false;
        }
        $value = $found[0] ?? '';
        return $value === '' ? null : $value;
    }

    /**
     * The request headers from $_SERVER (`HTTP_SERVICE_SIGNATURE` => `service-signature`).
     *
     * @param array<array-key, mixed> $server
     * @return array<string, string>
     */
    public static function fromServer(array $server): array
    {
        $headers = [];
        foreach ($server as $key => $value) {
            if (is_string($key) && is_string($value) && str_starts_with($key, 'HTTP_')) {
                $headers[strtolower(str_replace('_', '-', substr($key, 5)))] = $value;
            }
        }
        foreach (['CONTENT_TYPE' => 'content-type', 'CONTENT_LENGTH' => 'content-length'] as $key => $name) {
            if (isset($server[$key]) && is_string($server[$key]) && $server[$key] !== '') {
                $headers[$name] = $server[$key];
            }
        }
        return $headers;
    }

    private function __construct()
    {
    }
}
