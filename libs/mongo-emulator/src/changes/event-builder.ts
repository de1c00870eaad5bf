import type { Document } from 'bson';
import { CommandError } from '../errors';
import { postImageOf, preImageOf, type OplogEntry, type OplogOp } from '../oplog/oplog-entry';
import type { NodeServices } from '../node/node-services';
import { INTERNAL_DATABASES, type ChangeStreamScope, type ChangeStreamSpec } from './spec';
import {
  encodeResumeToken,
  eventTokenData,
  type ResumeTokenData,
  type ResumeTokenDoc,
} from './resume-token';
import { lookupCurrentDocument, type PreImageTracker } from './images';

/** DDL events reported only with showExpandedEvents (MongoDB 6.0+). */
const EXPANDED_OPS = new Set<OplogOp>([
  'create',
  'createIndexes',
  'dropIndexes',
  'modify',
  'shardCollection',
]);
const CRUD_OPS = new Set<OplogOp>(['insert', 'update', 'replace', 'delete']);
const PRE_IMAGE_OPS = new Set<OplogOp>(['update', 'replace', 'delete']);

/** What an oplog entry means to one stream. */
export type Relevance = 'skip' | 'event' | 'invalidating';

function isInternalNs(db: string, coll: string | undefined): boolean {
  return INTERNAL_DATABASES.has(db) || (coll !== undefined && coll.startsWith('system.'));
}

/**
 * The oplog filter of a stream (change_stream_filter_helpers.cpp, simplified to the emulator's
 * entry kinds): namespace scope, internal namespaces, expanded events, invalidation.
 */
export function relevance(entry: OplogEntry, spec: ChangeStreamSpec): Relevance {
  if (entry.op === 'noop') return 'skip';
  // change_stream_filter_helpers: {fromMigrate: {$ne: true}} unless showMigrationEvents.
  if (entry.fromMigrate && !spec.showMigrationEvents) return 'skip';
  if (EXPANDED_OPS.has(entry.op) && !spec.showExpandedEvents) return 'skip';
  const scope = spec.scope;

  if (entry.op === 'rename') {
    const to = entry.to;
    const fromVisible = !isInternalNs(entry.db, entry.coll) && inScope(scope, entry.db, entry.coll);
    // A rename INTO the watched namespace is reported (not invalidating) with expanded events.
    const toVisible =
      spec.showExpandedEvents &&
      to !== undefined &&
      !isInternalNs(to.db, to.coll) &&
      inScope(scope, to.db, to.coll);
    if (fromVisible) return scope.kind === 'collection' ? 'invalidating' : 'event';
    return toVisible ? 'event' : 'skip';
  }

  if (isInternalNs(entry.db, entry.coll)) return 'skip';
  if (entry.op === 'modify' && modifyDescription(entry) === null) return 'skip';
  if (entry.op === 'dropDatabase') {
    if (scope.kind === 'cluster') return 'event';
    return scope.db === entry.db ? 'invalidating' : 'skip';
  }
  if (!inScope(scope, entry.db, entry.coll)) return 'skip';
  if (entry.op === 'drop' && scope.kind === 'collection') return 'invalidating';
  return 'event';
}

function inScope(scope: ChangeStreamScope, db: string, coll: string | undefined): boolean {
  switch (scope.kind) {
    case 'cluster':
      return true;
    case 'database':
      return scope.db === db;
    case 'collection':
      return scope.db === db && scope.coll === coll;
  }
}

export interface BuiltEvent {
  event: Document;
  token: ResumeTokenDoc;
  tokenData: ResumeTokenData;
}

/** The token of the event an entry produces (independent of the stream's options). */
export function tokenDataForEntry(entry: OplogEntry, version?: number): ResumeTokenData {
  return eventTokenData({
    clusterTime: entry.ts,
    uuid: entry.op === 'dropDatabase' ? undefined : entry.uuid,
    operationType: entry.op,
    documentKey: CRUD_OPS.has(entry.op) ? entry.documentKey : undefined,
    operationDescription:
      CRUD_OPS.has(entry.op) || entry.op === 'drop' ? undefined : entry.operationDescription,
    version,
  });
}

