// The peer's one module: the database, the repository, the API-key verifier, the controller and the guard.
import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { createApiKeyVerifier } from '../../../src/auth/api-keys.js';
import { API_KEY_VERIFIER, ApiKeyGuard } from './api-key.guard.js';
import { PetsController } from './pets.controller.js';
import { openDatabase } from '../sqlite-pets.js';
import { DATABASE, PetsRepository } from './pets.repository.js';

@Module({
  controllers: [PetsController],
  providers: [
    {
      provide: DATABASE,
      useFactory: () => {
        const { PEER_DB, PEER_MIGRATIONS } = process.env;
        if (!PEER_DB || !PEER_MIGRATIONS) throw new Error('PEER_DB and PEER_MIGRATIONS are required');
        return openDatabase(PEER_DB, PEER_MIGRATIONS);
      },
    },
    PetsRepository,
    {
      provide: API_KEY_VERIFIER,
      inject: [PetsRepository],
      useFactory: (store: PetsRepository) => createApiKeyVerifier({ envKeys: (process.env.API_KEYS ?? '').split(','), store }),
    },
    { provide: APP_GUARD, useClass: ApiKeyGuard },
  ],
})
export class AppModule {}
