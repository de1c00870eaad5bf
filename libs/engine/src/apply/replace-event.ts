import type { ChangeEvent } from './change-event';
import { requireFullDocument, requireKey } from './insert-event';
import type { WriteStep } from './write-step';

/**
 * replace → replace-with-upsert: upsert because the document may not be on the destination yet
 * (the copy has not reached it, or it was recreated at the source).
 */
export function translateReplace(event: ChangeEvent): WriteStep[] {
  return [{ kind: 'replace', filter: requireKey(event), replacement: requireFullDocument(event) }];
}