/**
 * Shapes the change event for an entry, with MongoDB's field order: the transform stage
 * (change_stream_event_transform.cpp) builds `to` (rename) first, then `_id, operationType,
 * clusterTime, collectionUUID, wallTime, fullDocument, ns, documentKey, operationDescription,
 * updateDescription, stateBeforeChange`; the later pre-/post-image stages append
 * `fullDocumentBeforeChange` and then `fullDocument` (update events) at the end.
 *
 * `lsid`/`txnNumber` appear in MongoDB only for events unwound from a multi-document
 * transaction, never for retryable writes; the emulator's oplog has no transactions, and the
 * lsid/txnNumber it records come from retryable writes, so they are not reported.
 */
export function buildEvent(
  node: NodeServices,
  entry: OplogEntry,
  spec: ChangeStreamSpec,
  images: PreImageTracker,
): BuiltEvent {
  const tokenData = tokenDataForEntry(entry);
  const token = encodeResumeToken(tokenData);
  const op = entry.op;
  const event: Document = {};

  if (op === 'rename' && entry.to) event.to = { db: entry.to.db, coll: entry.to.coll };
  event._id = token;
  event.operationType = op;
  event.clusterTime = entry.ts;
  if (spec.showExpandedEvents && entry.uuid && op !== 'dropDatabase')
    event.collectionUUID = entry.uuid;
  event.wallTime = new Date(entry.wallMs);
  if (op === 'insert' || op === 'replace') {
    const doc = postImageOf(entry);
    if (doc) event.fullDocument = doc;
  }
  event.ns =
    op === 'dropDatabase' || entry.coll === undefined
      ? { db: entry.db }
      : { db: entry.db, coll: entry.coll };
  if (CRUD_OPS.has(op)) event.documentKey = entry.documentKey;
  if (spec.showExpandedEvents && !CRUD_OPS.has(op) && op !== 'drop' && op !== 'dropDatabase') {
    const description = op === 'modify' ? modifyDescription(entry) : entry.operationDescription;
    if (description) event.operationDescription = description;
  }
  if (op === 'update' && entry.updateDescription) {
    const ud = entry.updateDescription;
    event.updateDescription = {
      updatedFields: ud.updatedFields,
      removedFields: ud.removedFields,
      truncatedArrays: ud.truncatedArrays,
      ...(spec.showExpandedEvents ? { disambiguatedPaths: ud.disambiguatedPaths ?? {} } : {}),
    };
  }
  if (op === 'modify' && entry.stateBeforeChange !== undefined)
    event.stateBeforeChange = stateBeforeChange(entry);

  addImages(node, entry, spec, images, event);
  return { event, token, tokenData };
}

/**
 * A collMod's `operationDescription` as mongod logs it: hiding a hidden index or un-hiding a
 * visible one is a no-op, left out of the entry (and `stateBeforeChange.indexOptions`); a
 * collMod that changes nothing else logs no entry at all — null here, and no event
 * (MongoDB's jstests on the oplog entries of hidden-index collMods).
 */
function modifyDescription(entry: OplogEntry): Document | null | undefined {
  const description = entry.operationDescription;
  const index = description?.index as Document | undefined;
  if (!description || !index || index.hidden === undefined) return description;
  const before = entry.stateBeforeChange?.indexOptions as Document | undefined;
  if (before?.hidden === undefined || Boolean(before.hidden) !== Boolean(index.hidden)) {
    return description;
  }
  const { hidden: _hidden, ...rest } = index;
  const changed = Object.keys(rest).some((k) => k !== 'name' && k !== 'keyPattern');
  const others = Object.keys(description).some((k) => k !== 'index');
  if (!changed && !others) return null;
  const { index: _index, ...collection } = description;
  return changed ? { ...collection, index: rest } : collection;
}

