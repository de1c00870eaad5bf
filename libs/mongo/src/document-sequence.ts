import { createRequire } from 'node:module';

/**
 * The driver's OP_MSG document sequence (section kind 1), which it sends as given: a buffer
 * pushed into it is written to the wire byte for byte. The driver keeps it internal (its client
 * bulkWrite uses it), so it is looked up once from the driver's own module; null when a driver
 * version does not have it. Used by the copy's raw insert (which then decodes and uses
 * insertMany) and by the change writer's replacements at the size limit.
 */
interface DocumentSequence {
  push(document: unknown, buffer: Uint8Array): number;
}
type DocumentSequenceClass = new (field: string) => DocumentSequence;
export const DocumentSequenceImpl: DocumentSequenceClass | null = (() => {
  try {
    const driver = createRequire(require.resolve('mongodb'));
    const commands = driver('./cmap/commands') as { DocumentSequence?: unknown };
    return typeof commands.DocumentSequence === 'function'
      ? (commands.DocumentSequence as DocumentSequenceClass)
      : null;
  } catch {
    return null;
  }
})();

/**
 * A command field (`documents`, `updates`) as a document sequence of these BSON bytes, sent as
 * given. Callers check `DocumentSequenceImpl` first (the driver may not have it).
 */
export function documentSequence(field: string, documents: Uint8Array[]): unknown {
  if (!DocumentSequenceImpl) throw new Error('this driver version has no OP_MSG document sequence');
  const sequence = new DocumentSequenceImpl(field);
  for (const document of documents) sequence.push(document, document);
  return sequence;
}
