<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/**
 * The event types payhooks sends today. The catalog only grows: a receiver acknowledges and
 * ignores a type it does not handle, so a type missing here is never an error on receipt.
 */
final class EventTypes
{
    public const PAYMENT_CREATED = 'payment.created';
    public const PAYMENT_REQUIRES_ACTION = 'payment.requires_action';
    public const PAYMENT_UNDER_REVIEW = 'payment.under_review';
    public const PAYMENT_PROCESSING = 'payment.processing';
    public const PAYMENT_SUCCEEDED = 'payment.succeeded';
    public const PAYMENT_FAILED = 'payment.failed';
    public const PAYMENT_CANCELLED = 'payment.cancelled';
    public const PAYMENT_EXPIRED = 'payment.expired';
    public const CHECKOUT_SESSION_COMPLETED = 'checkout_session.completed';
    public const CHECKOUT_SESSION_EXPIRED = 'checkout_session.expired';
    public const WEBHOOK_ENDPOINT_DISABLED = 'webhook_endpoint.disabled';

    public const ALL = [
        self::PAYMENT_CREATED,
        self::PAYMENT_REQUIRES_ACTION,
        self::PAYMENT_UNDER_REVIEW,
        self::PAYMENT_PROCESSING,
        self::PAYMENT_SUCCEEDED,
        self::PAYMENT_FAILED,
        self::PAYMENT_CANCELLED,
        self::PAYMENT_EXPIRED,
        self::CHECKOUT_SESSION_COMPLETED,
        self::CHECKOUT_SESSION_EXPIRED,
        self::WEBHOOK_ENDPOINT_DISABLED,
    ];

    /** The statuses a Payment (`data.object` of payment.* events) can have. */
    public const PAYMENT_STATUSES = ['created', 'requires_action', 'under_review', 'processing', 'succeeded', 'failed', 'cancelled', 'expired'];

    public static function isKnown(string $type): bool
    {
        return in_array($type, self::ALL, true);
    }

    private function __construct()
    {
    }
}
