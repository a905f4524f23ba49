<?php

declare(strict_types=1);

namespace Payhooks\Receiver\Store;

use Payhooks\Receiver\Event;

/** Work a store handed out by claimDue(): a retry whose time came, queued work, or abandoned work. */
final class DueEvent
{
    public function __construct(public readonly Claim $claim, public readonly Event $event)
    {
    }
}
