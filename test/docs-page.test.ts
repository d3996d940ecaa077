// The API reference page at /v1/docs, as a person meets it: loaded in a real browser (the headless
// Chromium that the npm package @sparticuz/chromium ships, test/support/headless-chromium.ts) from a real
// server, with a key pasted in to try an operation. A screenshot of the page is kept in
// test-artifacts/ to look at.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchHeadlessChromium, type HeadlessChromium } from './support/headless-chromium.js';
import { restOperations } from './support/operations.js';
import { API_KEY, json, startTestServer, type TestServer } from './support/test-server.js';

const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/', import.meta.url));
// Starting a browser and rendering a 1.7 MB bundle takes seconds, more on a busy machine.
const BROWSER_TIMEOUT_MS = 60_000;

let server: TestServer;
let chromium: HeadlessChromium;
let browser: Browser;

beforeAll(async () => {
  server = await startTestServer();
  chromium = await launchHeadlessChromium();
  browser = chromium.browser;
}, BROWSER_TIMEOUT_MS);
afterAll(async () => {
  await chromium?.close();
  // Connections the browser opened but never sent a request on (Chromium preconnects) are not
  // "idle" to Node, so the server's close would wait for them: cut them, the browser is gone.
  server?.app.server.closeAllConnections();
  await server?.close();
});

interface PageProblems {
  consoleErrors: string[];
  failedRequests: string[];
  otherHosts: string[];
}

/** A new page that records console errors, failed requests and any request off the server. */
async function openPage(): Promise<{ page: Page; problems: PageProblems }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems: PageProblems = { consoleErrors: [], failedRequests: [], otherHosts: [] };
  page.on('console', (message) => message.type() === 'error' && problems.consoleErrors.push(message.text()));
  page.on('pageerror', (error) => problems.consoleErrors.push(error.message));
  page.on('requestfailed', (request) => problems.failedRequests.push(`${request.url()}: ${request.failure()?.errorText}`));
  page.on('response', (response) => response.status() >= 400 && problems.failedRequests.push(`${response.status()} ${response.url()}`));
  page.on('request', (request) => {
    if (!request.url().startsWith(`${server.baseUrl}/`) && !request.url().startsWith('data:')) problems.otherHosts.push(request.url());
  });
  return { page, problems };
}

const operation = (page: Page, operationId: string) => page.locator(`#operations-Pets-${operationId}`);

/** Opens an operation and presses "Try it out", as a person does (it starts off). */
async function tryOut(page: Page, operationId: string) {
  const opened = operation(page, operationId);
  await opened.locator('.opblock-summary').click();
  const button = opened.locator('button.try-out__btn');
  await expect(button.textContent()).resolves.toBe('Try it out ');
  await button.click();
  await expect(button.textContent()).resolves.toBe('Cancel');
  return opened;
}

/** Pastes the key into the page's Authorize dialog, as a person does. */
async function authorize(page: Page): Promise<void> {
  await page.locator('.auth-wrapper button.authorize').click();
  // The dialog says where a key comes from.
  await expect(page.locator('.modal-ux').textContent()).resolves.toMatch(/npm run keys -- create --name <name>/);
  await page.locator('.modal-ux input').fill(API_KEY);
  await page.locator('.modal-ux button.authorize').click();
  await page.locator('.modal-ux button.btn-done').click();
}

