import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { buildDocuments, type DocumentKind, type OpenApiDocument } from './document.ts';
import { CSRF_HEADER, SESSION_COOKIE } from '../portal/security.ts';

/** The security schemes of both documents (each keeps the ones its operations use). */
export const SECURITY_SCHEMES = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    description:
      'An API key, `sk_test_…` (sandbox) or `sk_live_…` (live): `Authorization: Bearer sk_test_…`. The key fixes the Platform and environment of every call.',
  },
  portalSession: {
    type: 'apiKey',
    in: 'cookie',
    name: SESSION_COOKIE,
    description: `The Merchant Portal session cookie set by \`POST /portal/api/session\`, or, for a page opened through the payment service's link (\`POST /portal/api/session/link\`), its \`session_token\` sent as \`Authorization: Bearer <token>\`. Mutations also need the \`${CSRF_HEADER}\` header from the session and a same-origin \`Origin\`.`,
  },
  internalToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      'The operator token `PAYHOOKS_INTERNAL_TOKEN`: `Authorization: Bearer <token>`. Without a configured token the internal API answers 404.',
  },
} as const;

const raw = (payload: unknown) => JSON.stringify(payload);

/**
 * `GET /api/v1/openapi.json` (the public document: the management API and the listen relay),
 * `GET /internal/v1/openapi.json` (the operator document: publishing, payment transitions, health
 * and metrics) and `GET /portal/api/openapi.json` (the portal page's own JSON API, unlinked). Neither needs a key: they describe, they hold no data.
 * Built once, on first request, when every route is registered.
 */
export const openApiRoutes = (ctx: ServiceContext) => async (app: FastifyInstance) => {
  let cached: { server: string | undefined; docs: Record<DocumentKind, OpenApiDocument> } | undefined;
  const documents = () => {
    const server = ctx.publicUrl();
    if (!cached || cached.server !== server) {
      const root = app as unknown as { swagger(): unknown };
      cached = { server, docs: buildDocuments(root.swagger() as OpenApiDocument, { serverUrl: server }) };
    }
    return cached.docs;
  };
  const response = {
    200: {
      description: 'An OpenAPI 3.1 document.',
      content: {
        'application/json': {
          schema: { type: 'object', examples: [{ openapi: '3.1.0', info: { title: 'payhooks', version: 'v1' }, paths: {} }] },
        },
      },
    },
  };
  app.get(
    '/api/v1/openapi.json',
    {
      serializerCompiler: () => raw,
      schema: { tags: ['meta'], security: [], operationId: 'getOpenApiDocument', summary: 'This document', response },
    },
    async () => documents().public,
  );
  app.get(
    '/internal/v1/openapi.json',
    {
      serializerCompiler: () => raw,
      schema: { tags: ['operations'], security: [], operationId: 'getOperatorOpenApiDocument', summary: 'This document', response },
    },
    async () => documents().operator,
  );
  // The portal page's own API, for its developers (and the portal-ui types generated from it).
  // Not linked from the public document; served without a session like the others.
  app.get(
    '/portal/api/openapi.json',
    {
      serializerCompiler: () => raw,
      schema: { tags: ['meta'], security: [], operationId: 'getPortalOpenApiDocument', summary: 'This document', response },
    },
    async () => documents().portal,
  );
};
