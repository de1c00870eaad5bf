import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { API_ERRORS, SYNC_STATES, StartRequestDto, type ApiErrorName } from '@sync/contracts';
import { schemasFromDtos } from './dto-schemas';

export const ERROR_NAMES = Object.keys(API_ERRORS) as ApiErrorName[];

export const schemaRef = (name: string): SchemaObject =>
  ({ $ref: `#/components/schemas/${name}` }) as SchemaObject;

/**
 * Every schema of the document: the start body (from its DTOs), the response envelope
 * (SuccessBody / ProgressBody / ErrorBody, api-envelope.ts) and the progress object
 * (contracts' Progress: the SEED-API §2.5 fields, then extras).
 */
export function apiSchemas(): Record<string, SchemaObject> {
  const nullable = (schema: SchemaObject): SchemaObject => ({ ...schema, nullable: true });
  return {
    ...schemasFromDtos([StartRequestDto]),
    EmptyBody: {
      type: 'object',
      additionalProperties: false,
      maxProperties: 0,
      description: 'pause, resume, commit and reverse take no fields: send {}.',
    },
    SuccessBody: {
      type: 'object',
      required: ['success'],
      properties: { success: { type: 'boolean', enum: [true] } },
    },
    ProgressBody: {
      type: 'object',
      required: ['success', 'progress'],
      properties: { success: { type: 'boolean', enum: [true] }, progress: schemaRef('Progress') },
    },
    ErrorName: {
      type: 'string',
      enum: [...ERROR_NAMES],
      description: ERROR_NAMES.map(
        (name) => `${name} (${API_ERRORS[name].httpStatus}): ${API_ERRORS[name].description}`,
      ).join('\n'),
    },
    ErrorBody: {
      type: 'object',
      required: ['success', 'error', 'errorDescription'],
      properties: {
        success: { type: 'boolean', enum: [false] },
        error: schemaRef('ErrorName'),
        errorDescription: { type: 'string' },
      },
    },
    Progress: {
      type: 'object',
      required: [
        'state',
        'canCommit',
        'canWrite',
        'info',
        'lagTimeSeconds',
        'totalEventsApplied',
        'collectionCopy',
        'directionMapping',
        'syncID',
        'coordinatorID',
      ],
      additionalProperties: true,
      description:
        'SEED-API §2.5 fields, then extras that never replace one (namespaces, verification, error, instances on the coordinator, ...).',
      properties: {
        state: { type: 'string', enum: [...SYNC_STATES] },
        canCommit: { type: 'boolean' },
        canWrite: nullable({ type: 'boolean' }),
        info: nullable({
          type: 'string',
          enum: [
            'collection copy',
            'change event application',
            'waiting for commit to complete',
            'commit completed',
          ],
        }),
        lagTimeSeconds: nullable({ type: 'number' }),
        totalEventsApplied: nullable({ type: 'integer' }),
        collectionCopy: nullable({
          type: 'object',
          required: ['estimatedTotalBytes', 'estimatedCopiedBytes'],
          properties: {
            estimatedTotalBytes: { type: 'integer' },
            estimatedCopiedBytes: { type: 'integer' },
          },
        }),
        directionMapping: nullable({
          type: 'object',
          required: ['Source', 'Destination'],
          properties: { Source: { type: 'string' }, Destination: { type: 'string' } },
        }),
        syncID: nullable({ type: 'string' }),
        coordinatorID: nullable({ type: 'string' }),
      },
    },
  };
}
