/**
 * One error shape for every response: `{ error: { code, message, field?, details? } }`.
 * User mistakes (bad JSON, wrong content type, unknown route, …) are 4xx with a stable code;
 * only a genuine bug is a 500, and it is logged with the request id.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DibsError, isDibsError, type ErrorCode } from '../core/errors.js';

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_input',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_input',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_input',
  FST_ERR_VALIDATION: 'invalid_input',
};

export function toDibsError(error: unknown): DibsError | null {
  if (isDibsError(error)) return error;
  const fastify = error as FastifyError;
  const code = fastify.code ? FASTIFY_CODES[fastify.code] : undefined;
  if (code)
    return new DibsError(
      code,
      fastify.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ? `body is not valid JSON: ${fastify.message}` : fastify.message,
    );
  if (error instanceof SyntaxError && 'body' in error)
    return new DibsError('invalid_input', `body is not valid JSON: ${error.message}`);
  if (typeof fastify.statusCode === 'number' && fastify.statusCode >= 400 && fastify.statusCode < 500) {
    return new DibsError(
      fastify.statusCode === 413
        ? 'payload_too_large'
        : fastify.statusCode === 415
          ? 'unsupported_media_type'
          : 'invalid_input',
      fastify.message,
    );
  }
  return null;
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const known = toDibsError(error);
    if (known && known.code !== 'internal') {
      if (known.status >= 500) request.log.warn({ err: error }, known.message);
      if (known.code === 'unavailable') void reply.header('retry-after', '1');
      const shown = known.toJSON();
      // Names in messages are the caller's (tenant namespace removed); details go through preSerialization.
      if (request.tenant) shown.message = request.tenant.text(shown.message);
      return reply.status(known.status).send({ error: shown });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.status(500).send({ error: { code: 'internal', message: `internal error (request ${request.id})` } });
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .send({ error: { code: 'not_found', message: `no route ${request.method} ${request.url.split('?')[0]}` } }),
  );
}
