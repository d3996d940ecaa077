// The contract can grow and cannot break by accident (docs/api.md, "How the API changes"): the
// OpenAPI document and the client package's declarations are compared with the last released ones
// (contract/released/, written by `npm run contract:release`), and every change that could break a
// client written against those must be listed, with its reason, in contract/deliberate-breaks.json.
// The comparers are tested here too, on each kind of break they are there to catch.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { declarationBreaks, type DeclarationBreak } from '../scripts/contract/declaration-breaks.js';
import { openApiBreaks } from '../scripts/contract/openapi-breaks.js';
import { servedOpenApiDocument } from '../src/cli/rest-api-types.js';

const ROOT = resolve('.');
const RELEASED = join(ROOT, 'contract', 'released');

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- documents are walked by path
type Doc = any;

let released: Doc;
let deliberate: string[];
let scratch: string;
let currentDeclarations: string;
beforeAll(async () => {
  released = JSON.parse(await readFile(join(RELEASED, 'openapi.json'), 'utf8'));
  deliberate = (
    JSON.parse(await readFile(join(ROOT, 'contract', 'deliberate-breaks.json'), 'utf8')) as Array<{ change: string; why: string }>
  ).map((entry) => {
    expect(entry.why, `a deliberate break says why: ${entry.change}`).toMatch(/\w{3}/);
    return entry.change;
  });
  scratch = await mkdtemp(join(tmpdir(), 'animal-store-contract-'));
  currentDeclarations = join(scratch, 'current');
  await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'scripts', 'pack-client.ts'), '--out-dir', scratch, '--declarations-dir', currentDeclarations],
    { cwd: ROOT },
  );
}, 120_000);
afterAll(() => (scratch ? rm(scratch, { recursive: true, force: true }) : undefined));

/** A work folder inside the repository (the declarations import @trpc/* from its node_modules). */
const workDir = (name: string) => join(ROOT, 'dist', `contract-check-${process.pid}-${name}`);

/** The current declarations' breaks against the released ones: found once, read by two tests. */
let currentBreaks: Promise<DeclarationBreak[]> | undefined;
const breaksOfCurrent = () => (currentBreaks ??= declarationBreaks(join(RELEASED, 'client'), currentDeclarations, workDir('current')));

describe('against the released contract', () => {
  it('the OpenAPI document breaks nothing but the listed deliberate changes', async () => {
    const breaks = openApiBreaks(released, await servedOpenApiDocument());
    expect(breaks.filter((change) => !deliberate.includes(change))).toEqual([]);
  });

  it('the client package’s declarations break nothing but the listed deliberate changes', { timeout: 60_000 }, async () => {
    const breaks = await breaksOfCurrent();
    expect(breaks.filter(({ change }) => !deliberate.includes(change))).toEqual([]);
  });

  it('every listed deliberate change is still a change (the list is emptied at each release)', { timeout: 60_000 }, async () => {
    const breaks = [...openApiBreaks(released, await servedOpenApiDocument()), ...(await breaksOfCurrent()).map(({ change }) => change)];
    expect(deliberate.filter((change) => !breaks.includes(change))).toEqual([]);
  });
});

/** The current document, changed by `edit`, compared with itself. */
async function breaksAfter(edit: (document: Doc) => void): Promise<string[]> {
  const current = await servedOpenApiDocument();
  const changed = structuredClone(current);
  edit(changed);
  return openApiBreaks(current, changed);
}

