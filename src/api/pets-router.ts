// The pet procedures: defined once, served as tRPC (`pets.*` at /trpc) and as REST (/v1/pets…)
// from their `openapi` metadata (spec section 4).
import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { protectedProcedure, router } from './trpc.js';
import { KEY_SYNTAX, parseIdempotencyKey } from '../idempotency/idempotency-store.js';
import { createPetRepository } from '../db/sql.js';
import { GetPetInput, ListPetsInput, NewPet, Pet, Pets } from '../domain/pet-schemas.js';

const TAGS = ['Pets'];

const IdempotencyKeyHeader = z.object({
  'Idempotency-Key': z
    .string()
    .regex(KEY_SYNTAX)
    .optional()
    .meta({
      description:
        'Makes the create safe to retry: 1 to 255 visible ASCII characters other than `"`, optionally in double quotes. ' +
        'Keys expire after IDEMPOTENCY_TTL_HOURS (24 h by default).',
      // No example: Swagger UI's "Try it out" would fill it in, and every Execute would send the
      // same key (another body: 422; the same body: the first pet again), for everyone, for 24 h.
    }),
});

export const petsRouter = router({
  list: protectedProcedure
    .meta({
      nextPageLink: true,
      errorExamples: { 400: 'limit: must be at most 100' },
      openapi: {
        method: 'GET',
        path: '/pets',
        operationId: 'listPets',
        tags: TAGS,
        summary: 'List animals',
        description:
          'Returns animals in ascending `id` order (creation order), at most `limit` of them. To walk the whole ' +
          'inventory, ask for the next page with `after` set to the last `id` of this one: a full page carries a ' +
          '`Link` header (`rel="next"`) to it; a shorter page is the last.',
        errorResponses: {
          400: 'Invalid `limit`, `status` or `after`.',
          401: 'Missing or invalid API key.',
          429: 'Rate limit reached; see Retry-After.',
        },
      },
    })
    .input(ListPetsInput)
    .output(Pets)
    .query(async ({ ctx, input }) => {
      const pets = await ctx.pets.list(input);
      // A full page may have more after it; a shorter one is the last.
      if (pets.length === input.limit)
        ctx.nextPage?.(ctx.reply, { limit: input.limit, status: input.status, after: pets[pets.length - 1]!.id });
      return pets;
    }),

  create: protectedProcedure
    .meta({
      successStatus: 201,
      errorExamples: { 400: 'categoryId: must be an integer' },
      openapi: {
        method: 'POST',
        path: '/pets',
        operationId: 'createPet',
        tags: TAGS,
        summary: 'Add an animal',
        successDescription: 'Animal added; the body includes the assigned `id`.',
        description:
          'Send an `Idempotency-Key` header to make retries safe: a repeat with the same key and body replays the ' +
          'first answer (with `Idempotent-Replayed: true`) and creates nothing.',
        requestHeaders: IdempotencyKeyHeader,
        errorResponses: {
          400: 'Body is missing required fields or contains invalid values.',
          401: 'Missing or invalid API key.',
          413: 'Body larger than the limit.',
          415: 'Body is not `application/json`.',
          422: 'The Idempotency-Key was already used with a different body.',
          429: 'Rate limit reached; see Retry-After.',
        },
      },
    })
    .input(NewPet)
    .output(Pet)
    .mutation(async ({ ctx, input }) => {
      const { key, error } = parseIdempotencyKey(ctx.idempotencyKeyHeader);
      if (error) throw new TRPCError({ code: 'BAD_REQUEST', message: error });
      if (!key) return ctx.pets.create(input);
      // A retry with the same Idempotency-Key replays the first answer and creates nothing.
      const { result, replayed } = await ctx.idempotency.run({
        scope: ctx.identity.keyId,
        operation: 'createPet',
        key,
        request: input,
        perform: (transaction) => createPetRepository(transaction).create(input),
      });
      if (replayed) ctx.writer.replayed(ctx.reply);
      return result;
    }),

  /**
   * Get one pet by id.
   * @deprecated Removed on 2030-12-05: use `pets.list` with the `status` filter instead.
   */
  get: protectedProcedure
    .meta({
      deprecation: {
        since: new Date('2026-11-21T00:00:00Z'),
        sunset: new Date('2030-12-05T00:00:00Z'),
        // The replacement's (listPets) entry in the API reference page (Swagger UI's deep link).
        documentation: '/v1/docs#/Pets/listPets',
      },
      errorExamples: { 404: 'No pet has id 42.' },
      openapi: {
        method: 'GET',
        path: '/pets/{petId}',
        operationId: 'getPet',
        tags: TAGS,
        summary: 'Get an animal (deprecated)',
        description: 'Deprecated; removed on 5 December 2030. Use `GET /pets` (listPets) with the `status` filter instead.',
        deprecated: true,
        errorResponses: {
          400: '`petId` is not an integer in 1 … 2^53 − 1.',
          401: 'Missing or invalid API key.',
          404: 'The requested resource could not be found.',
          429: 'Rate limit reached; see Retry-After.',
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
