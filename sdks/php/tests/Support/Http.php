<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Support;

/**
 * A minimal HTTP/1.1 client over a socket that returns as soon as the response's Content-Length
 * bytes are in, as payhooks' own client does, without waiting for the server to close the
 * connection (which a receiver still running its work after the response does later).
 */
final class Http
{
    /**
     * @param array<string, string> $headers
     * @return array{status: int, headers: array<string, string>, body: string}
     */
    public static function request(string $method, string $url, string $body = '', array $headers = [], float $timeoutS = 10.0): array
    {
        $parts = parse_url($url);
        $socket = @stream_socket_client("tcp://{$parts['host']}:{$parts['port']}", $errno, $error, $timeoutS);
        if ($socket === false) {
            throw new \RuntimeException("cannot connect to {$url}: {$error}");
        }
        stream_set_timeout($socket, (int) ceil($timeoutS));
        $lines = ["{$method} {$parts['path']} HTTP/1.1", "Host: {$parts['host']}:{$parts['port']}", 'Content-Length: ' . strlen($body)];
        foreach ($headers as $name => $value) {
            $lines[] = "{$name}: {$value}";
        }
        fwrite($socket, implode("\r\n", $lines) . "\r\n\r\n" . $body);
        $head = '';
        while (!str_contains($head, "\r\n\r\n")) {
            $chunk = fread($socket, 1);
            if ($chunk === false || $chunk === '') {
                fclose($socket);
                throw new \RuntimeException("no complete response from {$url} within {$timeoutS} s: " . json_encode($head));
            }
            $head .= $chunk;
        }
        $headerLines = explode("\r\n", trim($head));
        $status = (int) explode(' ', array_shift($headerLines))[1];
        $responseHeaders = [];
        foreach ($headerLines as $line) {
            [$name, $value] = array_map('trim', explode(':', $line, 2));
            $responseHeaders[strtolower($name)] = $value;
        }
        $length = (int) ($responseHeaders['content-length'] ?? 0);
        $responseBody = '';
        while (strlen($responseBody) < $length) {
            $chunk = fread($socket, $length - strlen($responseBody));
            if ($chunk === false || $chunk === '') {
                fclose($socket);
                throw new \RuntimeException("the body from {$url} stopped short within {$timeoutS} s");
            }
            $responseBody .= $chunk;
        }
        fclose($socket);
        return ['status' => $status, 'headers' => $responseHeaders, 'body' => $responseBody];
    }
}
