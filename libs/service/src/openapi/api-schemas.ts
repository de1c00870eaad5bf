import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { API_ERRORS, SYNC_STATES, StartRequestDto, type ApiErrorName } from '@sync/contracts';
import { schemasFromDtos } from './dto-schemas';

export const ERROR_NAMES = Object.keys(API_ERRORS) as ApiErrorName[];

export const schemaRef = (name: string): SchemaObject =>
  ({ $ref: `#/components/schemas/${name}` }) as SchemaObject;

/**
 * Every schema of the document: the start body (from its DTOs), the response envelope
 * (SuccessBody / ProgressBody / ErrorBody, api-envelope.ts) and the progress object
 * (contracts' Progress: the progress fields, then extras).
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
        'The progress fields, then extras that never replace one (namespaces, verification, error, instances on the coordinator, ...).',
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
        lagTimeSeconds: nullable({
          type: 'number',
          description:
            "Seconds between the source's latest event and the last one applied to the destination (MongoDB's tool now calls it lag.overallLagSeconds; kept). canCommit is false while it is over 30.",
        }),
        lag: {
          type: 'object',
          description:
            "The lag as MongoDB's tool (1.21) reports it, beside lagTimeSeconds; absent while IDLE, null values while PAUSED or before change events are applied. CRUD and DDL events are applied from one stream in cluster-time order, so both equal the overall lag. canCommit is false while it is over 30 s.",
          required: ['overallLagSeconds', 'crudLagSeconds', 'ddlLagSeconds'],
          properties: {
            overallLagSeconds: nullable({ type: 'number' }),
            crudLagSeconds: nullable({ type: 'number' }),
            ddlLagSeconds: nullable({ type: 'number' }),
          },
        },
        estimatedSecondsToCEACatchup: {
          type: 'integer',
          description:
            'Coordinator only: the estimated seconds change event application still needs to catch up, from how much the lag fell over the last minute (Redis clock); absent outside change event application and while the lag rose or stayed the same.',
        },
        estimatedOplogTimeRemaining: {
          type: 'string',
          description:
            "How long the oldest entry the sync still needs (T0 while copying, the resume point while applying) stays ahead of the oldest entry of the source's oplog (tightest shard): \"45 minutes\", \"12 hours\", \"less than 15 minutes\", \"more than 72 hours\" or \"not checked yet\"; while that oplog has not been seen dropping entries (it has not filled yet, so its span is no estimate), a lower bound: \"at least 2 hours (the oplog has not filled yet)\", or \"not known yet (the oplog has not filled yet)\" below 15 minutes. Only while RUNNING and before canWrite.",
        },
        source: {
          type: 'object',
          description:
            "Coordinator only: its last ping of the source cluster, every 10 s; pingLatencyMs absent below 1 ms or before the first ping, -1 when the last one failed.",
          properties: { pingLatencyMs: { type: 'integer' } },
        },
        destination: {
          type: 'object',
          description: 'Coordinator only: as source, for the destination cluster.',
          properties: { pingLatencyMs: { type: 'integer' } },
        },
        warnings: {
          type: 'array',
          items: { type: 'string' },
          description:
            'Conditions that do not stop the sync yet but may (OplogWindowSmall, a balancer running again); absent when none.',
        },
        totalEventsApplied: nullable({ type: 'integer' }),
        collectionCopy: nullable({
          type: 'object',
          required: ['estimatedTotalBytes', 'estimatedCopiedBytes'],
          properties: {
            estimatedTotalBytes: {
              type: 'integer',
              description:
                "The whole sync's estimated bytes to copy: the same on every instance and in the coordinator's merged view.",
            },
            estimatedCopiedBytes: {
              type: 'integer',
              description:
                "Bytes this instance copied (its own share; in the merged view, all instances'): the sum over instances is never above estimatedTotalBytes.",
            },
          },
        }),
        directionMapping: nullable({
          type: 'object',
          required: ['Source', 'Destination'],
          properties: { Source: { type: 'string' }, Destination: { type: 'string' } },
        }),
        syncID: nullable({ type: 'string' }),
        coordinatorID: nullable({ type: 'string' }),
        instances: {
          type: 'array',
          description:
            'Coordinator only: one entry per registered worker (and per source shard no worker serves).',
          items: schemaRef('Instance'),
        },
        missingInstances: {
          type: 'array',
          items: { type: 'string' },
          description: 'Coordinator only: the instances that are missing, when any.',
        },
        role: {
          type: 'string',
          enum: ['standby', 'active'],
          description:
            "A worker's own API, when started with --standby: standby while it waits to take its shard over (state is then the job's state read from the destination, the other progress fields null), active once it did. Absent on other workers and on the coordinator.",
        },
        standby: {
          type: 'object',
          additionalProperties: true,
          description: 'A standby worker (role standby): whom it stands by and when it takes over.',
          properties: {
            since: { type: 'string', format: 'date-time' },
            instance: { type: 'string', description: 'Its own shard-claim instance.' },
            activeInstance: nullable({
              type: 'string',
              description: "The claim instance of the shard's active worker (null: no claim yet).",
            }),
            activeEpoch: nullable({ type: 'integer' }),
            activeHeartbeatAt: nullable({
              type: 'string',
              format: 'date-time',
              description: "The active worker's last claim renewal, by the destination's clock.",
            }),
            takeoverAfterSeconds: {
              type: 'number',
              description: 'How stale the claim must be (destination clock) to be taken over.',
            },
            note: { type: 'string' },
          },
        },
      },
    },
    Instance: {
      type: 'object',
      required: ['id', 'shardId', 'status', 'missing', 'lastSeenSecondsAgo', 'progress'],
      additionalProperties: true,
      properties: {
        id: { type: 'string' },
        shardId: nullable({ type: 'string' }),
        status: {
          type: 'string',
          enum: ['active', 'starting', 'missing'],
          description:
            "active: it beat within CLUSTER_SYNC_WORKER_STALE_MS and reported progress; starting: it beats but has no progress yet (its last known progress is shown); missing: no heartbeat within the stale limit, or no worker registered for a source shard. Ages by Redis' clock.",
        },
        missing: { type: 'boolean' },
        lastSeenSecondsAgo: nullable({ type: 'number' }),
        pendingCommands: nullable({ type: 'integer' }),
        progress: {
          allOf: [schemaRef('Progress')],
          nullable: true,
          description: 'Current when active, else the last known one (null when none).',
        },
        progressSecondsAgo: {
          type: 'number',
          description: 'Age of progress when it is a last known one.',
        },
        reason: { type: 'string', description: 'Why the instance is not active.' },
        role: {
          type: 'string',
          enum: ['active'],
          description:
            "The entry of the shard's active worker (registered under the shard id); its standbys are listed in standbys.",
        },
        instance: nullable({
          type: 'string',
          description:
            "The active worker's shard-claim instance (its claim's instance on the destination); null when none is registered.",
        }),
        standbys: {
          type: 'array',
          description:
            "The shard's standby workers (--standby): each takes the shard over once the active worker's claim is stale by the destination's clock. Never sent commands, never in the merged figures.",
          items: schemaRef('StandbyInstance'),
        },
      },
    },
    StandbyInstance: {
      type: 'object',
      required: ['id', 'instance', 'url', 'lastSeenSecondsAgo', 'missing'],
      additionalProperties: false,
      properties: {
        id: { type: 'string', description: 'Its registry key: <shard id>~standby~<instance>.' },
        instance: nullable({ type: 'string', description: 'Its shard-claim instance.' }),
        url: nullable({ type: 'string', description: 'Its own API (progress says role standby).' }),
        lastSeenSecondsAgo: nullable({ type: 'number' }),
        missing: {
          type: 'boolean',
          description: 'No heartbeat within the stale limit (Redis clock): it cannot take over.',
        },
      },
    },
  };
}
