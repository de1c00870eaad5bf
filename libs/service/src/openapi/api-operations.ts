import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiQuery, ApiResponse } from '@nestjs/swagger';
import { API_ERRORS, COMMAND_ID_HEADER, type ApiErrorName } from '@sync/contracts';
import { schemaRef } from './api-schemas';

/** What every operation can answer whatever it does (Unauthorized: launched with a token). */
const ANY: ApiErrorName[] = [
  'Unauthorized',
  'NotReady',
  'InternalError',
  'JobClusterMismatch',
  'ShardClaimLost',
];
/** Every POST: the body's transport and the `X-Command-Id` header. */
const POST: ApiErrorName[] = [
  'MalformedJson',
  'UnsupportedMediaType',
  'PayloadTooLarge',
  'InvalidRequest',
];
/** State-changing commands through a coordinator and its workers (apps/coordinator). */
const COORDINATED: ApiErrorName[] = [
  'CommandsThroughCoordinator',
  'WorkerIsStandby',
  'RedisUnavailable',
  'NotLeader',
  'NoWorkersRegistered',
  'WorkersMissing',
  'WorkersRejected',
  'CommandPending',
  'CommandSuperseded',
  'StaleEpoch',
];

/**
 * The error names each operation can answer. Every name of API_ERRORS must appear in at least
 * one (the OpenAPI test checks it), except NotFound, the answer of a path that is no operation.
 */
export const OPERATION_ERRORS = {
  start: [
    ...ANY,
    ...POST,
    ...COORDINATED,
    'UnknownCluster',
    'SameSourceAndDestination',
    'NeverWithReversible',
    'ReversibleRequiresWriteBlocking',
    'ShardingRequiredForReplicaSetToSharded',
    'ShardingNotAllowed',
    'InvalidShardingEntry',
    'ShardKeyIndexMissing',
    'UnsupportedTopology',
    'ReversibleUnsupportedReplicaSetToSharded',
    'ReversibleUnsupportedShardCountMismatch',
    'InvalidShardId',
    'PerShardSyncInProgress',
    'SyncRequestMismatch',
    'ChunkMigrationInProgress',
    'DuplicateShardWorker',
    'DestinationNotEmpty',
    'CatalogTooLarge',
    'NotIdle',
  ],
  progress: [...ANY, 'InvalidRequest', 'RedisUnavailable'],
  pause: [...ANY, ...POST, ...COORDINATED, 'InvalidState', 'HistoryLost'],
  resume: [...ANY, ...POST, ...COORDINATED, 'InvalidState', 'HistoryLost'],
  commit: [
    ...ANY,
    ...POST,
    ...COORDINATED,
    'InvalidState',
    'CommitNotReady',
    'VerificationFailed',
    'HistoryLost',
  ],
  reverse: [
    ...ANY,
    ...POST,
    ...COORDINATED,
    'InvalidState',
    'ReverseNotAllowed',
    'ReverseShardCountMismatch',
    'ChunkMigrationSinceCommit',
  ],
} satisfies Record<string, ApiErrorName[]>;

export type DocumentedOperation = keyof typeof OPERATION_ERRORS;

/** One response per status, its `error` restricted to the names this operation answers. */
function errorResponses(names: readonly ApiErrorName[]): MethodDecorator[] {
  const byStatus = new Map<number, ApiErrorName[]>();
  for (const name of new Set(names)) {
    const status = API_ERRORS[name].httpStatus;
    byStatus.set(status, [...(byStatus.get(status) ?? []), name]);
  }
  return [...byStatus]
    .sort(([a], [b]) => a - b)
    .map(([status, group]) =>
      ApiResponse({
        status,
        description: group.join(', '),
        schema: {
          allOf: [
            schemaRef('ErrorBody'),
            { type: 'object', properties: { error: { type: 'string', enum: group } } },
          ],
        },
      }),
    );
}

const COMMAND_ID = ApiHeader({
  name: COMMAND_ID_HEADER,
  required: false,
  description:
    'Idempotency key of the command (1–128 letters, digits and ._:-): a retried request with the same id is applied once.',
});

const SUMMARIES: Record<DocumentedOperation, string> = {
  start: 'Start a sync (IDLE → RUNNING): copy, then apply change events.',
  progress: 'The sync state and its figures (the progress fields plus extras).',
  pause: 'Pause the copy or the change event application (RUNNING → PAUSED).',
  resume: 'Resume a paused sync (PAUSED → RUNNING).',
  commit: 'Hand the application over to the destination once canCommit is true.',
  reverse: 'Sync back from the destination after a reversible commit.',
};

/** The OpenAPI description of one `/api/v1` operation (used on SyncController's methods). */
export function ApiOperationDocs(operation: DocumentedOperation): MethodDecorator {
  const decorators: MethodDecorator[] = [
    ApiOperation({ operationId: operation, summary: SUMMARIES[operation] }),
    ...errorResponses(OPERATION_ERRORS[operation]),
  ];
  if (operation === 'progress') {
    decorators.push(
      ApiQuery({
        name: 'detail',
        required: false,
        enum: ['namespaces'],
        description: 'namespaces: add one entry per namespace (progress.namespaces).',
      }),
      ApiResponse({ status: 200, description: 'Progress.', schema: schemaRef('ProgressBody') }),
    );
  } else {
    decorators.push(
      COMMAND_ID,
      ApiBody({
        required: true,
        schema: schemaRef(operation === 'start' ? 'StartRequestDto' : 'EmptyBody'),
      }),
      ApiResponse({ status: 200, description: 'Done.', schema: schemaRef('SuccessBody') }),
    );
  }
  return applyDecorators(...decorators);
}
