-- A replaced client certificate (mutual TLS) stays usable for an overlap, like a rotated signing
-- secret (docs/decisions/receiver-authentication.md): while it lasts an attempt presents the new
-- certificate and, if the receiver refuses the handshake, the previous one, so a merchant can
-- install trust in the new certificate at their gateway without a failed delivery. Sealed like
-- the current one; what is shown of it is public.
--
-- Expand only: a worker of the previous release presents the new certificate alone, as before.
ALTER TABLE webhook_endpoints
  ADD COLUMN previous_client_certificate_ciphertext text,
  ADD COLUMN previous_client_certificate_shown jsonb,
  ADD COLUMN previous_client_certificate_expires_at timestamptz;
