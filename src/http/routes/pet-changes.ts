// updatePet and deletePet (experimental): thin handlers over services.petChanges.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { PetPatch } from '../../schemas/categories.js';
import { Pet, PetIdParams, ref } from '../../schemas/index.js';
import type { Services } from '../../services/index.js';
import { petEtag } from '../../services/pet-changes.js';
import { changeConditionHeaders, changePrecondition, etagHeader, preconditionFailedResponse } from '../conditional.js';
import { accountId, requiresScope } from '../plugins/auth.js';
import { commonErrors, errorResponse, noContent, rateLimitHeaders, stability, success } from '../responses.js';

type App = Parameters<FastifyPluginAsyncTypebox>[0];
type PetChangeService = Services['petChanges'];

const PET_PATH = '/v1/pets/:petId';
const notFound = errorResponse('No animal with this id in your account, or it was deleted (`not_found`).', rateLimitHeaders);
const stale = preconditionFailedResponse('pet');
const conditionHeaders = (action: string) => changeConditionHeaders(action, 'pet');

export const petChangeRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  updatePet(app, services.petChanges);
  deletePet(app, services.petChanges);
};

function updatePet(app: App, petChanges: PetChangeService): void {
  app.patch(
    PET_PATH,
    {
      schema: {
        operationId: 'updatePet',
        ...requiresScope('pets:write'),
        tags: ['animals'],
        summary: 'Change an animal',
        description:
          'Changes `name`, `categoryId` or `status` with a JSON Merge Patch (RFC 7396; `Content-Type: application/merge-patch+json` ' +
          'or `application/json`): fields not sent stay, `status: null` removes the status. While the animal has a `placed` order ' +
          'its status belongs to the order: changing it answers 409 `pet_has_open_order` (name and category may still change). ' +
          'A patch that changes nothing answers 200 with the animal unchanged and records no event. Send the `ETag` of your last ' +
          'read in `If-Match` so that a concurrent change is never overwritten. Records `pet.updated` (and `pet.status_changed` ' +
          'when the status changed). Experimental.',
        ...stability('experimental'),
        params: PetIdParams,
        headers: conditionHeaders('change the pet'),
        body: ref(PetPatch),
        // Both media types take the same merge patch; application/json first, as clients send it.
        consumes: ['application/json', 'application/merge-patch+json'],
        response: {
          200: success('The animal after the change.', ref(Pet), { ...rateLimitHeaders, ...etagHeader }),
          400: errorResponse(
            'The body is missing, not JSON (`invalid_json`), not sent as JSON (`invalid_content_type`), or has a `null` name or categoryId, an unknown or invalid field, or `If-Match` or `If-None-Match` is malformed (`invalid_request`).',
            rateLimitHeaders,
          ),
          404: notFound,
          409: errorResponse('The status cannot change while the animal has a placed order (`pet_has_open_order`).', rateLimitHeaders),
          412: stale,
          413: errorResponse('The body is larger than 64 KiB (`payload_too_large`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { petId } = request.params;
      const pet = await petChanges.update(accountId(request), petId, request.body, changePrecondition(request.headers, `Pet ${petId}`));
      return reply.header('etag', petEtag(pet)).send(pet);
    },
  );
}

function deletePet(app: App, petChanges: PetChangeService): void {
  app.delete(
    PET_PATH,
    {
      schema: {
        operationId: 'deletePet',
        ...requiresScope('pets:write'),
        tags: ['animals'],
        summary: 'Delete an animal',
        description:
          'Deletes the animal: from then on it is 404 everywhere (get, lists, filters, new orders), a second DELETE answers 404, and ' +
          'its id is never given to another animal. Its delivered or cancelled orders stay readable with their `petId`. Refused ' +
          'with 409 `pet_has_open_order` while it has a `placed` order. Honours `If-Match` and `If-None-Match`. Records `pet.deleted`. Experimental.',
        ...stability('experimental'),
        params: PetIdParams,
        headers: conditionHeaders('delete the pet'),
        response: {
          204: noContent('Deleted.', rateLimitHeaders),
          400: errorResponse('`petId` is not an integer from 1 to 9007199254740991, or `If-Match` or `If-None-Match` is malformed (`invalid_request`).', rateLimitHeaders),
          404: notFound,
          409: errorResponse('The animal has a placed order: deliver or cancel it first (`pet_has_open_order`).', rateLimitHeaders),
          412: stale,
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { petId } = request.params;
      await petChanges.remove(accountId(request), petId, changePrecondition(request.headers, `Pet ${petId}`));
      return reply.status(204).send();
    },
  );
}
