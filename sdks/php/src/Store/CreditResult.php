<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Store;

/** The outcome of creditOnce(): `credited` is true for the one call whose callback counted. */
final class CreditResult
{
    public function __construct(
        public readonly bool $credited,
        /** What the callback returned, when it ran. */
        public readonly mixed $value = null,
    ) {
    }
}
