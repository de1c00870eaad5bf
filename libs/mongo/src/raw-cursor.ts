import type { Db, Document, RunCommandCursor } from 'mongodb';

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
