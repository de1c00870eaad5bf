import type { SyncState } from './sync-state';
import { assertOperationAllowed, wrongStateError, type SyncOperation } from './sync-operations';

describe('operation states', () => {
  it.each<[SyncOperation, SyncState]>([
    ['start', 'IDLE'],
    ['pause', 'RUNNING'],
    ['resume', 'PAUSED'],
    ['commit', 'RUNNING'],
    ['reverse', 'COMMITTED'],
  ])('allows %s in %s', (operation, state) => {
    expect(() => assertOperationAllowed(operation, state)).not.toThrow();
  });

  it.each<[SyncOperation, SyncState, string, string]>([
    ['start', 'RUNNING', 'NotIdle', 'start is only allowed while IDLE; the sync is RUNNING.'],
    [
      'pause',
      'IDLE',
      'InvalidState',
      'pause is not available in state IDLE; it is only allowed while RUNNING.',
    ],
    ['resume', 'RUNNING', 'InvalidState', 'resume is not available in state RUNNING'],
    ['commit', 'PAUSED', 'InvalidState', 'commit is not available in state PAUSED'],
    ['reverse', 'RUNNING', 'InvalidState', 'reverse is not available in state RUNNING'],
    ['pause', 'INITIALIZING', 'NotReady', 'INITIALIZING'],
    ['start', 'INITIALIZING', 'NotReady', 'retry'],
  ])('%s in %s is %s', (operation, state, name, text) => {
    const error = wrongStateError(operation, state);
    expect(error.error).toBe(name);
    expect(error.message).toContain(text);
  });
});
