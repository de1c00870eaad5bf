import type { ChangeEvent } from './change-event';
import type { WriteStep } from './write-step';

/**
 * insert → replace-with-upsert on the documentKey, sent as an insert (`insert: true`, see
 * WriteOp). A plain insert alone would fail with E11000 when the copy (which reads after T0)
 * already wrote the document, or when the event is applied again after a restart: the lane
 * then replaces, which is idempotent and leaves exactly the inserted version, which later
 * events then bring forward.
 */
export function translateInsert(event: ChangeEvent): WriteStep[] {
  const doc = requireFullDocument(event);
  return [{ kind: 'replace', filter: requireKey(event), replacement: doc, insert: true }];
}

export function requireKey(event: ChangeEvent) {
  if (!event.documentKey) throw new TypeError(`${event.operationType} event without documentKey`);
  return event.documentKey;
}

export function requireFullDocument(event: ChangeEvent) {
  if (!event.fullDocument) {
    throw new TypeError(`${event.operationType} event without fullDocument`);
  }
  return event.fullDocument;
}
