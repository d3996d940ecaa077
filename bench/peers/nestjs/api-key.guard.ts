// Bearer API keys, as a global guard: the service's own verifier (src/auth/api-keys.ts), so the
// peer does the same work per request: the API_KEYS list first, then the api_keys table by digest.
import { Inject, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { ApiKeyVerifier } from '../../../src/auth/api-keys.js';

export const API_KEY_VERIFIER = Symbol('API_KEY_VERIFIER');

@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(@Inject(API_KEY_VERIFIER) private readonly verifier: ApiKeyVerifier) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const identity = await this.verifier.authenticate(request.headers.authorization);
    if (!identity) throw new UnauthorizedException('A valid API key is required: send "Authorization: Bearer <key>".');
    return true;
  }
}
