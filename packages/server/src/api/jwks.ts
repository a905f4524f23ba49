import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../context.ts';
import { platformJwks } from '../endpoints/jwks.ts';
import { notFound } from '../errors.ts';
import type { Limit } from './rate-limit.ts';

/** How long receivers and caches may keep the document: well inside the shortest useful rotation overlap. */
export const JWKS_MAX_AGE_S = 300;

const PLATFORM_ID = /^plt_[0-9A-Za-z]{1,64}$/;

const JwkSchema = Type.Object({
  kty: Type.Literal('OKP'),
  crv: Type.Literal('Ed25519'),
  x: Type.String(),
  kid: Type.String(),
  use: Type.Literal('sig'),
  alg: Type.Literal('EdDSA'),
});

/**
 * `GET /platforms/:platform_id/jwks.json`: the Platform's ed25519 public keys, for receivers that
 * fetch keys instead of pasting them. Public (no key): it holds public keys only, and an unknown
 * Platform is a 404 like a malformed id. Limited per client address, since it costs queries.
 */
export const jwksRoutes =
  (ctx: ServiceContext, perAddress: Limit): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/platforms/:platform_id/jwks.json',
      {
        config: { public: true },
        schema: {
          tags: ['signing_keys'],
          security: [],
          operationId: 'platformJwks',
          summary: "The Platform's ed25519 public keys (JWKS)",
          description: `The public keys of every endpoint of the Platform with asymmetric_signature on (live and sandbox), a rotated-out key until its overlap ends. A delivery's v1a= entries verify with one of them. No authentication: public keys only. Cache-Control: public, max-age=${JWKS_MAX_AGE_S}; ETag, and 304 for If-None-Match.`,
          params: Type.Object({ platform_id: Type.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false }),
          response: {
            200: Type.Object(
              { keys: Type.Array(JwkSchema) },
              {
                description: 'A JWK Set (RFC 7517).',
                examples: [
                  {
                    keys: [
                      {
                        kty: 'OKP',
                        crv: 'Ed25519',
                        x: '639C6Lqmc4UV1F-4W2EcO643SlbFAp3tJUWEJ49JvYc',
                        kid: 'aMXEiZe5tb6QiIfEuzewjAonTwpGLqWtPNiGmzNnRxA',
                        use: 'sig',
                        alg: 'EdDSA',
                      },
                    ],
                  },
                ],
              },
            ),
            304: Type.Null({ description: 'Not modified: the If-None-Match ETag is current.' }),
          },
        },
      },
      async (req, reply) => {
        await perAddress(req);
        const { platform_id } = req.params;
        if (!PLATFORM_ID.test(platform_id)) throw notFound('platform', platform_id, 'platform_id');
        const jwks = await platformJwks(ctx.database.db, platform_id, ctx.clock.now());
        const etag = `"${createHash('sha256').update(JSON.stringify(jwks)).digest('base64url').slice(0, 27)}"`;
        void reply.header('cache-control', `public, max-age=${JWKS_MAX_AGE_S}`).header('etag', etag);
        if (req.headers['if-none-match'] === etag) return reply.code(304).send(null);
        return reply.code(200).send(jwks);
      },
    );
  };
