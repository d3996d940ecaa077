// What the bench's servers are loaded with: the API key every system is configured with, and the
// scenarios' requests (bench/run.ts loads them all; bench/ab-shipped.ts and bench/profile.ts the
// REST list, create and get).
import type { Request } from './load.js';

export const API_KEY = 'bench-key-0123456789abcdefghij';
export const AUTH = { authorization: `Bearer ${API_KEY}` };
const JSON_BODY = { ...AUTH, 'content-type': 'application/json' };
const NEW_PET = JSON.stringify({ name: 'bench-pet', categoryId: 7, status: 'available' });

export interface Scenario {
  label: string;
  request: Request;
  /** Creates: the answers differ in `id` only. */
  creates?: boolean;
}

export const SCENARIOS: Scenario[] = [
  { label: 'REST list limit=20', request: { method: 'GET', path: '/v1/pets?limit=20', headers: AUTH } },
  { label: 'REST list status=pending', request: { method: 'GET', path: '/v1/pets?status=pending', headers: AUTH } },
  { label: 'REST create', request: { method: 'POST', path: '/v1/pets', headers: JSON_BODY, body: NEW_PET }, creates: true },
  { label: 'REST get (deprecated)', request: { method: 'GET', path: '/v1/pets/500', headers: AUTH } },
  {
    label: 'tRPC list limit=20',
    request: { method: 'GET', path: `/trpc/pets.list?input=${encodeURIComponent('{"limit":20}')}`, headers: AUTH },
  },
  { label: 'tRPC create', request: { method: 'POST', path: '/trpc/pets.create', headers: JSON_BODY, body: NEW_PET }, creates: true },
];

/** The REST list, create and get, those whose label contains `only` when it is set. */
export function restScenarios(only: string | undefined): Scenario[] {
  const rest = SCENARIOS.filter(({ label }) => ['REST list limit=20', 'REST create', 'REST get (deprecated)'].includes(label));
  return rest.filter(({ label }) => !only || label.includes(only));
}
