// Categories and the inventory (experimental): thin handlers over services.categories and
// services.pets.inventory.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Categories, Category, CategoryIdParams, CategoryName, Inventory, ListCategoriesQuery } from '../../schemas/categories.js';
import { PAGE_LIMIT_DEFAULT, ref } from '../../schemas/index.js';
import { categoryEtag } from '../../services/categories.js';
import type { Services } from '../../services/index.js';
import { changeConditionHeaders, changePrecondition, etagHeaderOf, notModified, preconditionFailedResponse, readConditionHeaders } from '../conditional.js';
import { accountId, requiresScope } from '../plugins/auth.js';
import { commonErrors, errorResponse, nextPageLink, noContent, pageLinkHeaders, rateLimitHeaders, stability, success } from '../responses.js';

type App = Parameters<FastifyPluginAsyncTypebox>[0];
type CategoryService = Services['categories'];

const CATEGORIES_PATH = '/v1/categories';
const EXISTS =
  'A category exists while one of your pets uses its id (`createPet` takes any `categoryId`, as before) or it has been named.';
const notFound = errorResponse('No category with this id in your account (`not_found`).', rateLimitHeaders);
const badId = (headers: string) =>
  errorResponse(`\`categoryId\` is not an integer from 1 to 9007199254740991, or ${headers} malformed (\`invalid_request\`).`, rateLimitHeaders);
const withEtag = { ...rateLimitHeaders, ...etagHeaderOf('category', ' (its name or its petCount)') };
const what = (id: number) => `Category ${id}`;

export const categoryRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  listCategories(app, services.categories);
  getCategory(app, services.categories);
  putCategory(app, services.categories);
  deleteCategory(app, services.categories);
  getInventory(app, services);
};

