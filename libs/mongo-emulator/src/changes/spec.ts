import type { Document, Timestamp } from 'bson';
import { CommandError } from '../errors';
import { bsonTypeOf, type BsonTypeName } from '../bson/compare';
import type { ResumeTokenData, ResumeTokenDoc } from './resume-token';
import { decodeResumeToken } from './resume-token';

/** Which events a stream can see. */
export type ChangeStreamScope =
  | { kind: 'collection'; db: string; coll: string }
  | { kind: 'database'; db: string }
  | { kind: 'cluster' };

export type FullDocumentMode = 'default' | 'updateLookup' | 'whenAvailable' | 'required';
export type FullDocumentBeforeChangeMode = 'off' | 'whenAvailable' | 'required';

export interface ResumePoint {
  /** resumeAfter or startAfter, as the client named it (they differ only for invalidate tokens). */
  kind: 'resumeAfter' | 'startAfter';
  token: ResumeTokenDoc;
  data: ResumeTokenData;
}

export interface ChangeStreamSpec {
  scope: ChangeStreamScope;
  resume?: ResumePoint;
  startAtOperationTime?: Timestamp;
  fullDocument: FullDocumentMode;
  fullDocumentBeforeChange: FullDocumentBeforeChangeMode;
  showExpandedEvents: boolean;
  /**
   * Undocumented `showMigrationEvents`: oplog entries marked `fromMigrate` (chunk migrations,
   * a sharded DDL's participant shards) are reported too. A router refuses it (31123).
   */
  showMigrationEvents: boolean;
  /** Stages after $changeStream, validated against the allow-list. */
  userPipeline: Document[];
}

/** Databases a change stream never reports on (and cannot be opened on, except admin for the cluster). */
export const INTERNAL_DATABASES = new Set(['admin', 'config', 'local']);

/** Stages MongoDB 7.0 allows after $changeStream (constraints().isAllowedInChangeStream()). */
const ALLOWED_STAGES = new Set([
  '$match',
  '$project',
  '$addFields',
  '$set',
  '$unset',
  '$replaceRoot',
  '$replaceWith',
  '$redact',
  '$changeStreamSplitLargeEvent',
]);

const FULL_DOCUMENT_MODES: FullDocumentMode[] = [
  'default',
  'updateLookup',
  'whenAvailable',
  'required',
];
const BEFORE_CHANGE_MODES: FullDocumentBeforeChangeMode[] = ['off', 'whenAvailable', 'required'];

/** Fields of the DocumentSourceChangeStreamSpec IDL; internal flags are accepted and ignored. */
const KNOWN_FIELDS = new Set([
  'resumeAfter',
  'startAfter',
  'startAtOperationTime',
  'fullDocument',
  'fullDocumentBeforeChange',
  'allChangesForCluster',
  'showExpandedEvents',
  'showMigrationEvents',
  'showSystemEvents',
]);

function wrongType(field: string, value: unknown, expected: string): never {
  throw new CommandError(
    'TypeMismatch',
    `BSON field '$changeStream.${field}' is the wrong type '${bsonTypeOf(value)}', expected type '${expected}'`,
  );
}

function expectType<T>(field: string, value: unknown, type: BsonTypeName, expected = type): T {
  if (bsonTypeOf(value) !== type) wrongType(field, value, expected);
  return value as T;
}

function enumValue<T extends string>(field: string, value: unknown, allowed: T[]): T {
  const s = expectType<string>(field, value, 'string');
  if (!allowed.includes(s as T)) {
    throw new CommandError(
      'BadValue',
      `Enumeration value '${s}' for field '$changeStream.${field}' is not a valid value.`,
    );
  }
  return s as T;
}

/**
 * Validates the namespace and the `$changeStream` options the way MongoDB does when the
 * aggregate is parsed (document_source_change_stream.cpp), with the same codes/messages.
 */
