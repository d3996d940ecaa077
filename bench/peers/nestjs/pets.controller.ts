// The three operations of the contract under /v1/pets, validated by zod through Nest's
// StandardSchemaValidationPipe (main.ts): the body by the service's own NewPet schema, the query
// and path by schemas of their own, as a Nest app would write them (coercing query strings).
import { Body, Controller, Get, Header, NotFoundException, Param, Post, Query } from '@nestjs/common';
import { z } from 'zod';
import { NewPet, PetStatus, type Pet } from '../../../src/domain/pet-schemas.js';
import { PetsRepository } from './pets.repository.js';

const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  status: PetStatus.optional(),
});
const PetId = z
  .string()
  .regex(/^\d{1,16}$/, 'must be a positive integer')
  .transform(Number);

@Controller('v1/pets')
export class PetsController {
  constructor(private readonly pets: PetsRepository) {}

  @Get()
  list(@Query({ schema: ListQuery }) query: z.infer<typeof ListQuery>): Pet[] {
    return this.pets.list(query.limit, query.status);
  }

  @Post()
  create(@Body({ schema: NewPet }) pet: NewPet): Pet {
    return this.pets.create(pet);
  }

  @Get(':petId')
  @Header('deprecation', '@1795219200')
  @Header('sunset', 'Thu, 05 Dec 2030 00:00:00 GMT')
  @Header('link', '</v1/docs#/Pets/listPets>; rel="deprecation"')
  get(@Param('petId', { schema: PetId }) petId: number): Pet {
    const pet = this.pets.find(petId);
    if (!pet) throw new NotFoundException(`No pet has id ${petId}.`);
    return pet;
  }
}
