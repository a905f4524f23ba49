-- An attempt to a message broker sends no HTTP request: its log shows the message's headers,
-- which have no User-Agent. `broker` is the kind of broker the attempt went to ('amqp', 'nats'),
-- null for an HTTP request. The endpoint's current URL can't tell: it may have changed since.
--
-- Expand only: the previous release leaves it null, and its attempts are shown as HTTP requests,
-- as they were before.

ALTER TABLE delivery_attempts ADD COLUMN broker text;
