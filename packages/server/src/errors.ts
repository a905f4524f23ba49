/**
 * The one error module. Every failure the service reports to a caller is an `AppError` of an
 * explicit kind; the kind fixes the HTTP status and the `type` of the error body
 * `{error: {type, code, message, param?}}`. `code` is machine-readable and stable.
 */
export const ERROR_KINDS = {
  invalid_request: { status: 400, type: 'invalid_request_error' },
  authentication: { status: 401, type: 'authentication_error' },
  forbidden: { status: 403, type: 'permission_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  request_timeout: { status: 408, type: 'invalid_request_error' },
  conflict: { status: 409, type: 'idempotency_error' },
  /** The object is not in a state that allows the operation (e.g. an illegal payment transition). */
  invalid_state: { status: 409, type: 'invalid_request_error' },
  payload_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  unprocessable: { status: 422, type: 'invalid_request_error' },
  headers_too_large: { status: 431, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  internal: { status: 500, type: 'api_error' },
  unavailable: { status: 503, type: 'api_error' },
} as const;

export type ErrorKind = keyof typeof ERROR_KINDS;

export interface ErrorBody {
  error: { type: string; code: string; message: string; param?: string };
}

export class AppError extends Error {
  readonly kind: ErrorKind;
  readonly code: string;
  readonly param: string | undefined;
  /** Extra response headers, e.g. Retry-After for rate limits. */
  readonly headers: Record<string, string>;

  constructor(kind: ErrorKind, code: string, message: string, options: { param?: string; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = 'AppError';
    this.kind = kind;
    this.code = code;
    this.param = options.param;
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return ERROR_KINDS[this.kind].status;
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { error: { type: ERROR_KINDS[this.kind].type, code: this.code, message: this.message } };
    if (this.param !== undefined) body.error.param = this.param;
    return body;
  }
}

/** Raised at start when a setting is missing or malformed; the CLI prints it and exits 1. */
export class ConfigError extends Error {
  /** `cause`: the underlying failure, printed (with its stack) only at log level debug or trace. */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigError';
  }
}

export const notFound = (what: string, id: string, param = 'id') =>
  new AppError('not_found', 'resource_missing', `No such ${what}: '${id}'.`, { param });
