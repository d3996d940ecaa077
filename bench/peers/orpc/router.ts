// The peer's procedures, as oRPC's documentation teaches them: `os` with an initial context (the
// request's headers), the bearer key check as one middleware every procedure is built on, zod
// input and output schemas (oRPC validates output by default, and that default is kept: the
// service validates its output too), routes for the OpenAPIHandler, a GET route on the list so
// that RPCLink may call it with GET (the RPCHandler's StrictGetMethodPlugin allows only that).
// Response headers through oRPC's ResponseHeadersPlugin (main.ts).
import type { IncomingHttpHeaders } from 'node:http';
import { ORPCError, os } from '@orpc/server';
import type { ResponseHeadersPluginContext } from '@orpc/server/plugins';
import { z } from 'zod';
import type { ApiKeyVerifier } from '../../../src/auth/api-keys.js';
import { NewPet, Pet, Pets } from '../../../src/domain/pet-schemas.js';
import { ListQuery, PetId } from '../peer-inputs.js';
import type { PetsStore } from '../sqlite-pets.js';

/** What the HTTP layer gives every call (main.ts). */
interface InitialContext extends ResponseHeadersPluginContext {
  headers: IncomingHttpHeaders;
}

const DEPRECATION = {
  deprecation: '@1795219200',
  sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
  link: '</v1/docs#/Pets/listPets>; rel="deprecation"',
};

export function createRouter(pets: PetsStore, verifier: ApiKeyVerifier) {
  /** Every procedure needs a valid key: refused before its input is read (middleware before `.input`). */
  const authed = os.$context<InitialContext>().use(async ({ context, next }) => {
    const identity = await verifier.authenticate(context.headers.authorization);
    if (!identity) throw new ORPCError('UNAUTHORIZED', { message: 'A valid API key is required: send "Authorization: Bearer <key>".' });
    return next({ context: { identity } });
  });

  return {
    pets: {
      list: authed
        .route({ method: 'GET', path: '/pets' })
        .input(ListQuery)
        .output(Pets)
        .handler(({ input }) => pets.list(input.limit, input.status)),
      create: authed
        .route({ method: 'POST', path: '/pets', successStatus: 201 })
        .input(NewPet)
        .output(Pet)
        .handler(({ input }) => pets.create(input)),
      get: authed
        .route({ method: 'GET', path: '/pets/{petId}', deprecated: true })
        .input(z.object({ petId: PetId }))
        .output(Pet)
        .handler(({ input, context }) => {
          for (const [name, value] of Object.entries(DEPRECATION)) context.resHeaders?.set(name, value);
          const pet = pets.find(input.petId);
          if (!pet) throw new ORPCError('NOT_FOUND', { message: `No pet has id ${input.petId}.` });
          return pet;
        }),
    },
  };
}
