// The three operations of the contract under /v1/pets, validated by zod through Nest's
// StandardSchemaValidationPipe (main.ts): the body by the service's own NewPet schema, the query
// and path by the peers' schemas (bench/peers/peer-inputs.ts).
import { Body, Controller, Get, Header, NotFoundException, Param, Post, Query } from '@nestjs/common';
import { NewPet, type Pet } from '../../../src/domain/pet-schemas.js';
import { ListQuery, PetId } from '../peer-inputs.js';
import { PetsRepository } from './pets.repository.js';

@Controller('v1/pets')
export class PetsController {
  constructor(private readonly pets: PetsRepository) {}

  @Get()
  list(@Query({ schema: ListQuery }) query: ListQuery): Pet[] {
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
