import { BSON, type Document } from 'bson';
import { EXACT } from '../copy/pick-fields';

/**
 * A document as the source sent it: its exact BSON bytes, decoded only when something must read
 * its fields. An insert event's document goes to the destination as these very bytes (the
 * change writer sends them in a document sequence), so the common path neither decodes nor
 * re-encodes it — each costs the worker more CPU than the rest of the event's handling — and
 * the destination receives the source's bytes exactly (field order and every type as stored).
 *
 * `document` decodes once and caches; callers treat it as read-only (anything derived from it,
 * as an update applied in memory, is a new object written as a plain Document).
 */
export class RawDocument {
  private decoded: Document | undefined;

  constructor(readonly bytes: Uint8Array) {}

  get document(): Document {
    return (this.decoded ??= BSON.deserialize(this.bytes, EXACT));
  }
}

/** A full document, raw or decoded. */
export type FullDocument = Document | RawDocument;

/** The decoded form of a full document (decoded once for a raw one). */
export function documentOf(document: FullDocument): Document {
  return document instanceof RawDocument ? document.document : document;
}
