import { describe, expect, it } from 'vitest';
import { COMPONENT_EXAMPLES, exampleOf } from '../../src/api/openapi/examples.ts';

/**
 * The OpenAPI documents' examples (api/openapi/examples.ts): a written component example is used
 * as written, and a required property added to the schema later is filled from the schema, so
 * adding an endpoint setting needs no edit of the examples to keep them valid.
 */
describe('OpenAPI examples', () => {
  const endpoint = COMPONENT_EXAMPLES.WebhookEndpoint as Record<string, unknown>;
  const ref = { $ref: '#/components/schemas/WebhookEndpoint' };

  it('a written example is used as written when it has every required property', () => {
    const schemas = {
      WebhookEndpoint: { type: 'object', required: ['id', 'url'], properties: { id: { type: 'string' }, url: { type: 'string' } } },
    };
    expect(exampleOf(ref, schemas)).toBe(endpoint);
  });

  it('a required property the written example lacks is taken from its schema (default first); optional ones are not added', () => {
    const schemas = {
      WebhookEndpoint: {
        type: 'object',
        required: ['id', 'timeout_ms'],
        properties: {
          id: { type: 'string' },
          timeout_ms: { type: 'integer', minimum: 1000, default: 15000 },
          platform_id: { type: 'string' },
        },
      },
    };
    const example = exampleOf(ref, schemas) as Record<string, unknown>;
    expect(example.timeout_ms).toBe(15000);
    expect(example.id).toBe(endpoint.id);
    expect('platform_id' in example).toBe(false);
  });
});
