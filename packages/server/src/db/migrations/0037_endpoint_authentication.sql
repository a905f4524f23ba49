-- How payhooks authenticates to an endpoint's receiver, beside the signature (endpoints/
-- receiver-auth.ts, docs/decisions/receiver-authentication.md): the kind, what may be shown of
-- it (for basic, the username), and its secret part sealed like the signing secret (bound to
-- the endpoint). The kinds a later release adds are listed already, so it needs no new CHECK.
--
-- Expand only: the previous release reads none of it, so during a rolling upgrade its workers
-- send such an endpoint's deliveries without the Authorization header; a receiver that requires
-- it answers 401 and the attempt is retried on its schedule by an upgraded worker.
ALTER TABLE webhook_endpoints
  ADD COLUMN authentication_type text CHECK (authentication_type IN ('basic', 'oauth2_client_credentials', 'mtls')),
  ADD COLUMN authentication_shown jsonb,
  ADD COLUMN authentication_ciphertext text,
  ADD CONSTRAINT webhook_endpoints_authentication_whole
    CHECK ((authentication_type IS NULL) = (authentication_ciphertext IS NULL) AND (authentication_type IS NULL) = (authentication_shown IS NULL));
