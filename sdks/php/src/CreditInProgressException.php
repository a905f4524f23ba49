<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/**
 * `creditOnce` found another caller crediting the same payment, and it did not finish in time.
 * Nothing was credited by this call; retry later (the handler's retries do).
 */
final class CreditInProgressException extends \RuntimeException
{
    public function __construct(public readonly string $paymentId)
    {
        parent::__construct("payhooks: a credit for payment {$paymentId} is in progress elsewhere; nothing was credited by this call, retry later");
    }
}
