import type { ChangeEvent } from './change-event';
import type { WriteStep } from './write-step';

/**
 * insert → replace-with-upsert on the documentKey. A plain insert would fail with E11000 when
 * the copy (which reads after T0) already wrote the document; replacing makes the write
 * idempotent and leaves exactly the inserted version, which later events then bring forward.
 */
export function translateInsert(event: ChangeEvent): WriteStep[] {
  const doc = requireFullDocument(event);
  return [{ kind: 'replace', filter: requireKey(event), replacement: doc }];
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
