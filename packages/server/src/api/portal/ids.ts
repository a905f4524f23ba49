import { Type } from '@sinclair/typebox';
import { notFound } from '../../errors.ts';

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });

/** An id that can't be an endpoint id is answered like an unknown one: 404, no query. */
export function endpointId(id: string): string {
  if (!/^we_[0-9A-Za-z]{1,64}$/.test(id)) throw notFound('webhook endpoint', id);
  return id;
}
