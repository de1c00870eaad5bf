import { BSON } from 'bson';
import type { Db, Document, RunCommandCursor } from 'mongodb';

/** What the driver's own `toBytes()` reads a document's size with. */
const { getInt32LE } = BSON.onDemand.NumberUtils;

/**
 * A cursor command whose documents are read as their raw bytes while every reply of the
 * command itself — errors included — is decoded as usual.
 *
 * The driver's `raw: true` option applies to the whole reply, an error's too. mongod appends
 * its `topologyVersion` to a NotWritablePrimary/NodeIsRecovering error; decoded raw, that is a
 * byte buffer with no `processId`. The driver's server monitoring then stores those bytes as the
 * server's topology version, and the next state-change error throws a TypeError inside the
 * driver (`compareTopologyVersion`). A primary stepping down during a raw read failed the sync
 * with that TypeError (found by the 5 % fault suite). So the cursor is opened without `raw`, and
 * only the options its buffered documents are read with ask for raw bytes.
 */
export function rawDocumentCursor(db: Db, command: Document): RunCommandCursor {
  const cursor = db.runCursorCommand(command);
  const reading = (cursor as unknown as { deserializationOptions?: Document })
    .deserializationOptions;
  if (!reading || typeof reading !== 'object')
    throw new Error(
      'rawDocumentCursor: this driver version has no cursor deserializationOptions; raw reads need adapting',
    );
  reading.raw = true;
  return cursor;
}

/** BSON type of an embedded document: every element of a cursor batch is one. */
const BSON_OBJECT = 3;

/** The parts of the driver's current cursor reply (`CursorResponse`) read below. */
interface DriverCursorReply {
  iterated: number;
  encryptedResponse?: unknown;
  /** The batch array (an `OnDemandDocument`): the reply's bytes and its elements, parsed once. */
  batch: { bson: Uint8Array; elements: ArrayLike<ArrayLike<number>> } | null;
}

function currentReply(cursor: RunCommandCursor): DriverCursorReply | null {
  const reply = (cursor as unknown as { documents?: Partial<DriverCursorReply> | null }).documents;
  if (!reply || typeof reply.iterated !== 'number' || reply.encryptedResponse != null) return null;
  const batch = reply.batch;
  if (!batch || !(batch.bson instanceof Uint8Array) || typeof batch.elements?.length !== 'number')
    return null;
  return reply as DriverCursorReply;
}

/**
 * The documents a raw cursor holds from its last reply, each as a view of the reply's bytes —
 * what `readBufferedDocuments()` returns for a raw cursor, without its cost per document. The
 * driver wraps every document in an object of its own (each element of the document parsed and
 * kept with the reply until the next batch: ~1.5 KB of heap per 1 KB document), then returns
 * the same view; at copy rates that garbage outlived young collections and was ~45 % of the
 * worker's copy CPU in garbage collection. Here only the batch array's elements (parsed once per
 * reply by the driver) are read. The driver's internals are checked before use; any other shape
 * (another driver version, an encrypted reply) takes `readBufferedDocuments()`.
 */
export function readRawBuffered(cursor: RunCommandCursor): Uint8Array[] {
  const reply = currentReply(cursor);
  if (!reply) return cursor.readBufferedDocuments() as unknown as Uint8Array[];
  const { bson, elements } = reply.batch!;
  const documents: Uint8Array[] = [];
  for (let i = reply.iterated; i < elements.length; i++) {
    const element = elements[i]!;
    if (element[0] !== BSON_OBJECT)
      throw new Error(`a cursor batch holds a BSON element of type ${element[0]}, not a document`);
    const offset = element[3]!;
    documents.push(bson.subarray(offset, offset + getInt32LE(bson, offset)));
  }
  reply.iterated = elements.length;
  return documents;
}

/** True when `readRawBuffered` reads this driver's replies directly (tests pin it). */
export function readsRepliesDirectly(cursor: RunCommandCursor): boolean {
  return currentReply(cursor) !== null;
}
