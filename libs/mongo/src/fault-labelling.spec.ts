import { isPermanent, isTransientFault, labelsOf, worthRunningAgain } from '@sync/engine';
import {
  MongoBulkWriteError,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  MongoWriteConcernError,
} from 'mongodb';
import { driverFaultLabels, isDuplicateKey, labelDriverError } from './fault-labelling';
import { DocumentRejectedError } from './mongo-destination-cluster';

const server = (code: number, errorLabels?: string[]) =>
  new MongoServerError({ message: `code ${code}`, code, ...(errorLabels ? { errorLabels } : {}) });

const sorted = (labels: Iterable<string>) => [...labels].sort();

describe('driver errors → fault labels (the adapter boundary)', () => {
  it.each([
    ['NotWritablePrimary', server(10107), ['refused', 'transient']],
    ['ShutdownInProgress', server(91), ['refused', 'transient']],
    ['a duplicate key', server(11000), ['duplicateKey', 'refused']],
    ['a duplicate key (old code)', server(11001), ['duplicateKey', 'refused']],
    ['Unauthorized', server(13), ['refused']],
    ['DocumentValidationFailure', server(121), ['refused']],
    ['UnsatisfiableWriteConcern', server(100), ['refused', 'writeConcern']],
    ['RetryableWriteError', server(6000, ['RetryableWriteError']), ['refused', 'transient']],
    [
      'ResumableChangeStreamError',
      server(280, ['ResumableChangeStreamError']),
      ['refused', 'transient'],
    ],
    [
      'TransientTransactionError',
      server(112, ['TransientTransactionError']),
      ['refused', 'transient'],
    ],
    ['a network error', new MongoNetworkError('reset'), ['transient']],
    ['a network timeout', new MongoNetworkTimeoutError('timed out'), ['transient']],
    ['an operation timeout', new MongoOperationTimeoutError('timed out'), ['transient']],
    [
      'no server selected',
      new MongoServerSelectionError('no primary', { type: 'Unknown' } as never),
      ['transient'],
    ],
    [
      'an operation the driver refused to send',
      new MongoInvalidArgumentError('Replacement document must not contain atomic operators'),
      ['permanent'],
    ],
  ])('%s', (_what, error, labels) => {
    expect(sorted(driverFaultLabels(error))).toEqual(labels);
    expect(sorted(labelsOf(labelDriverError(error)))).toEqual(labels);
    // The same verdict as the engine's reading of the unlabelled error.
    const unlabelled = Object.assign(Object.create(Object.getPrototypeOf(error) as object), error);
    expect(sorted(labelsOf(unlabelled))).toEqual(labels);
  });

  it('labels only driver errors; others are read by the engine as they are', () => {
    const plain = new Error('bug');
    expect(labelDriverError(plain)).toBe(plain);
    expect(Object.getOwnPropertyNames(plain)).not.toContain('faultLabels');
  });

  it('classifies labelled driver errors as before', () => {
    expect(isTransientFault(labelDriverError(new MongoNetworkError('x')))).toBe(true);
    expect(worthRunningAgain(labelDriverError(server(13)))).toBe(false);
    expect(worthRunningAgain(labelDriverError(server(10107)))).toBe(true);
    expect(isPermanent(labelDriverError(server(13)))).toBe(true);
    expect(isPermanent(labelDriverError(server(91)))).toBe(false);
    expect(isPermanent(labelDriverError(new MongoNetworkError('x')))).toBe(false);
    const refusal = labelDriverError(new MongoInvalidArgumentError('Document is too large'));
    expect(isPermanent(refusal)).toBe(true);
    expect(worthRunningAgain(refusal)).toBe(false);
  });

  it('labels a write concern error by its code', () => {
    const error = new MongoWriteConcernError({
      writeConcernError: { code: 64, errmsg: 'timeout' },
    } as never);
    expect(labelsOf(labelDriverError(error)).has('refused')).toBe(error.code !== undefined);
  });

  it('labels DocumentRejectedError', () => {
    const error = new DocumentRejectedError('d.c', 1, 121, 'validation', 1);
    expect(sorted(labelsOf(error))).toEqual(['documentRejected', 'refused']);
    expect(worthRunningAgain(error)).toBe(false);
  });
});

describe('isDuplicateKey (the adapters’ one duplicate-key check)', () => {
  it('by the error’s own code', () => {
    expect(isDuplicateKey(server(11000))).toBe(true);
    expect(isDuplicateKey(server(12582))).toBe(true);
    expect(isDuplicateKey(server(13))).toBe(false);
    expect(isDuplicateKey(new MongoNetworkError('x'))).toBe(false);
    expect(isDuplicateKey({ code: 11000 })).toBe(true);
  });

  it('by a per-write error of a bulk', () => {
    const error = new MongoBulkWriteError(
      {
        message: 'bulk',
        code: 65, // MultipleErrorsOccurred
        writeErrors: [
          { index: 0, code: 121, errmsg: 'invalid' },
          { index: 1, code: 11000, errmsg: 'E11000' },
        ] as never,
      },
      { getWriteConcernError: () => undefined } as never,
    );
    expect(isDuplicateKey(error)).toBe(true);
  });
});
