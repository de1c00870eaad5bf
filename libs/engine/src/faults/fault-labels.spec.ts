import { shardClaimLost } from '../shards/claim-fence';
import { Double, Int32, Long } from 'bson';
import {
  faultCode,
  hasFaultLabel,
  hasFaultLabelInChain,
  labelFault,
  labelsForCode,
  labelsForWriteCode,
  labelsOf,
} from './fault-labels';
import { isTransientFault, worthRunningAgain } from './transient';
import { isPermanent } from '../job/sync-runner';
import { ApiError } from '@sync/contracts';
import { DestinationWriteError, HistoryLostError } from '../apply/errors';
import { CopyWriteError } from '../copy/copier';

const serverError = (code: number, labels: string[] = []) =>
  Object.assign(new Error(`server error ${code}`), {
    name: 'MongoServerError',
    code,
    errorLabels: labels,
  });

describe('labelsForCode / labelsForWriteCode', () => {
  it.each([
    [11000, ['refused', 'duplicateKey']],
    [11001, ['refused', 'duplicateKey']],
    [12582, ['refused', 'duplicateKey']],
    [64, ['refused', 'transient', 'writeConcern']],
    [100, ['refused', 'writeConcern']],
    [10107, ['refused', 'transient']],
    [13, ['refused']],
    [28, ['refused']],
  ])('code %s → %j', (code, labels) => {
    expect([...labelsForCode(code)].sort()).toEqual([...labels].sort());
  });

  it('no code, no labels', () => {
    expect(labelsForCode(undefined).size).toBe(0);
  });

  it('a per-write failure may be a shape conflict; a command error is not', () => {
    for (const code of [2, 14, 28, 40, 10334, 17419]) {
      expect(labelsForWriteCode(code).has('shapeConflict')).toBe(true);
      expect(labelsForCode(code).has('shapeConflict')).toBe(false);
    }
    expect(labelsForWriteCode(11000).has('shapeConflict')).toBe(false);
  });
});

describe('faultCode: the code of an error decoded with exact BSON options', () => {
  it('reads numbers, Int32, Long and Double alike; nothing else is a code', () => {
    expect(faultCode(10107)).toBe(10107);
    expect(faultCode(new Int32(10107))).toBe(10107);
    expect(faultCode(Long.fromNumber(11000))).toBe(11000);
    expect(faultCode(new Double(91))).toBe(91);
    expect(faultCode('10107')).toBeUndefined();
    expect(faultCode({ valueOf: () => 10107 })).toBeUndefined();
    expect(faultCode(undefined)).toBeUndefined();
  });

  it('an error whose code is an Int32 is labelled by it (a job-store read’s NotWritablePrimary)', () => {
    const error = Object.assign(new Error('not primary'), {
      name: 'MongoServerError',
      code: new Int32(10107),
    });
    expect([...labelsOf(error)].sort()).toEqual(['refused', 'transient']);
  });
});

describe('labelsOf', () => {
  it('returns the labels an adapter attached, and only those', () => {
    const error = labelFault(serverError(10107), ['refused']);
    expect([...labelsOf(error)]).toEqual(['refused']);
    expect(isTransientFault(error)).toBe(false);
  });

  it('attaches labels without changing the error’s shape', () => {
    const error = labelFault(new Error('x'), ['transient']);
    expect(Object.keys(error)).toEqual([]);
    expect(JSON.stringify(error)).toBe('{}');
    labelFault(error, ['refused']);
    expect([...labelsOf(error)].sort()).toEqual(['refused', 'transient']);
  });

  it.each([
    ['a transient code', serverError(91), ['refused', 'transient']],
    [
      'a RetryableWriteError label',
      serverError(6000, ['RetryableWriteError']),
      ['refused', 'transient'],
    ],
    [
      'a network error',
      Object.assign(new Error('x'), { name: 'MongoNetworkError' }),
      ['transient'],
    ],
    ['a duplicate key', serverError(11000), ['duplicateKey', 'refused']],
    ['a plain error', new Error('bug'), []],
    ['a per-write failure', { index: 0, code: 28, message: 'x' }, ['refused', 'shapeConflict']],
  ])('reads an unlabelled failure (it never passed an adapter): %s', (_what, error, labels) => {
    expect([...labelsOf(error)].sort()).toEqual(labels);
  });

  it('reads a labelled per-write failure by its labels', () => {
    const failure = { index: 0, code: 11000, message: 'x', faultLabels: new Set(['transient']) };
    expect(hasFaultLabel(failure, 'transient')).toBe(true);
    expect(hasFaultLabel(failure, 'duplicateKey')).toBe(false);
  });

  it('finds a label on a cause', () => {
    const wrapped = new Error('wrapped', { cause: labelFault(new Error('x'), ['transient']) });
    expect(hasFaultLabel(wrapped, 'transient')).toBe(false);
    expect(hasFaultLabelInChain(wrapped, 'transient')).toBe(true);
    expect(isTransientFault(wrapped)).toBe(true);
  });
});

describe('classification by label', () => {
  it('worthRunningAgain: a refusal repeats unless transient; no refusal is worth another run', () => {
    expect(worthRunningAgain(labelFault(new Error('x'), ['refused']))).toBe(false);
    expect(worthRunningAgain(labelFault(new Error('x'), ['refused', 'transient']))).toBe(true);
    expect(worthRunningAgain(labelFault(new Error('x'), []))).toBe(true);
    expect(worthRunningAgain(shardClaimLost('w', 'lost'))).toBe(false);
  });

  it('isPermanent: a refusal that is not transient stops the sync', () => {
    expect(isPermanent(labelFault(new Error('refused'), ['refused']))).toBe(true);
    expect(isPermanent(labelFault(new Error('failover'), ['refused', 'transient']))).toBe(false);
    expect(isPermanent(serverError(13))).toBe(true);
    expect(isPermanent(serverError(10107))).toBe(false);
    expect(isPermanent(Object.assign(new Error('x'), { name: 'MongoNetworkError' }))).toBe(false);
  });

  it("the engine's own stops carry `permanent` from their construction, read by label alone", () => {
    const stop = new DestinationWriteError('cannot apply', false);
    const retry = new DestinationWriteError('pool cleared', true);
    expect(hasFaultLabel(stop, 'permanent')).toBe(true);
    expect(hasFaultLabel(retry, 'permanent')).toBe(false);
    expect([isPermanent(stop), isPermanent(retry)]).toEqual([true, false]);
    // A history lost has a server code (286) but is the engine's stop, not a refusal to retry.
    const lost = new HistoryLostError('gone', 286);
    expect([...labelsOf(lost)]).toEqual(['permanent']);
    expect(isPermanent(lost)).toBe(true);
    // A copy write refused for good stops; one cut by a broken connection runs again.
    expect(isPermanent(new CopyWriteError('d.c', serverError(2)))).toBe(true);
    const broken = Object.assign(new Error('closed'), { name: 'MongoNetworkError' });
    expect(isPermanent(new CopyWriteError('d.c', broken))).toBe(false);
    expect(isPermanent(new CopyWriteError('d.c', serverError(91)))).toBe(false);
    // An API error and a programming error never pass an adapter: read as permanent.
    expect(isPermanent(new ApiError('InvalidRequest', 'bad'))).toBe(true);
    expect(isPermanent(new TypeError('x is not a function'))).toBe(true);
    expect(isPermanent(new Error('plain'))).toBe(false);
  });
});
