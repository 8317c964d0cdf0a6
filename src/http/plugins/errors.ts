// The one place errors become responses: every non-2xx answer is {code, message, status}.
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ApiError,
  CommitOutcomeUnknownError,
  ERROR_STATUS,
  type ErrorCode,
  InternalError,
  InvalidContentTypeError,
  InvalidJsonError,
  InvalidRequestError,
  NotFoundError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  StoreUnavailableError,
} from '../../errors.js';
import { describeValidationError } from '../validation.js';

function toApiError(error: FastifyError, request: FastifyRequest, bodyLimit: number): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof CommitOutcomeUnknownError) {
    return new ServiceUnavailableError(
      'The database connection was lost while the change was being committed: it may or may not have been applied. ' +
        'Retry with the same Idempotency-Key to get its result exactly once.',
    );
  }
  if (error instanceof StoreUnavailableError) return new ServiceUnavailableError();
  if (error.validation && error.validation.length > 0) {
    const part = error.validationContext ?? 'body';
    if (part === 'body' && request.headers['content-type'] === undefined && (request.body === null || request.body === undefined)) {
      return new InvalidRequestError('The request body is required: send a JSON object with Content-Type: application/json.');
    }
    return new InvalidRequestError(describeValidationError(error.validation[0] as never, part));
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLargeError(bodyLimit);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new InvalidContentTypeError(
        `Content-Type "${request.headers['content-type'] ?? '(none)'}" is not supported. Send the body as JSON with Content-Type: application/json.`,
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new InvalidJsonError('The request body is empty. Send a JSON object.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new InvalidRequestError('The Content-Length header does not match the body sent.');
  }
  const status = error.statusCode ?? 500;
  if (status === 404) return new NotFoundError('Not found.');
  if (status >= 400 && status < 500) return new InvalidRequestError(error.message);
  return new InternalError();
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  414: 'URI Too Long',
  431: 'Request Header Fields Too Large',
};

/**
 * Writes an Error response straight to the socket and closes it: for failures Node
 * reports before Fastify sees a request (malformed HTTP, huge headers, timeouts, CONNECT).
 */
export function rawErrorReply(socket: Duplex, code: ErrorCode, message: string): void {
  const status = ERROR_STATUS[code];
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ code, message, status });
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${randomUUID()}\r\nX-Content-Type-Options: nosniff\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}

/** Node counts the request line in its 16 KiB of headers: an overflow inside a long first line is the URL's. */
function urlTooLong(error: Error & { rawPacket?: unknown }): boolean {
  if (!Buffer.isBuffer(error.rawPacket)) return false;
  const packet = error.rawPacket.toString('latin1', 0, Math.min(error.rawPacket.length, 32 * 1024));
  const end = packet.indexOf('\r\n');
  return /^[A-Z]+ \S/.test(packet) && (end === -1 ? packet.length : end) > 8 * 1024;
}

export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'HPE_HEADER_OVERFLOW' && urlTooLong(error)) {
    rawErrorReply(socket, 'uri_too_long', 'The request URL is longer than the server accepts (about 16 KiB with the headers). Shorten it: a cursor is a few hundred characters.');
  } else if (error.code === 'HPE_HEADER_OVERFLOW') {
    rawErrorReply(socket, 'headers_too_large', 'The request headers are larger than 16 KiB. Send smaller headers.');
  } else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    rawErrorReply(socket, 'request_timeout', 'The request was not received in time. Send it again, faster.');
  } else {
    rawErrorReply(socket, 'invalid_request', 'The HTTP request is malformed.');
  }
}

/** Errors Fastify raises before routing (bad percent-encoding, over-long path parameters); hooks do not run. */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'A path parameter is too long. Pet ids are integers from 1 to 9007199254740991.'
      : 'The request URL is malformed (bad percent-encoding?). Encode the path as UTF-8 percent-escapes.';
  const refused = new InvalidRequestError(message);
  void reply
    .status(refused.status)
    .headers({ 'x-request-id': request.id, 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' })
    .type('application/json; charset=utf-8')
    .send({ code: refused.code, message, status: refused.status });
}

export function registerErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const apiError = toApiError(error, request, bodyLimit);
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ code: apiError.code, status: apiError.status }, apiError.message);
    void reply
      .status(apiError.status)
      .headers(apiError.headers)
      .type('application/json; charset=utf-8')
      .send({ code: apiError.code, message: apiError.message, status: apiError.status });
  });

  app.setNotFoundHandler((request) => {
    throw new NotFoundError(`No route for ${request.method} ${request.url.split('?')[0]}. The operations are listed in /v1/openapi.json.`);
  });
}
