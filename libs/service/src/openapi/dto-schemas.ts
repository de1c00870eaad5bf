import type {
  ReferenceObject,
  SchemaObject,
} from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
// class-transformer keeps `@Type` metadata in a storage its main entry does not export.
import { defaultMetadataStorage } from 'class-transformer/cjs/storage';
import { getMetadataStorage } from 'class-validator';

type ValidationMetadata = ReturnType<
  ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']
>[number];
type Schema = SchemaObject | ReferenceObject;

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
type DtoClass = Function;

/** Schema fragments for the contracts' own validators that have no class-validator type. */
const CUSTOM: Record<string, SchemaObject> = {
  isShardKey: {
    type: 'array',
    minItems: 1,
    description: 'The shard key, fields in order: [{"field": 1 | -1 | "hashed"}, ...].',
    items: {
      type: 'object',
      minProperties: 1,
      maxProperties: 1,
      additionalProperties: {
        oneOf: [
          { type: 'integer', enum: [1, -1] },
          { type: 'string', enum: ['hashed'] },
        ],
      },
    },
  },
};

/**
 * JSON schemas of the start body's DTO classes, read from the very decorators that validate it
 * (class-validator metadata, class-transformer `@Type` for nesting): so the OpenAPI document
 * cannot describe a body the API would validate differently. Unknown fields are rejected at every
 * level (`additionalProperties: false`); the contracts' own rules (database and collection names,
 * regex options, ...) are listed under `x-validators`.
 */
export function schemasFromDtos(roots: DtoClass[]): Record<string, SchemaObject> {
  const schemas: Record<string, SchemaObject> = {};
  const queue = [...roots];
  while (queue.length > 0) {
    const dto = queue.shift()!;
    if (schemas[dto.name]) continue;
    const metadata = getMetadataStorage().getTargetValidationMetadatas(dto, '', true, false);
    const byProperty = new Map<string, ValidationMetadata[]>();
    for (const m of metadata)
      byProperty.set(m.propertyName, [...(byProperty.get(m.propertyName) ?? []), m]);
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    for (const [property, rules] of byProperty) {
      const nested = defaultMetadataStorage.findTypeMetadata(dto, property)?.typeFunction() as
        DtoClass | undefined;
      if (nested) queue.push(nested);
      properties[property] = propertySchema(rules, nested);
      if (rules.some((r) => r.type === 'isDefined')) required.push(property);
    }
    schemas[dto.name] = {
      type: 'object',
      additionalProperties: false,
      properties,
      ...(required.length > 0 ? { required } : {}),
    };
  }
  return schemas;
}

function propertySchema(rules: ValidationMetadata[], nested: DtoClass | undefined): Schema {
  const named = (name: string, each = false) =>
    rules.find((r) => r.name === name && Boolean(r.each) === each);
  const ref: ReferenceObject | undefined = nested
    ? { $ref: `#/components/schemas/${nested.name}` }
    : undefined;
  if (ref && !named('isArray')) return ref; // optional or not: `required` says which
  let schema: SchemaObject = {};
  if (named('isArray')) {
    const items: Schema = ref ?? (named('isString', true) ? { type: 'string' } : {});
    schema = { type: 'array', items };
    const min = named('arrayMinSize');
    if (min) schema.minItems = Number(min.constraints[0]);
  } else if (named('isString')) {
    schema = { type: 'string', ...(named('isNotEmpty') ? { minLength: 1 } : {}) };
  } else if (named('isBoolean')) {
    schema = { type: 'boolean' };
  } else if (named('isObject')) {
    schema = { type: 'object' };
  }
  const isIn = named('isIn');
  if (isIn) schema = { type: 'string', enum: [...(isIn.constraints[0] as string[])] };
  const custom = rules
    .filter((r) => r.type === 'customValidation' && r.name && !BUILT_IN.has(r.name))
    .map((r) => r.name!);
  for (const name of custom) if (CUSTOM[name]) schema = { ...CUSTOM[name], ...schema };
  if (custom.length > 0) schema = { ...schema, 'x-validators': custom } as SchemaObject;
  return schema;
}

const BUILT_IN = new Set([
  'isDefined',
  'isString',
  'isNotEmpty',
  'isBoolean',
  'isArray',
  'isObject',
  'isIn',
  'arrayMinSize',
]);
