// Error codes and the JSON error body shared by every listener:
// {"error": "<code>", "message": "<sentence for a person>"} (DESIGN.md contracts).

export const ERROR_CODES = {
  missing_parameter: 400,
  invalid_parameter: 400,
  forbidden_character: 400,
  duplicate_parameter: 400,
  uppercase_not_allowed: 400,
  bad_encoding: 400,
  unknown_parameter: 400,
  unknown_dimension: 400,
  invalid_request: 400,
  invalid_session: 400,
  unauthorized: 401,
  /** OAuth2 (RFC 6749 5.2): a refresh token that is unknown, expired, reused or revoked. */
  invalid_grant: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  /** A body sent without Content-Length or Transfer-Encoding (RFC 9110 15.5.12). */
  length_required: 411,
  /** The request did not arrive within the listener's time (node:http's requestTimeout). */
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  rate_limited: 429,
  /** Request headers past the listener's limit. */
  header_too_large: 431,
  internal: 500,
  /** A transfer coding the server does not implement (RFC 9112 6.1: anything but chunked). */
  not_implemented: 501,
  unavailable: 503,
} as const;
export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorBody {
  error: ErrorCode;
  message: string;
}

/**
 * A refusal as plain data: the status to answer, the code and the sentence for a person.
 * Every "no" of the lookup path is one (the query scan, validation, the OpenRTB body, the
 * routes); no stack is captured, so a refused lookup costs no more than an answered one.
 */
export interface ErrorAnswer {
  readonly status: number;
  readonly code: ErrorCode;
  readonly message: string;
}

/** The one error body as JSON text: {"error": "<code>", "message": "<sentence>"}. */
export function errorJson(e: ErrorAnswer): string {
  return JSON.stringify({ error: e.code, message: e.message });
}

/** An error that carries its HTTP status and a message fit to show a person (thrown on the main thread's listeners). */
export class HttpError extends Error implements ErrorAnswer {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    status?: number,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.status = status ?? ERROR_CODES[code];
  }
  body(): ErrorBody {
    return { error: this.code, message: this.message };
  }
}

/** A refusal that names the offending request field: {"error":"unprocessable","message","field"} (422 unless `status` says). */
export class FieldError extends HttpError {
  constructor(
    readonly field: string,
    message: string,
    status?: number,
  ) {
    super('unprocessable', message, status);
  }
  override body(): ErrorBody & { field: string } {
    return { ...super.body(), field: this.field };
  }
}

/**
 * A listener that could not open (its port taken, its address not this host's, a port that
 * needs privileges): about the host, not a bug, so the CLI says it in one line, no stack.
 */
export class ListenError extends Error {}

/** What to do about a listen failure's system error code ('' when there is nothing to add). */
export function listenHint(code: string | undefined): string {
  switch (code) {
    case 'EADDRINUSE':
      return ' (another ivtd, or another program, holds it: stop it, or choose another port)';
    case 'EADDRNOTAVAIL':
      return ' (the address is not one of this host\'s: check --host or --metrics-host)';
    case 'EACCES':
      return ' (a port below 1024 needs the privilege to bind it: choose a higher port)';
    default:
      return '';
  }
}

/** Names HTTP statuses for uWS, which wants the whole status line text. */
export const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  204: '204 No Content',
  304: '304 Not Modified',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  408: '408 Request Timeout',
  411: '411 Length Required',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  422: '422 Unprocessable Entity',
  429: '429 Too Many Requests',
  431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error',
  501: '501 Not Implemented',
  503: '503 Service Unavailable',
};
