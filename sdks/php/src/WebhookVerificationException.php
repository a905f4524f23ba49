<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/**
 * A delivery that must be answered 400 and not processed. `$reason` says why; `$e->reason->value`
 * is the machine-readable string (`bad_signature`, ...).
 */
final class WebhookVerificationException extends \RuntimeException
{
    /** The HTTP status to answer with. */
    public const STATUS = 400;

    public function __construct(public readonly VerificationReason $reason, string $message)
    {
        parent::__construct($message);
    }
}