describe('the document comparer', () => {
  it('finds nothing between a document and itself', () => {
    expect(openApiBreaks(released, structuredClone(released))).toEqual([]);
  });

  it.each<[string, (document: Doc) => void, string]>([
    ['a removed operation', (d) => delete d.paths['/pets/{petId}'].get, 'GET /pets/{petId}: operation removed'],
    ['a renamed operation', (d) => (d.paths['/pets'].get.operationId = 'findPets'), 'GET /pets: operationId listPets → findPets'],
    ['a removed response field', (d) => delete d.components.schemas.Pet.properties.categoryId, 'schema Pet (output).categoryId: removed'],
    [
      'a response field no longer always present',
      (d) => (d.components.schemas.Pet.required = ['id', 'name', 'status']),
      'schema Pet (output).categoryId: no longer always present',
    ],
    [
      'a response field of another type',
      (d) => (d.components.schemas.Pet.properties.id.type = 'string'),
      'schema Pet (output).id: type integer → string',
    ],
    [
      'a new value of a closed response enum',
      (d) => d.components.schemas.PetStatus.enum.push('lost'),
      'schema PetStatus (output): new value "lost"',
    ],
    [
      'a removed error code',
      (d) => (d.components.schemas.Error.properties.code['x-extensible-enum'] = ['BAD_REQUEST']),
      'schema Error (output).code: known value "NOT_FOUND" removed',
    ],
    [
      'a new required body field',
      (d) => d.paths['/pets'].post.requestBody.content['application/json'].schema.required.push('status'),
      'POST /pets: request body.status: new required field',
    ],
    [
      'a removed body field (unknown fields are refused)',
      (d) => delete d.paths['/pets'].post.requestBody.content['application/json'].schema.properties.status,
      'POST /pets: request body.status: removed',
    ],
    [
      'a narrowed input bound',
      (d) => (d.paths['/pets'].get.parameters.find((p: Doc) => p.name === 'limit').schema.maximum = 50),
      'GET /pets: query parameter limit: maximum 100 → 50',
    ],
    [
      'an input value no longer accepted',
      (d) => d.components.schemas.PetStatus.enum.pop(),
      'schema PetStatus (input): value "sold" no longer accepted',
    ],
    [
      'a new required parameter',
      (d) => d.paths['/pets'].get.parameters.push({ name: 'shop', in: 'query', required: true, schema: { type: 'string' } }),
      'GET /pets: query parameter shop: new and required',
    ],
    [
      'a removed parameter',
      (d) => (d.paths['/pets'].get.parameters = d.paths['/pets'].get.parameters.filter((p: Doc) => p.name !== 'after')),
      'GET /pets: query parameter after: removed',
    ],
    [
      'an optional parameter made required',
      (d) => (d.paths['/pets'].get.parameters.find((p: Doc) => p.name === 'limit').required = true),
      'GET /pets: query parameter limit: now required',
    ],
  ])('catches %s', async (_kind, edit, expected) => {
    expect(await breaksAfter(edit)).toContain(expected);
  });

  it.each<[string, (document: Doc) => void]>([
    ['a new response field', (d) => (d.components.schemas.Pet.properties.colour = { type: 'string' })],
    ['a new error code', (d) => d.components.schemas.Error.properties.code['x-extensible-enum'].push('CONFLICT')],
    ['a new optional parameter', (d) => d.paths['/pets'].get.parameters.push({ name: 'q', in: 'query', schema: { type: 'string' } })],
    ['a widened input bound', (d) => (d.paths['/pets'].get.parameters.find((p: Doc) => p.name === 'limit').schema.maximum = 500)],
    ['a new operation', (d) => (d.paths['/pets/{petId}'].delete = { operationId: 'deletePet', responses: {} })],
  ])('lets %s through (the contract may grow)', async (_kind, edit) => {
    expect(await breaksAfter(edit)).toEqual([]);
  });
});

describe('the declarations comparer', () => {
  /** The released declarations with `edit` applied to one file's text, compared with the released ones. */
  async function breaksAfterEdit(file: string, edit: (text: string) => string): Promise<string[]> {
    const changed = join(scratch, `edited-${file}`);
    await cp(join(RELEASED, 'client'), changed, { recursive: true });
    const text = await readFile(join(changed, file), 'utf8');
    const edited = edit(text);
    expect(edited).not.toBe(text);
    await writeFile(join(changed, file), edited);
    const breaks = await declarationBreaks(join(RELEASED, 'client'), changed, workDir(file));
    return breaks.map(({ change }) => change);
  }

  it('finds nothing between the released declarations and themselves', { timeout: 60_000 }, async () => {
    expect(await declarationBreaks(join(RELEASED, 'client'), join(RELEASED, 'client'), workDir('same'))).toEqual([]);
    expect((await readdir(join(RELEASED, 'client'))).sort()).toContain('app-router.d.ts');
  });

  it('catches a removed export', { timeout: 60_000 }, async () => {
    const breaks = await breaksAfterEdit('index.d.ts', (text) => text.replace('export { createRestClient, ', 'export { '));
    expect(breaks).toContain('client createRestClient');
  });

  it('catches an optional input made required', { timeout: 60_000 }, async () => {
    const breaks = await breaksAfterEdit('app-router.d.ts', (text) => text.replace('limit?: number | undefined;', 'limit: number;'));
    expect(breaks).toContain('client RouterInputs');
  });

  it('catches an output of another type', { timeout: 60_000 }, async () => {
    const breaks = await breaksAfterEdit('app-router.d.ts', (text) => text.replaceAll('id: number;', 'id: string;'));
    expect(breaks).toContain('client RouterOutputs');
  });

  it('lets a new output field through', { timeout: 60_000 }, async () => {
    const breaks = await breaksAfterEdit('app-router.d.ts', (text) => text.replaceAll('id: number;', 'id: number;\n colour?: string;'));
    expect(breaks).toEqual([]);
  });
});