/**
 * `stateBeforeChange` as mongod reports it: `collectionOptions` are the collection's catalog
 * options, which begin with its `uuid` (CollectionOptions::toBSON); `indexOptions` hold the old
 * values of what changed (a no-op `hidden` left out, as above).
 */
function stateBeforeChange(entry: OplogEntry): Document {
  const state = entry.stateBeforeChange as Document;
  const out: Document = {};
  const options = state.collectionOptions as Document | undefined;
  if (options !== undefined) {
    const { uuid: _uuid, ...rest } = options;
    out.collectionOptions = entry.uuid !== undefined ? { uuid: entry.uuid, ...rest } : rest;
  }
  const indexOptions = state.indexOptions as Document | undefined;
  if (indexOptions !== undefined) {
    const index = (entry.operationDescription?.index as Document | undefined) ?? {};
    const kept = { ...indexOptions };
    if (kept.hidden !== undefined && Boolean(kept.hidden) === Boolean(index.hidden)) {
      delete kept.hidden;
    }
    if (Object.keys(kept).length > 0) out.indexOptions = kept;
  }
  for (const [key, value] of Object.entries(state)) {
    if (key !== 'collectionOptions' && key !== 'indexOptions') out[key] = value;
  }
  return out;
}

function imageSummary(event: Document): string {
  const ns = event.ns as Document;
  const ts = event.clusterTime as { t: number; i: number };
  const coll = ns.coll !== undefined ? `, coll: "${ns.coll}"` : '';
  return `{operationType: "${event.operationType}", ns: {db: "${ns.db}"${coll}}, clusterTime: Timestamp(${ts.t}, ${ts.i})}`;
}

function addImages(
  node: NodeServices,
  entry: OplogEntry,
  spec: ChangeStreamSpec,
  images: PreImageTracker,
  event: Document,
): void {
  const op = entry.op;
  const wantPre = spec.fullDocumentBeforeChange !== 'off' && PRE_IMAGE_OPS.has(op);
  const wantPost = spec.fullDocument !== 'default' && op === 'update';
  if (!wantPre && !wantPost) return;
  const recorded = images.recordedImages(entry);

  if (wantPre) {
    const pre = (recorded && preImageOf(entry)) || null;
    if (pre === null && spec.fullDocumentBeforeChange === 'required') {
      throw new CommandError(
        'NoMatchingDocument',
        `Change stream was configured to require a pre-image for all update, delete and replace events, but the pre-image was not found for event: ${imageSummary(event)}`,
      );
    }
    event.fullDocumentBeforeChange = pre;
  }
  if (wantPost) {
    let post: Document | null;
    if (spec.fullDocument === 'updateLookup') {
      post = lookupCurrentDocument(node, entry);
    } else {
      // whenAvailable/required: the post-image MongoDB computes from the stored pre-image.
      post = (recorded && postImageOf(entry)) || null;
      if (post === null && spec.fullDocument === 'required') {
        throw new CommandError(
          'NoMatchingDocument',
          `Change stream was configured to require a post-image for all update events, but the post-image was not found for event: ${imageSummary(event)}`,
        );
      }
    }
    event.fullDocument = post;
  }
}

/**
 * The invalidate event that follows an invalidating drop/rename/dropDatabase: the same token
 * data with `fromInvalidate` set, so `startAfter` it opens a stream after the invalidation.
 */
export function buildInvalidate(entry: OplogEntry, tokenData: ResumeTokenData): BuiltEvent {
  const data: ResumeTokenData = { ...tokenData, fromInvalidate: true };
  const token = encodeResumeToken(data);
  return {
    event: {
      _id: token,
      operationType: 'invalidate',
      clusterTime: entry.ts,
      wallTime: new Date(entry.wallMs),
    },
    token,
    tokenData: data,
  };
}
