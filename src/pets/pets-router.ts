// The pet procedures: defined once, served as tRPC (`pets.*` at /trpc) and as REST (/v1/pets…)
// from their `openapi` metadata (spec section 4).
import { TRPCError } from '@trpc/server';
import { protectedProcedure, router } from '../api/trpc.js';
import { GetPetInput, ListPetsInput, NewPet, Pet, Pets } from './pet-schemas.js';

const TAGS = ['Pets'];

export const petsRouter = router({
  list: protectedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/pets',
        operationId: 'listPets',
        tags: TAGS,
        summary: 'List animals',
        description: 'Returns animals in ascending `id` order (creation order), at most `limit` of them.',
        errorResponses: { 400: 'Invalid `limit` or `status`.', 401: 'Missing or invalid API key.' },
      },
    })
    .input(ListPetsInput)
    .output(Pets)
    .query(({ ctx, input }) => ctx.pets.list(input)),

  create: protectedProcedure
    .meta({
      successStatus: 201,
      openapi: {
        method: 'POST',
        path: '/pets',
        operationId: 'createPet',
        tags: TAGS,
        summary: 'Add an animal',
        successDescription: 'Animal added; the body includes the assigned `id`.',
        errorResponses: {
          400: 'Body is missing required fields or contains invalid values.',
          401: 'Missing or invalid API key.',
          413: 'Body larger than the limit.',
          415: 'Body is not `application/json`.',
        },
      },
    })
    .input(NewPet)
    .output(Pet)
    .mutation(({ ctx, input }) => ctx.pets.create(input)),

  get: protectedProcedure
    .meta({
      deprecation: {
        since: new Date('2026-11-21T00:00:00Z'),
        sunset: new Date('2030-12-05T00:00:00Z'),
        // The replacement's (listPets) entry in the API reference page (Swagger UI's deep link).
        documentation: '/v1/docs#/Pets/listPets',
      },
      openapi: {
        method: 'GET',
        path: '/pets/{petId}',
        operationId: 'getPet',
        tags: TAGS,
        summary: 'Get an animal (deprecated)',
        description:
          'Deprecated; removed on 5 December 2030. Use `GET /pets` (listPets) with the `status` filter instead.',
        deprecated: true,
        errorResponses: {
          400: '`petId` is not an integer in 1 … 2^53 − 1.',
          401: 'Missing or invalid API key.',
          404: 'The requested resource could not be found.',
        },
      },
    })
    .input(GetPetInput)
    .output(Pet)
    .query(async ({ ctx, input }) => {
      const pet = await ctx.pets.findById(input.petId);
      if (!pet) throw new TRPCError({ code: 'NOT_FOUND', message: `No pet has id ${input.petId}.` });
      return pet;
    }),
});
