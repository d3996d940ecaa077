// The error envelope `{ code, message, status }` for every error, as one global exception filter.
import {
  Catch,
  HttpException,
  HttpStatus,
  type ArgumentsHost,
  type ExceptionFilter,
  type StandardSchemaValidationPipeOptions,
} from '@nestjs/common';
import type { FastifyReply } from 'fastify';

type Issues = Parameters<NonNullable<StandardSchemaValidationPipeOptions['exceptionFactory']>>[0];

/** Validation issues as one sentence: `name: must not be empty; categoryId: …`. */
export function issuesSentence(issues: Issues): string {
  return issues
    .map((issue) => {
      const path = (issue.path ?? []).map((segment) => String(typeof segment === 'object' ? segment.key : segment)).join('.');
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

@Catch()
export class EnvelopeFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const status = exception instanceof HttpException ? exception.getStatus() : HttpStatus.INTERNAL_SERVER_ERROR;
    // An unexpected error never shows its message.
    const message = exception instanceof HttpException ? exception.message : 'Internal server error';
    if (status === 401) void reply.header('www-authenticate', 'Bearer');
    void reply.status(status).send({ code: HttpStatus[status] ?? 'ERROR', message, status });
  }
}
