// Spec sections 4 and 9 as an OpenAPI document: valid, generated from the procedures, and true to
// what the server answers (every live response below is checked against it).
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restOperations } from './support/operations.js';
import { startTestServer, type TestServer } from './support/test-server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is walked by path; its exact shape is what the tests assert
type Doc = any;
let server: TestServer;
let doc: Doc;

beforeAll(async () => {
  server = await startTestServer();
  const response = await fetch(`${server.baseUrl}/v1/openapi.json`); // no key: the document is public
  expect(response.status).toBe(200);
  doc = await response.json();
});
afterAll(() => server.close());

describe('the document', () => {
  it('is a valid OpenAPI document', async () => {
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
  });

  it('describes exactly the operations of the router, with their operationIds and tags', () => {
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item as object).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId} ${op.tags}`),
    );
    const declared = restOperations().map(({ method, path, operationId, tag }) => `${method} ${path} ${operationId} ${tag}`);
    expect(operations.sort()).toEqual(declared.sort());
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.tags.map((tag: { name: string }) => tag.name)).toEqual(['Pets', 'Store']);
  });

  it('has servers ending in /v1 and a bearer scheme required by every operation', () => {
    expect(doc.servers.map((server: { url: string }) => server.url).every((url: string) => url.endsWith('/v1'))).toBe(true);
    expect(Object.values(doc.components.securitySchemes)).toEqual([expect.objectContaining({ type: 'http', scheme: 'bearer' })]);
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item as Record<string, Doc>)) expect(op.security).toEqual([{ bearerAuth: [] }]);
    }
  });

  it('says 201 for createPet and 200 for the others', () => {
    expect(Object.keys(doc.paths['/pets'].post.responses)).toContain('201');
    expect(Object.keys(doc.paths['/pets'].post.responses)).not.toContain('200');
    expect(Object.keys(doc.paths['/pets'].get.responses)).toContain('200');
    expect(Object.keys(doc.paths['/pets/{petId}'].get.responses)).toContain('200');
  });

  it('lists the spec’s error statuses, each with the Error schema', () => {
    const statuses = (path: string, method: string) => Object.keys(doc.paths[path][method].responses).filter((s) => Number(s) >= 400);
    expect(statuses('/pets', 'get')).toEqual(expect.arrayContaining(['400', '401', '503']));
    expect(statuses('/pets', 'post')).toEqual(expect.arrayContaining(['400', '401', '503']));
    expect(statuses('/pets/{petId}', 'get')).toEqual(expect.arrayContaining(['401', '404', '503']));
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item as Record<string, Doc>)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, Doc>)) {
          if (Number(status) >= 400) expect(response.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
        }
      }
    }
    expect(doc.components.schemas.Error.required.sort()).toEqual(['code', 'message', 'status']);
  });

  it('types ids as integer/int64 and states the limit bounds and default', () => {
    const pet = doc.components.schemas.Pet;
    expect(pet.properties.id).toMatchObject({ type: 'integer', format: 'int64' });
    expect(pet.properties.categoryId).toMatchObject({ type: 'integer', format: 'int64' });
    expect(pet.required.sort()).toEqual(['categoryId', 'id', 'name', 'status']);
    const petId = doc.paths['/pets/{petId}'].get.parameters.find((p: Doc) => p.name === 'petId');
    expect(petId).toMatchObject({ in: 'path', required: true, schema: { type: 'integer', format: 'int64' } });
    const limit = doc.paths['/pets'].get.parameters.find((p: Doc) => p.name === 'limit');
    expect(limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 20 });
    const status = doc.paths['/pets'].get.parameters.find((p: Doc) => p.name === 'status');
    expect(status.required ?? false).toBe(false);
    expect(doc.components.schemas.PetStatus.enum).toEqual(['available', 'pending', 'sold']);
  });

  it('leaves response objects open to new fields and error codes open to new values; the create body stays closed', () => {
    expect(JSON.stringify(doc.components.schemas.Pet)).not.toContain('additionalProperties');
    expect(JSON.stringify(doc.components.schemas.Error)).not.toContain('additionalProperties');
    const code = doc.components.schemas.Error.properties.code;
    expect(code.enum).toBeUndefined();
    expect(code).toMatchObject({ type: 'string', 'x-extensible-enum': expect.arrayContaining(['BAD_REQUEST', 'NOT_FOUND']) });
    expect(code.description).toMatch(/More may be added/);
    expect(doc.paths['/pets'].post.requestBody.content['application/json'].schema.additionalProperties).toBe(false);
  });

  it('marks getPet deprecated, with the deprecation headers documented', () => {
    const getPet = doc.paths['/pets/{petId}'].get;
    expect(getPet.deprecated).toBe(true);
    for (const status of ['200', '400', '401', '404']) {
      expect(Object.keys(getPet.responses[status].headers)).toEqual(expect.arrayContaining(['Deprecation', 'Link', 'Sunset']));
    }
    expect(Object.keys(doc.paths['/pets'].get.responses['200'].headers)).not.toContain('Deprecation');
    expect(doc.paths['/pets'].get.deprecated).toBeUndefined();
  });

  it('names `name` with one string schema: one pattern, no allOf (generators read it as a string)', () => {
    const name = doc.components.schemas.Pet.properties.name;
    expect(name).toMatchObject({ type: 'string', minLength: 1, maxLength: 100, pattern: expect.any(String) });
    expect(name.allOf).toBeUndefined();
    const pattern = new RegExp(name.pattern, 'u'); // JSON Schema patterns are ECMA-262 with Unicode
    for (const good of ['Rex', ' Rex ', 'Ünïcødé 🐈', 'a']) expect(pattern.test(good), good).toBe(true);
    for (const bad of ['', '   ', '\u3000', 'a\u0000b', 'line\nbreak', 'tab\there', 'a\u0085', '\u200b', '\ud800'])
      expect(pattern.test(bad), JSON.stringify(bad)).toBe(false);
    // The pattern is the whole rule (test/openapi-patterns.test.ts); the description says it in words.
    expect(name.description).toMatch(/U\+200B/);
    expect(name.description).toMatch(/unpaired surrogates/);
    expect(JSON.stringify(doc)).not.toContain('allOf'); // the create body's name too
  });

  it('documents 401 with WWW-Authenticate, 429 with Retry-After and 431 on every operation', () => {
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item as Record<string, Doc>)) {
        expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '429', '431']));
        expect(resolveHeaders(op.responses['401'])['WWW-Authenticate']).toMatchObject({ required: true });
        expect(resolveHeaders(op.responses['429'])['Retry-After']).toMatchObject({ required: true });
        // Written by Node's parser's handler (src/app.ts): a new request id and trace, nothing of the operation's.
        expect(Object.keys(op.responses['431'].headers ?? {})).toEqual(['X-Request-Id', 'traceparent']);
        expect(resolveHeaders(op.responses['200'] ?? op.responses['201'])['X-Request-Id']).toMatchObject({ required: true });
      }
    }
    expect(Object.keys(doc.paths['/pets'].post.responses['201'].headers)).toContain('Idempotent-Replayed');
  });

  it('documents Idempotency-Key with the pattern the server applies', async () => {
    const header = doc.paths['/pets'].post.parameters.find((p: Doc) => p.name === 'Idempotency-Key');
    expect(header).toMatchObject({ in: 'header', description: expect.stringMatching(/retry/) });
    expect(header.required ?? false).toBe(false);
    // No example: the reference page would fill it in, and every Execute would send the same key.
    expect(header.example ?? header.schema.example ?? header.examples).toBeUndefined();
    const pattern = new RegExp(header.schema.pattern);
    const cases = ['abc-123', '"quoted"', 'x'.repeat(255), 'x'.repeat(256), 'a b', 'tab\tkey', 'ünï', '"', 'a"b'];
    for (const key of cases) {
      const response = await server.post('/v1/pets', { name: 'Key', categoryId: 1 }, { 'idempotency-key': key });
      expect(response.status === 400, `${key}: documented ${pattern.test(key)}, answered ${response.status}`).toBe(!pattern.test(key));
    }
  });

  it('describes every parameter on the parameter object, has a license and describes every tag', () => {
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item as Record<string, Doc>)) {
        for (const parameter of op.parameters ?? []) expect(parameter.description, parameter.name).toMatch(/\w/);
      }
    }
    expect(doc.info.license).toMatchObject({ name: expect.any(String) });
    for (const tag of doc.tags) expect(tag.description, tag.name).toMatch(/\w/);
  });
});

/** A response's headers, with `$ref`s to components.headers resolved. */
function resolveHeaders(response: Doc): Record<string, Doc> {
  return Object.fromEntries(
    Object.entries((response.headers ?? {}) as Record<string, Doc>).map(([name, header]) => [
      name,
      header.$ref ? doc.components.headers[header.$ref.split('/').pop()] : header,
    ]),
  );
}

/** The headers of ours a response may carry; each must be documented on the response that carries it. */
const SERVICE_HEADERS = [
  'x-request-id',
  'traceparent',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'www-authenticate',
  'idempotent-replayed',
  'deprecation',
  'sunset',
  'link',
];

describe('live responses match the document', () => {
  let validate: (schema: object, data: unknown) => string | null;

  beforeAll(() => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
    ajv.addSchema({ $id: 'openapi', components: doc.components });
    validate = (schema, data) => {
      const check = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('#/components', 'openapi#/components')));
      return check(data) ? null : ajv.errorsText(check.errors);
    };
  });

  const requests: Array<[string, string, string, () => Promise<Response>]> = [
    ['/pets', 'post', 'created', () => server.post('/v1/pets', { name: 'Doc', categoryId: 5 })],
    ['/pets', 'post', 'created with a key', () => server.post('/v1/pets', { name: 'Doc', categoryId: 5 }, { 'idempotency-key': 'doc-1' })],
    ['/pets', 'post', 'replayed', () => server.post('/v1/pets', { name: 'Doc', categoryId: 5 }, { 'idempotency-key': 'doc-1' })],
    ['/pets', 'post', 'key reused', () => server.post('/v1/pets', { name: 'Other', categoryId: 5 }, { 'idempotency-key': 'doc-1' })],
    [
      '/pets',
      'post',
      'wrong key',
      () => server.post('/v1/pets', { name: 'X', categoryId: 1 }, { authorization: 'Bearer wrong-wrong-wrong-wrong' }),
    ],
    ['/pets', 'post', 'bad body', () => server.post('/v1/pets', { name: '' })],
    ['/pets', 'post', 'no key', () => server.post('/v1/pets', { name: 'X', categoryId: 1 }, { authorization: '' })],
    ['/pets', 'post', 'too large', () => server.post('/v1/pets', { name: 'x'.repeat(70_000), categoryId: 1 })],
    [
      '/pets',
      'post',
      'not JSON',
      () => server.request('/v1/pets', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' }),
    ],
    ['/pets', 'get', 'list', () => server.request('/v1/pets?limit=5&status=available')],
    ['/pets', 'get', 'bad limit', () => server.request('/v1/pets?limit=0')],
    ['/pets', 'get', 'no key', () => server.request('/v1/pets', { headers: { authorization: 'Bearer wrong-wrong-wrong-wrong' } })],
    ['/pets/{petId}', 'get', 'found', () => server.request('/v1/pets/1')],
    ['/pets/{petId}', 'get', 'missing', () => server.request('/v1/pets/4242')],
    ['/pets/{petId}', 'get', 'bad id', () => server.request('/v1/pets/x')],
    ['/pets/{petId}', 'get', 'no key', () => server.request('/v1/pets/1', { headers: { authorization: '' } })],
    ['/pets', 'get', 'headers too large', () => server.request('/v1/pets', { headers: { 'x-padding': 'a'.repeat(20_000) } })],
    [
      '/pets',
      'get',
      'rate limited',
      async () => {
        const limited = await startTestServer({ config: { rateLimitPerMinute: 1 } });
        await limited.request('/v1/pets');
        const response = await limited.request('/v1/pets');
        await limited.close();
        return response;
      },
    ],
  ];

  it.each(requests)('%s %s (%s): status listed, body matches its schema', async (path, method, _label, send) => {
    const response = await send();
    const operation = doc.paths[path][method];
    const documented = operation.responses[String(response.status)];
    expect(documented, `status ${response.status} is not documented for ${method} ${path}`).toBeDefined();
    const body = await response.json();
    expect(validate(documented.content['application/json'].schema, body)).toBeNull();
    const headers = resolveHeaders(documented);
    for (const [name, header] of Object.entries(headers)) {
      if (header.required) expect(response.headers.get(name), `${name} is required`).not.toBeNull();
    }
    const documentedNames = Object.keys(headers).map((name) => name.toLowerCase());
    for (const name of SERVICE_HEADERS) {
      if (response.headers.has(name)) expect(documentedNames, `${name} is sent but not documented`).toContain(name);
    }
  });
});

describe('integer query and path parameters (docs/decisions.md, "Errors for a bad limit / status / after")', () => {
  it.each([
    ['05', 200],
    ['0005', 200],
    ['5', 200],
    ['+5', 400],
    ['1.0', 400],
    ['5.', 400],
    ['5e0', 400],
    ['%205', 400],
  ])('limit=%s → %i: plain decimal digits, leading zeros allowed', async (value, status) => {
    const response = await server.request(`/v1/pets?limit=${value}`);
    expect(response.status).toBe(status);
    if (status === 400) expect(((await response.json()) as { message: string }).message).toBe('limit: must be an integer');
  });

  it('a petId with leading zeros is the same pet', async () => {
    const created = (await (await server.post('/v1/pets', { name: 'Zero-led', categoryId: 1 })).json()) as { id: number };
    const found = await server.request(`/v1/pets/00${created.id}`);
    expect(found.status).toBe(200);
    expect(((await found.json()) as { id: number }).id).toBe(created.id);
    expect((await server.request(`/v1/pets/%2B${created.id}`)).status).toBe(400);
  });
});
