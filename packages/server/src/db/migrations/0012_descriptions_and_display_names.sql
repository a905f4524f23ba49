-- Issue 22: a checkout page a customer can read. Expand only (nullable columns).
--
-- What the customer pays for, as the merchant words it (up to 500 characters), on payments and
-- checkout sessions; shown on the hosted page and carried in the objects of their events.
ALTER TABLE payments ADD COLUMN description text;
ALTER TABLE checkout_sessions ADD COLUMN description text;
-- The shop's name on the hosted checkout page; null shows the Platform's name.
ALTER TABLE merchants ADD COLUMN display_name text;
