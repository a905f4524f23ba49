-- An endpoint's own trusted certificate authorities (PEM), for a receiver on a private PKI
-- (docs/decisions/receiver-authentication.md): trusted beside the public ones, for that
-- endpoint only, and verified as strictly (hostname included). Public material: stored as given.
--
-- Expand only: a worker of the previous release refuses such a receiver's certificate (a `tls`
-- failure) and the attempt is retried on its schedule by an upgraded worker.
ALTER TABLE webhook_endpoints ADD COLUMN tls_ca_certificates text;
