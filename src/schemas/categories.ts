// Correcting the inventory (experimental): the pet merge patch, categories and the inventory
// counts. One schema per shape, as elsewhere.
import Type, { type Static } from 'typebox';
import { Id, NAME_MAX_LENGTH, PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, PetStatus, ref, TEXT_PATTERN } from './index.js';

const name = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: NAME_MAX_LENGTH,
    pattern: TEXT_PATTERN,
    description: `${what}: 1 to ${NAME_MAX_LENGTH} characters, not only spaces, no control characters.`,
    examples: ['Rex'],
  });

export const PetPatch = Type.Object(
  {
    name: Type.Optional(name('The new name')),
    categoryId: Type.Optional(Id('The new category (1 to 9007199254740991).')),
    status: Type.Optional(
      Type.Union([ref(PetStatus), Type.Null()], { description: 'The new status; `null` removes it (the field is then omitted, as on create).' }),
    ),
  },
  {
    $id: 'PetPatch',
    additionalProperties: false,
    description:
      'A JSON Merge Patch (RFC 7396) of a pet: fields not sent stay as they are. `name` and `categoryId` cannot be removed (`null` ' +
      'is refused); `status: null` removes the status. Unknown fields are rejected with 400 `invalid_request`.',
  },
);
export type PetPatch = Static<typeof PetPatch>;

export const CategoryName = Type.Object(
  { name: name('The category\'s name, unique in your account (compared case-insensitively)') },
  { $id: 'CategoryName', additionalProperties: false, description: 'A category\'s name. Unknown fields are rejected with 400 `invalid_request`.' },
);

export const Category = Type.Object(
  {
    id: Id('The category\'s id: the `categoryId` pets use.'),
    name: Type.Optional(Type.String({ description: 'The name given with `putCategory`; absent for a category only pets use.' })),
    petCount: Type.Integer({ minimum: 0, description: 'How many of your pets are in this category now (exact).' }),
  },
  {
    $id: 'Category',
    additionalProperties: false,
    description: 'A category of your pets. It exists while a pet uses its id or it has a name. Experimental.',
  },
);
export type Category = Static<typeof Category>;

export const Categories = Type.Array(ref(Category), { $id: 'Categories', description: 'A page of categories, in ascending id order.' });

export const Inventory = Type.Object(
  {
    available: Type.Integer({ minimum: 0, description: 'Pets with status `available`.' }),
    pending: Type.Integer({ minimum: 0, description: 'Pets with status `pending`.' }),
    sold: Type.Integer({ minimum: 0, description: 'Pets with status `sold`.' }),
    withoutStatus: Type.Integer({ minimum: 0, description: 'Pets without a status.' }),
    total: Type.Integer({ minimum: 0, description: 'All your pets: the sum of the four.' }),
  },
  {
    $id: 'Inventory',
    additionalProperties: false,
    description: 'How many of your pets are in each status right now: exact after every change, on every instance. Experimental.',
  },
);
export type Inventory = Static<typeof Inventory>;

export const CategoryIdParams = Type.Object({ categoryId: Id('The category id.') }, { additionalProperties: false });

export const ListCategoriesQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT, description: 'Maximum number of categories to return.' })),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from the `Link: <…>; rel="next"` header of the previous page. Do not build or edit it.' }),
    ),
  },
  { additionalProperties: false },
);

/** Registered with Fastify and published as OpenAPI components. */
export const categorySchemas = [PetPatch, CategoryName, Category, Categories, Inventory];
