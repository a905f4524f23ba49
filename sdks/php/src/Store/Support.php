<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Store;

/** @internal Shared by the stores. */
final class Support
{
    /** At least this long a seen id is kept: 30 days, beyond payhooks' retry schedule and replay window. */
    public const RETENTION_MS = 30 * 24 * 3600 * 1000;

    public static function checkRetention(int $retentionMs): int
    {
        if ($retentionMs < self::RETENTION_MS) {
            throw new \InvalidArgumentException('payhooks: seen event ids must be kept at least 30 days; retentionMs >= ' . self::RETENTION_MS);
        }
        return $retentionMs;
    }

    public static function checkPaymentId(string $paymentId): void
    {
        if ($paymentId === '') {
            throw new \InvalidArgumentException('payhooks: creditOnce needs the payment id (data.object.id of the event, pay_...)');
        }
    }

    /**
     * The store's `last_error`: class, message and where it was thrown, no stack trace; valid UTF-8
     * (PostgreSQL refuses anything else) and at most 4,000 bytes.
     */
    public static function errorText(\Throwable $error): string
    {
        $text = get_class($error) . ': ' . $error->getMessage() . ' (' . basename($error->getFile()) . ':' . $error->getLine() . ')';
        if (preg_match('//u', $text) !== 1) {
            $text = (string) preg_replace('/[\x80-\xFF]/', '?', $text);
        }
        if (strlen($text) > 4000) {
            $text = substr($text, 0, 4000);
            // Drop a character cut in half.
            while ($text !== '' && preg_match('//u', $text) !== 1) {
                $text = substr($text, 0, -1);
            }
        }
        return $text;
    }

    public static function token(): string
    {
        return bin2hex(random_bytes(16));
    }

    private function __construct()
    {
    }
}