export function parseChangeStreamSpec(
  db: string,
  aggregateTarget: unknown,
  stage: unknown,
  userPipeline: Document[],
): ChangeStreamSpec {
  if (bsonTypeOf(stage) !== 'object') {
    throw new CommandError(
      50808,
      `the $changeStream stage specification must be an object, but found ${bsonTypeOf(stage)}`,
    );
  }
  const options = stage as Document;
  for (const key of Object.keys(options)) {
    if (!KNOWN_FIELDS.has(key)) {
      throw new CommandError(
        'Location40415',
        `BSON field '$changeStream.${key}' is an unknown field.`,
      );
    }
  }
  const allChangesForCluster =
    options.allChangesForCluster !== undefined &&
    expectType<boolean>('allChangesForCluster', options.allChangesForCluster, 'bool');
  const showExpandedEvents =
    options.showExpandedEvents !== undefined &&
    expectType<boolean>('showExpandedEvents', options.showExpandedEvents, 'bool');
  const showMigrationEvents =
    options.showMigrationEvents !== undefined &&
    expectType<boolean>('showMigrationEvents', options.showMigrationEvents, 'bool');
  if (options.showSystemEvents !== undefined)
    expectType<boolean>('showSystemEvents', options.showSystemEvents, 'bool');

  const scope = resolveScope(db, aggregateTarget, allChangesForCluster);

  const fullDocument =
    options.fullDocument === undefined
      ? 'default'
      : enumValue('fullDocument', options.fullDocument, FULL_DOCUMENT_MODES);
  const fullDocumentBeforeChange =
    options.fullDocumentBeforeChange === undefined
      ? 'off'
      : enumValue(
          'fullDocumentBeforeChange',
          options.fullDocumentBeforeChange,
          BEFORE_CHANGE_MODES,
        );

  if (options.resumeAfter !== undefined && options.startAfter !== undefined) {
    throw new CommandError(
      50865,
      "Do not specify both 'resumeAfter' and 'startAfter' in a $changeStream stage",
    );
  }
  let resume: ResumePoint | undefined;
  for (const kind of ['resumeAfter', 'startAfter'] as const) {
    if (options[kind] === undefined) continue;
    const token = expectType<ResumeTokenDoc>(kind, options[kind], 'object');
    resume = { kind, token, data: decodeResumeToken(token) };
  }
  let startAtOperationTime: Timestamp | undefined;
  if (options.startAtOperationTime !== undefined) {
    startAtOperationTime = expectType<Timestamp>(
      'startAtOperationTime',
      options.startAtOperationTime,
      'timestamp',
    );
  }
  if (startAtOperationTime && resume) {
    throw new CommandError(
      40674,
      'Only one type of resume option is allowed, but multiple were found',
    );
  }
  if (resume?.kind === 'resumeAfter' && resume.data.fromInvalidate) {
    throw new CommandError(
      'InvalidResumeToken',
      "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification",
    );
  }

  for (const s of userPipeline) {
    const name = bsonTypeOf(s) === 'object' ? Object.keys(s)[0] : undefined;
    if (name === '$changeStream') {
      throw new CommandError(40602, '$changeStream is only valid as the first stage in a pipeline');
    }
    if (name === undefined || !ALLOWED_STAGES.has(name)) {
      throw new CommandError(
        'IllegalOperation',
        `${name ?? String(s)} is not permitted in a $changeStream pipeline`,
      );
    }
  }

  return {
    scope,
    resume,
    startAtOperationTime,
    fullDocument,
    fullDocumentBeforeChange,
    showExpandedEvents,
    showMigrationEvents,
    userPipeline: userPipeline.filter((s) => Object.keys(s)[0] !== '$changeStreamSplitLargeEvent'),
  };
}

function resolveScope(
  db: string,
  target: unknown,
  allChangesForCluster: boolean,
): ChangeStreamScope {
  const collectionless = typeof target !== 'string';
  const ns = collectionless ? `${db}.$cmd.aggregate` : `${db}.${target as string}`;
  if (allChangesForCluster && !(db === 'admin' && collectionless)) {
    throw new CommandError(
      'InvalidNamespace',
      `A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name; found ${ns}`,
    );
  }
  if (db === 'admin' ? !allChangesForCluster : INTERNAL_DATABASES.has(db)) {
    throw new CommandError(
      'InvalidNamespace',
      `$changeStream may not be opened on the internal ${db} database`,
    );
  }
  if (!collectionless && (target as string).startsWith('system.')) {
    throw new CommandError(
      'InvalidNamespace',
      `$changeStream may not be opened on the internal ${ns} collection`,
    );
  }
  if (allChangesForCluster) return { kind: 'cluster' };
  if (collectionless) return { kind: 'database', db };
  return { kind: 'collection', db, coll: target as string };
}

/** The cursor namespace MongoDB reports (and expects back on getMore). */
export function cursorNamespace(scope: ChangeStreamScope): string {
  switch (scope.kind) {
    case 'collection':
      return `${scope.db}.${scope.coll}`;
    case 'database':
      return `${scope.db}.$cmd.aggregate`;
    case 'cluster':
      return 'admin.$cmd.aggregate';
  }
}
