import type { ChangeEvent } from './change-event';
import { requireKey } from './insert-event';
import type { WriteStep } from './write-step';

/** delete → delete by documentKey; deleting a missing document is a no-op, so it is idempotent. */
export function translateDelete(event: ChangeEvent): WriteStep[] {
  return [{ kind: 'delete', filter: requireKey(event) }];
}