function listCategories(app: App, categories: CategoryService): void {
  app.get(
    CATEGORIES_PATH,
    {
      schema: {
        operationId: 'listCategories',
        ...requiresScope('pets:read'),
        tags: ['animals'],
        summary: 'List categories',
        description: `Returns a page of your categories in ascending \`id\` order, each with its exact \`petCount\`, paged like \`GET /pets\`. ${EXISTS} Experimental.`,
        ...stability('experimental'),
        querystring: ListCategoriesQuery,
        response: {
          200: success('A page of categories (a bare JSON array).', ref(Categories), pageLinkHeaders(CATEGORIES_PATH)),
          400: errorResponse('A query parameter is invalid (`invalid_request`) or the cursor is malformed (`invalid_cursor`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { limit = PAGE_LIMIT_DEFAULT, cursor } = request.query;
      const page = await categories.list(accountId(request), { limit, cursor });
      if (page.nextCursor) reply.header('link', nextPageLink(CATEGORIES_PATH, limit, undefined, page.nextCursor));
      return page.categories;
    },
  );
}

function getCategory(app: App, categories: CategoryService): void {
  app.get(
    `${CATEGORIES_PATH}/:categoryId`,
    {
      schema: {
        operationId: 'getCategory',
        ...requiresScope('pets:read'),
        tags: ['animals'],
        summary: 'Get a category',
        description:
          `The category with its name (if any) and exact \`petCount\`. ${EXISTS} The 200 carries its \`ETag\`; with \`If-None-Match\` naming it, ` +
          'the answer is 304 without a body; with `If-Match` not naming it, 412. Experimental.',
        ...stability('experimental'),
        params: CategoryIdParams,
        headers: readConditionHeaders('category'),
        response: {
          200: success('The category.', ref(Category), withEtag),
          304: noContent('Not modified: the category\'s ETag is one `If-None-Match` names.', withEtag),
          400: badId('`If-Match` is'),
          404: notFound,
          412: preconditionFailedResponse('category', { read: true }),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const category = await categories.get(accountId(request), request.params.categoryId);
      const etag = categoryEtag(category);
      const unchanged = notModified(request.headers, etag, what(category.id));
      reply.header('etag', etag);
      return unchanged ? reply.status(304).send() : reply.send(category);
    },
  );
}

function putCategory(app: App, categories: CategoryService): void {
  app.put(
    `${CATEGORIES_PATH}/:categoryId`,
    {
      schema: {
        operationId: 'putCategory',
        ...requiresScope('pets:write'),
        tags: ['animals'],
        summary: 'Name a category',
        description:
          'Names or renames the category: 201 when it did not exist, 200 when it did. Names follow the pet-name rules and are ' +
          'unique in your account, compared case-insensitively (409 `category_name_taken`). `If-None-Match: *` creates only (412 when it ' +
          'exists); `If-Match` with its ETag renames only the category you read (412 when it changed or does not exist). The answer ' +
          'carries the category\'s `ETag`. Experimental.',
        ...stability('experimental'),
        params: CategoryIdParams,
        headers: changeConditionHeaders('name the category', 'category'),
        body: ref(CategoryName),
        response: {
          200: success('Renamed (or named): the category after the change.', ref(Category), withEtag),
          201: success('Created: the category did not exist before.', ref(Category), withEtag),
          400: errorResponse(
            'The id is invalid, the body is missing, not JSON (`invalid_json`), not application/json (`invalid_content_type`), its name is invalid or has unknown fields, or `If-Match` or `If-None-Match` is malformed (`invalid_request`).',
            rateLimitHeaders,
          ),
          409: errorResponse('Another of your categories already has this name (`category_name_taken`).', rateLimitHeaders),
          412: preconditionFailedResponse('category', { creates: true }),
          413: errorResponse('The body is larger than 64 KiB (`payload_too_large`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { categoryId } = request.params;
      const precondition = changePrecondition(request.headers, what(categoryId));
      const { category, created } = await categories.put(accountId(request), categoryId, request.body.name, precondition);
      return reply.status(created ? 201 : 200).header('etag', categoryEtag(category)).send(category);
    },
  );
}

function deleteCategory(app: App, categories: CategoryService): void {
  app.delete(
    `${CATEGORIES_PATH}/:categoryId`,
    {
      schema: {
        operationId: 'deleteCategory',
        ...requiresScope('pets:write'),
        tags: ['animals'],
        summary: 'Delete a category',
        description:
          'Deletes a category no pet uses (its name is forgotten); with pets in it, 409 `category_in_use`. Honours `If-Match` and ' +
          '`If-None-Match` (checked after those). Experimental.',
        ...stability('experimental'),
        params: CategoryIdParams,
        headers: changeConditionHeaders('delete the category', 'category'),
        response: {
          204: noContent('Deleted.', rateLimitHeaders),
          400: badId('`If-Match` or `If-None-Match` is'),
          404: notFound,
          409: errorResponse('Pets still use this category (`category_in_use`): move or delete them first.', rateLimitHeaders),
          412: preconditionFailedResponse('category'),
          ...commonErrors(),
        },
      },
    },
    async (request, reply) => {
      const { categoryId } = request.params;
      await categories.remove(accountId(request), categoryId, changePrecondition(request.headers, what(categoryId)));
      return reply.status(204).send();
    },
  );
}

function getInventory(app: App, services: Services): void {
  app.get(
    '/v1/store/inventory',
    {
      schema: {
        operationId: 'getInventory',
        ...requiresScope('pets:read'),
        tags: ['animals'],
        summary: 'Count pets by status',
        description:
          'How many of your pets are `available`, `pending`, `sold` and without a status, and in all: counters kept in the same ' +
          'transaction as every create, change, delete and order move, so the answer is exact on every instance and as fast ' +
          'with 100 000 pets as with 10. Experimental.',
        ...stability('experimental'),
        response: {
          200: success('The counts.', ref(Inventory), rateLimitHeaders),
          400: errorResponse('The request is malformed (`invalid_request`).', rateLimitHeaders),
          ...commonErrors(),
        },
      },
    },
    async (request) => services.pets.inventory(accountId(request)),
  );
}
