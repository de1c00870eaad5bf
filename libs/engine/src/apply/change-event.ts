import type { Binary, Document, Timestamp } from 'bson';
import type { FullDocument } from './raw-document';

/**
 * A change event as the source reports it, decoded WITHOUT BSON promotion (Int32, Double,
 * Long stay wrapper objects) so that every value written to the destination keeps its exact
 * type. Only the fields the applier reads are typed; everything else passes through.
 */
export interface ChangeEvent {
  /** The resume token of this event (opaque). */
  _id: Document;
  operationType: string;
  clusterTime?: Timestamp;
  wallTime?: Date;
  ns?: { db: string; coll?: string };
  collectionUUID?: Binary;
  documentKey?: Document;
  /** The document (insert, replace): raw bytes from the change feed (RawDocument), or decoded. */
  fullDocument?: FullDocument | null;
  updateDescription?: UpdateDescription;
  /** DDL details; only with `showExpandedEvents: true`. */
  operationDescription?: Document;
  /** Target of a rename (also in operationDescription.to with expanded events). */
  to?: { db: string; coll: string };
  stateBeforeChange?: Document;
  [field: string]: unknown;
}

/** `updateDescription` of an update event (MongoDB change events reference). */
export interface UpdateDescription {
  /** Dotted paths → new values; array elements appear as `arr.<index>`. */
  updatedFields?: Document;
  /** Dotted paths of removed fields. */
  removedFields?: string[];
  /** Arrays shortened by the update; truncation happens before updatedFields are applied. */
  truncatedArrays?: Array<{ field: string; newSize: unknown }>;
  /**
   * Present (6.1+ with showExpandedEvents, always on 8.2+) only for ambiguous paths: maps the
   * dotted path to its real components — strings for field names, integers for array indexes.
   */
  disambiguatedPaths?: Document;
}

/** A namespace: database plus collection. */
export interface Namespace {
  db: string;
  coll: string;
}

export function nsKey(ns: Namespace): string {
  return `${ns.db}.${ns.coll}`;
}

/**
 * Numbers arrive as bson wrappers when promotion is off (Int32, Double, Long); sizes and
 * indexes must become plain numbers before arithmetic or comparison.
 */
export function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (value && typeof value === 'object') {
    const v = value as { toNumber?: () => number; valueOf?: () => unknown };
    if (typeof v.toNumber === 'function') return v.toNumber();
    const prim = v.valueOf?.();
    if (typeof prim === 'number') return prim;
  }
  throw new TypeError(`not a number: ${String(value)}`);
}
