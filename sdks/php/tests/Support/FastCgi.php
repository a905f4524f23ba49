<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Tests\Support;

/**
 * A minimal FastCGI client (one request per connection), enough to talk to php-fpm as nginx does:
 * returns the response once php-fpm ends the request (FCGI_END_REQUEST), which
 * fastcgi_finish_request() sends before the script goes on with its work.
 */
final class FastCgi
{
    private const BEGIN_REQUEST = 1;
    private const END_REQUEST = 3;
    private const PARAMS = 4;
    private const STDIN = 5;
    private const STDOUT = 6;
    private const STDERR = 7;

    /**
     * @param array<string, string> $params CGI variables (SCRIPT_FILENAME, REQUEST_METHOD, HTTP_…)
     * @return array{status: int, headers: array<string, string>, body: string, stderr: string}
     */
    public static function request(string $host, int $port, array $params, string $stdin, float $timeoutS = 10.0): array
    {
        $socket = @stream_socket_client("tcp://{$host}:{$port}", $errno, $error, $timeoutS);
        if ($socket === false) {
            throw new \RuntimeException("cannot connect to php-fpm on {$host}:{$port}: {$error}");
        }
        stream_set_timeout($socket, (int) ceil($timeoutS));
        $pairs = '';
        foreach ($params as $name => $value) {
            $pairs .= self::length(strlen($name)) . self::length(strlen($value)) . $name . $value;
        }
        $out = self::record(self::BEGIN_REQUEST, pack('nCx5', 1, 0)); // the responder role, close after
        foreach (str_split($pairs, 65535) as $chunk) {
            $out .= self::record(self::PARAMS, $chunk);
        }
        $out .= self::record(self::PARAMS, '');
        foreach ($stdin === '' ? [] : str_split($stdin, 65535) as $chunk) {
            $out .= self::record(self::STDIN, $chunk);
        }
        $out .= self::record(self::STDIN, '');
        fwrite($socket, $out);

        $stdout = '';
        $stderr = '';
        for (;;) {
            $header = self::read($socket, 8, $timeoutS);
            $h = unpack('Cversion/Ctype/nid/nlength/Cpadding/Creserved', $header);
            $content = self::read($socket, $h['length'] + $h['padding'], $timeoutS);
            $content = substr($content, 0, $h['length']);
            if ($h['type'] === self::STDOUT) {
                $stdout .= $content;
            } elseif ($h['type'] === self::STDERR) {
                $stderr .= $content;
            } elseif ($h['type'] === self::END_REQUEST) {
                break;
            }
        }
        fclose($socket);
        [$head, $body] = array_pad(explode("\r\n\r\n", $stdout, 2), 2, '');
        $headers = [];
        foreach (explode("\r\n", $head) as $line) {
            if (str_contains($line, ':')) {
                [$name, $value] = array_map('trim', explode(':', $line, 2));
                $headers[strtolower($name)] = $value;
            }
        }
        $status = isset($headers['status']) ? (int) $headers['status'] : 200;
        return ['status' => $status, 'headers' => $headers, 'body' => $body, 'stderr' => $stderr];
    }

    private static function record(int $type, string $content): string
    {
        return pack('CCnnCx', 1, $type, 1, strlen($content), 0) . $content;
    }

    private static function length(int $length): string
    {
        return $length < 128 ? chr($length) : pack('N', $length | 0x80000000);
    }

    /** @param resource $socket */
    private static function read($socket, int $bytes, float $timeoutS): string
    {
        $data = '';
        while (strlen($data) < $bytes) {
            $chunk = fread($socket, $bytes - strlen($data));
            if ($chunk === false || $chunk === '') {
                throw new \RuntimeException("php-fpm did not end the request within {$timeoutS} s");
            }
            $data .= $chunk;
        }
        return $data;
    }
}
