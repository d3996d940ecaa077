// Authentication decides a request's identity once: a stored key seen valid and then revoked costs
// one lookup and one look at the address's wrong-key standing, not one per step that re-checks it;
// and what it decides (the identity, or why there is none) is on the request for everything after.
import Fastify from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeyStore, type ApiKeyStore } from '../../src/auth/api-key-store.js';
import { createApiKeyVerifier } from '../../src/auth/api-keys.js';
import { parseConfig } from '../../src/config.js';
import { migrateDatabase, openDatabase, type Database } from '../../src/db/database.js';
import { authentication } from '../../src/http/call-pipeline.js';
import { requestLogController } from '../../src/http/request-record.js';
import { FixedWindowLimiter } from '../../src/limits/fixed-window-limiter.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** The real wrong-key limiter, counting how often it is asked. */
class CountingLimiter extends FixedWindowLimiter {
  peeks = 0;
  takes = 0;
  override peek(key: string) {
    this.peeks++;
    return super.peek(key);
  }
  override take(key: string, count?: number) {
    this.takes++;
    return super.take(key, count);
  }
}

let testDatabase: TestDatabase;
let database: Database;
let store: ApiKeyStore;
let app: ReturnType<typeof plainApp>;
// The service's log controller: it gives each request its decisions (`request.call`) on arrival.
const plainApp = () => Fastify({ loggerInstance: pino({ level: 'silent' }), logController: requestLogController() });
let lookups = 0;
const limiter = new CountingLimiter(20);

beforeAll(async () => {
  testDatabase = await createTestDatabase();
  await migrateDatabase(testDatabase.url);
  database = await openDatabase(parseConfig({ DATABASE_URL: testDatabase.url }));
  store = createApiKeyStore(database.prisma, { sqlite: database.sqlite });
  const counted = {
    findActiveByHash: (hash: string) => {
      lookups++;
      return store.findActiveByHash(hash);
    },
  };
  app = plainApp();
  await app.register(authentication, { verifier: createApiKeyVerifier({ envKeys: [], store: counted }), failureLimiter: limiter });
  app.get('/who', (request) => ({
    keyId: request.call.caller?.identity?.keyId ?? null,
    refused: request.call.caller?.refusal?.reason ?? null,
  }));
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await database?.close();
  await testDatabase?.drop();
});

async function who(headers: Record<string, string> = {}) {
  return (await app.inject({ url: '/who', headers })).json<{ keyId: string | null; refused: string | null }>();
}

describe('a request is authenticated once', () => {
  it('a stored key revoked after it was seen valid: one lookup, one standing, one failure counted', async () => {
    const { key, record } = await store.create('revoked-later');
    const auth = { authorization: `Bearer ${key}` };
    expect(await who(auth)).toEqual({ keyId: `key-${record.id}`, refused: null });
    expect(await who(auth)).toEqual({ keyId: `key-${record.id}`, refused: null });
    await store.revoke('revoked-later');
    lookups = limiter.peeks = limiter.takes = 0;
    expect(await who(auth)).toEqual({ keyId: null, refused: 'invalid_key' });
    expect({ lookups, peeks: limiter.peeks, takes: limiter.takes }).toEqual({ lookups: 1, peeks: 1, takes: 1 });
    // Now unknown: checked as a first attempt (counted before, as any guess).
    lookups = limiter.peeks = limiter.takes = 0;
    expect(await who(auth)).toEqual({ keyId: null, refused: 'invalid_key' });
    expect({ lookups, peeks: limiter.peeks, takes: limiter.takes }).toEqual({ lookups: 1, peeks: 0, takes: 1 });
  });

  it('records why a request has no identity: no key, or a wrong one', async () => {
    expect(await who()).toEqual({ keyId: null, refused: 'missing_key' });
    expect(await who({ authorization: 'Bearer not-a-key-at-all' })).toEqual({ keyId: null, refused: 'invalid_key' });
  });
});
