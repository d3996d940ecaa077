// Spec 4.2 (POST /pets), with the table of bad bodies: each one gets a 400 in the envelope that
// names the field, and writes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, json } from '../support/test-server.js';
import { expectError } from '../support/expect-error.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const petCount = () => server.database.prisma.pet.count();

describe('POST /v1/pets (createPet)', () => {
  it('answers 201 with the created pet and its assigned id', async () => {
    const response = await server.post('/v1/pets', { name: 'Rex', categoryId: 3, status: 'pending' });
    expect(response.status).toBe(201);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const pet = await json(response);
    expect(pet).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: 3, status: 'pending' });
    expect(Number.isSafeInteger(pet.id) && pet.id > 0).toBe(true);

    const stored = await server.request(`/v1/pets/${pet.id}`);
    expect(await json(stored)).toEqual(pet);
  });

  it('makes a pet `available` when status is omitted', async () => {
    const pet = await json(server.post('/v1/pets', { name: 'Tom', categoryId: 1 }));
    expect(pet.status).toBe('available');
  });

  it('keeps names exactly as sent: unicode, inner and outer spaces, 100 characters', async () => {
    for (const name of ['Ünïcödé 🐕', '  spaced  out ', 'x'.repeat(100), 'O\'Brien "quoted" <b>']) {
      const response = await server.post('/v1/pets', { name, categoryId: 1 });
      expect(response.status).toBe(201);
      expect((await json(response)).name).toBe(name);
    }
  });

  it('round-trips the largest categoryId a JSON number holds exactly (2^53 − 1)', async () => {
    const response = await server.post('/v1/pets', { name: 'Big', categoryId: Number.MAX_SAFE_INTEGER });
    expect(response.status).toBe(201);
    const pet = await json(response);
    expect(pet.categoryId).toBe(Number.MAX_SAFE_INTEGER);
    expect((await json(server.request(`/v1/pets/${pet.id}`))).categoryId).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('accepts a JSON content type with parameters', async () => {
    const response = await server.post(
      '/v1/pets',
      { name: 'Charset', categoryId: 1 },
      {
        'content-type': 'application/json; charset=utf-8',
      },
    );
    expect(response.status).toBe(201);
  });

  describe('refuses bad bodies with 400, naming the field, and stores nothing', () => {
    const cases: Array<[string, string, RegExp]> = [
      ['name missing', '{"categoryId":1}', /name: is required/],
      ['categoryId missing', '{"name":"Rex"}', /categoryId: is required/],
      ['both missing', '{}', /name: is required; categoryId: is required/],
      ['name empty', '{"name":"","categoryId":1}', /name: must not be empty/],
      ['name blank', '{"name":"   ","categoryId":1}', /name: must not be blank/],
      ['name too long', JSON.stringify({ name: 'x'.repeat(101), categoryId: 1 }), /name: must be at most 100/],
      ['name null', '{"name":null,"categoryId":1}', /name: must be a string/],
      ['name a number', '{"name":7,"categoryId":1}', /name: must be a string/],
      ['name an object', '{"name":{"first":"Rex"},"categoryId":1}', /name: must be a string/],
      ['name with NUL', '{"name":"Re\\u0000x","categoryId":1}', /name: must not contain control characters/],
      ['name with newline', '{"name":"Re\\nx","categoryId":1}', /name: must not contain control characters/],
      ['categoryId a string', '{"name":"Rex","categoryId":"7"}', /categoryId: must be an integer/],
      ['categoryId fractional', '{"name":"Rex","categoryId":1.5}', /categoryId: must be an integer/],
      ['categoryId null', '{"name":"Rex","categoryId":null}', /categoryId: must be an integer/],
      ['categoryId true', '{"name":"Rex","categoryId":true}', /categoryId: must be an integer/],
      ['categoryId an array', '{"name":"Rex","categoryId":[7]}', /categoryId: must be an integer/],
      ['categoryId zero', '{"name":"Rex","categoryId":0}', /categoryId: must be at least 1/],
      ['categoryId negative', '{"name":"Rex","categoryId":-5}', /categoryId: must be at least 1/],
      ['categoryId 2^53', '{"name":"Rex","categoryId":9007199254740992}', /categoryId: must be at most/],
      ['categoryId 2^53 + 1 (rounds in JSON.parse)', '{"name":"Rex","categoryId":9007199254740993}', /categoryId: must be at most/],
      ['categoryId 1e300', '{"name":"Rex","categoryId":1e300}', /categoryId: must be at most/],
      ['status unknown', '{"name":"Rex","categoryId":1,"status":"lost"}', /status: must be one of available, pending, sold/],
      ['status in capitals', '{"name":"Rex","categoryId":1,"status":"SOLD"}', /status: must be one of/],
      ['status null', '{"name":"Rex","categoryId":1,"status":null}', /status: must be one of/],
      ['a client-chosen id', '{"id":5,"name":"Rex","categoryId":1}', /id/],
      ['a misspelt field', '{"name":"Rex","categoryID":1}', /categoryID|categoryId/],
      ['an array body', '[{"name":"Rex","categoryId":1}]', /body: must be a JSON object/],
      ['a string body', '"Rex"', /body: must be a JSON object/],
      ['a number body', '42', /body: must be a JSON object/],
      ['null body', 'null', /body: must be a JSON object/],
      ['invalid JSON', '{"name":"Rex",', /body: is not valid JSON/],
      ['trailing garbage', '{"name":"Rex","categoryId":1} x', /body: is not valid JSON/],
      ['empty body', '', /body: is required/],
    ];

    it.each(cases)('%s', async (_label, body, message) => {
      const before = await petCount();
      await expectError(await server.post('/v1/pets', body), 400, 'BAD_REQUEST', message);
      expect(await petCount()).toBe(before);
    });
  });

  it('refuses a body that is not JSON with 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const response = await server.request('/v1/pets', {
        method: 'POST',
        headers: { 'content-type': type },
        body: 'name=Rex&categoryId=1',
      });
      await expectError(response, 415, 'UNSUPPORTED_MEDIA_TYPE', /application\/json/);
    }
  });

  it('refuses a body over the size limit with 413 and keeps serving', async () => {
    const response = await server.post('/v1/pets', { name: 'Rex', categoryId: 1, padding: 'x'.repeat(100 * 1024) });
    await expectError(response, 413, 'PAYLOAD_TOO_LARGE');
    expect((await server.post('/v1/pets', { name: 'After', categoryId: 1 })).status).toBe(201);
  });

  it('200 concurrent creates all succeed, with distinct ids, all listed', async () => {
    const before = await petCount();
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => server.post('/v1/pets', { name: `burst-${i}`, categoryId: 9 })),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(200).fill(201));
    const pets = await Promise.all(responses.map((response) => json(response)));
    expect(new Set(pets.map((pet) => pet.id)).size).toBe(200);
    expect(new Set(pets.map((pet) => pet.name)).size).toBe(200);
    expect(await petCount()).toBe(before + 200);
  });
});
