import type { Progress } from './harness';
import { RestoreInvariants } from './restore-invariants';

/** A restored worker's progress in `state`, with `canWrite`. */
const restored = (state: string, canWrite: boolean): Progress & Record<string, unknown> => ({
  state,
  canCommit: false,
  canWrite,
  info: null,
  lagTimeSeconds: null,
  totalEventsApplied: null,
  collectionCopy: null,
  directionMapping: null,
  syncID: 'sync-1',
  coordinatorID: null,
});

describe('RestoreInvariants: canWrite across restores', () => {
  it('accepts canWrite during the commit, once the destination is final', () => {
    const invariants = new RestoreInvariants();
    invariants.check(restored('RUNNING', false), 1);
    invariants.check(restored('COMMITTING', false), 2);
    // Killed after the destinationUnblocked step was recorded, before COMMITTED was.
    invariants.check(restored('COMMITTING', true), 3);
    invariants.check(restored('COMMITTED', true), 4);
  });

  it('refuses canWrite before the commit, COMMITTED without it, and canWrite lost', () => {
    expect(() => new RestoreInvariants().check(restored('RUNNING', true), 1)).toThrow(
      /false before the commit/,
    );
    expect(() => new RestoreInvariants().check(restored('COMMITTED', false), 1)).toThrow(
      /true once COMMITTED/,
    );
    const invariants = new RestoreInvariants();
    invariants.check(restored('COMMITTING', true), 1);
    expect(() => invariants.check(restored('COMMITTING', false), 2)).toThrow(/went back/);
  });
});
