import type { CustomHeaders } from './destinations/attempt.ts';

/** Distinct custom-header sets one worker keeps parsed; all are dropped when full. */
export const CUSTOM_HEADER_SETS = 10_000;

/** An endpoint's custom headers as the claim reads them (`headers::text`), ready to send. */
export function parseCustomHeaders(json: string): CustomHeaders {
  const flat: string[] = [];
  // The endpoint service stored an object of strings; anything else in the column is skipped.
  for (const [name, value] of Object.entries(JSON.parse(json) as Record<string, unknown>))
    if (typeof value === 'string') flat.push(name, value);
  return { json, flat };
}

/**
 * Parsed custom headers by their JSON text, so an attempt to an endpoint with headers parses
 * nothing the worker parsed before. Keyed by the text itself: a change to the headers is a new
 * text, found (and parsed) on the next claim, with nothing to invalidate.
 */
export class CustomHeaderSets {
  private readonly parsed = new Map<string, CustomHeaders>();

  constructor(private readonly capacity = CUSTOM_HEADER_SETS) {}

  get(json: string): CustomHeaders {
    let headers = this.parsed.get(json);
    if (headers === undefined) {
      headers = parseCustomHeaders(json);
      if (this.parsed.size >= this.capacity) this.parsed.clear();
      this.parsed.set(json, headers);
    }
    return headers;
  }
}
