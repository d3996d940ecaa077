// The error envelope `{ code, message, status }` for every error, as one global exception filter.
import { Catch, HttpException, HttpStatus, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply } from 'fastify';

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