describe('/v1/docs in a browser', { timeout: BROWSER_TIMEOUT_MS }, () => {
  it('shows every operation of the router, loads only from the server, with no console errors or failed requests', async () => {
    const { page, problems } = await openPage();
    await page.goto(`${server.baseUrl}/v1/docs`, { waitUntil: 'networkidle' });

    for (const { tag, operationId } of restOperations()) await page.locator(`#operations-${tag}-${operationId}`).waitFor();
    await expect(operation(page, 'listPets').locator('.opblock-summary-path').textContent()).resolves.toBe('/pets');
    await expect(operation(page, 'getPet').getAttribute('class')).resolves.toMatch(/opblock-deprecated/);
    await expect(page.locator('.info .title').textContent()).resolves.toMatch(/Animal Store/);

    // Each schema's label: Pets is an array of objects (Pet), not `array<any>`.
    const pets = page.locator('section.models article', { has: page.locator('.json-schema-2020-12__title', { hasText: /^Pets$/ }) });
    await expect(pets.locator('.json-schema-2020-12__attribute--primary').first().textContent()).resolves.toBe('array<object>');
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'docs-page.png'), fullPage: true });
    expect(problems).toEqual({ consoleErrors: [], failedRequests: [], otherHosts: [] });
    await page.close();
  });

  it('calls listPets with a pasted key and shows the answer', async () => {
    await server.post('/v1/pets', { name: 'Shown In Docs', categoryId: 7 });
    const { page, problems } = await openPage();
    await page.goto(`${server.baseUrl}/v1/docs`, { waitUntil: 'networkidle' });

    await authorize(page);

    const listPets = await tryOut(page, 'listPets');
    await listPets.locator('button.execute').click();
    const response = listPets.locator('.live-responses-table .response');
    await expect(response.locator('.response-col_status').first().textContent()).resolves.toMatch(/^200/);
    await expect(response.locator('.response-col_description').first().textContent()).resolves.toContain('Shown In Docs');

    await listPets.screenshot({ path: join(ARTIFACTS, 'docs-page-try-it-out.png') });
    expect(problems).toEqual({ consoleErrors: [], failedRequests: [], otherHosts: [] });
    await page.close();
  });

  it('creates twice with two bodies: two pets (no Idempotency-Key is filled in for every Execute)', async () => {
    const { page, problems } = await openPage();
    await page.goto(`${server.baseUrl}/v1/docs`, { waitUntil: 'networkidle' });
    await authorize(page);

    const createPet = await tryOut(page, 'createPet');
    await expect(createPet.locator('tr[data-param-name="Idempotency-Key"] input').inputValue()).resolves.toBe('');
    const created: Array<{ id: number; name: string }> = [];
    for (const name of ['First From Docs', 'Second From Docs']) {
      await createPet.locator('textarea.body-param__text').fill(JSON.stringify({ name, categoryId: 4 }));
      const answer = page.waitForResponse((response) => response.request().method() === 'POST' && response.url().endsWith('/v1/pets'));
      await createPet.locator('button.execute').click();
      const response = await answer;
      expect(response.status()).toBe(201);
      expect(response.request().headers()['idempotency-key']).toBeUndefined();
      created.push((await response.json()) as { id: number; name: string });
      await expect(createPet.locator('.live-responses-table .response .response-col_status').first().textContent()).resolves.toMatch(
        /^201/,
      );
    }
    expect(created.map((pet) => pet.name)).toEqual(['First From Docs', 'Second From Docs']);
    expect(created[0]!.id).not.toBe(created[1]!.id);
    for (const pet of created) expect((await json(server.request(`/v1/pets/${pet.id}`))).name).toBe(pet.name);
    expect(problems).toEqual({ consoleErrors: [], failedRequests: [], otherHosts: [] });
    await page.close();
  });

  it('shows each error status with its own example answer', async () => {
    const { page } = await openPage();
    await page.goto(`${server.baseUrl}/v1/docs#/Pets/createPet`, { waitUntil: 'networkidle' });
    const createPet = operation(page, 'createPet');
    await createPet.locator('.responses-wrapper').waitFor();
    for (const [status, code] of [
      [400, 'BAD_REQUEST'],
      [401, 'UNAUTHORIZED'],
      [408, 'TIMEOUT'],
      [422, 'UNPROCESSABLE_CONTENT'],
      [429, 'TOO_MANY_REQUESTS'],
      [431, 'REQUEST_HEADER_FIELDS_TOO_LARGE'],
      [500, 'INTERNAL_SERVER_ERROR'],
      [503, 'SERVICE_UNAVAILABLE'],
    ] as const) {
      const shown = await createPet.locator(`.responses-wrapper tr.response[data-code="${status}"]`).textContent();
      expect(shown, String(status)).toContain(`"code": "${code}"`);
      expect(shown, String(status)).toContain(`"status": ${status}`);
    }
    await page.close();
  });

  it("getPet's deprecation Link opens its replacement's entry (listPets)", async () => {
    const pet = await json(server.post('/v1/pets', { name: 'Linked', categoryId: 1 }));
    const link = (await server.request(`/v1/pets/${pet.id}`)).headers.get('link')!;
    const target = /^<([^>]+)>/.exec(link)![1]!;
    expect(target).toBe('/v1/docs#/Pets/listPets');

    const { page } = await openPage();
    await page.goto(server.baseUrl + target, { waitUntil: 'networkidle' });
    await page.locator('#operations-Pets-listPets.is-open').waitFor();
    await page.close();
  });
});

describe('/ over HTTP', () => {
  it('points to the API reference and the document, without a key', async () => {
    const response = await fetch(`${server.baseUrl}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await response.json()) as { name: string; docs: string; openapi: string };
    expect(body).toEqual({ name: 'Animal Store', docs: '/v1/docs', openapi: '/v1/openapi.json' });
    expect((await fetch(server.baseUrl + body.docs)).status).toBe(200);
    expect((await fetch(server.baseUrl + body.openapi)).status).toBe(200);
    expect((await fetch(`${server.baseUrl}/`, { method: 'HEAD' })).status).toBe(200);
  });
});

describe('/v1/docs over HTTP', () => {
  it('is public, and serves only the Swagger UI files the page uses', async () => {
    const page = await fetch(`${server.baseUrl}/v1/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//); // nothing from another host
    for (const asset of html.match(/(?:src|href)="([^"]+)"/g)!.map((attribute) => attribute.split('"')[1]!)) {
      expect((await fetch(server.baseUrl + asset)).status, asset).toBe(200);
    }
    // swagger-ui-dist's own demo page loads the public Petstore from the internet: not served.
    expect((await fetch(`${server.baseUrl}/v1/docs/assets/index.html`)).status).toBe(404);
    expect((await fetch(`${server.baseUrl}/v1/docs/assets/swagger-initializer.js`)).status).toBe(404);
    expect((await fetch(`${server.baseUrl}/v1/docs/assets/../../openapi.json`)).status).not.toBe(500);
  });
});
