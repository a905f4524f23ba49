/** Header names of a delivery (spec 4.2). HTTP header names are case-insensitive. */
export const EVENT_ID_HEADER = 'Service-Event-Id';
export const SIGNATURE_HEADER = 'Service-Signature';
