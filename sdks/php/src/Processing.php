<?php

declare(strict_types=1);

namespace Payhooks\Receiver;

/** When the handler runs the work of an acknowledged event. */
enum Processing: string
{
    /**
     * In the same PHP request, once the response has been sent (fastcgi_finish_request() under
     * php-fpm; adapters do this). Retries, and work whose process died, are run by a worker
     * (WebhookHandler::work()) or after later deliveries' responses.
     */
    case AfterResponse = 'after_response';

    /** Only by a worker (WebhookHandler::work() or runDue() from cron): the request records and answers. */
    case Worker = 'worker';
}
