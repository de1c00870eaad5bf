import {
  faultCode,
  isTransientServerLabel,
  labelFault,
  labelsForCode,
  labelsForWriteCode,
  labelsOf,
  type FaultLabel,
} from '@sync/engine';
import {
  MongoError,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoOperationTimeoutError,
  MongoServerSelectionError,
} from 'mongodb';
import { wrapMethods } from './wrap-methods';

/**
 * The adapters' one labelling of driver failures (the engine's fault labels, fault-labels.ts):
 * what an adapter throws, and each per-write failure of a bulk it returns, is labelled here
 * from the driver's own facts — the server's code, the error labels the server and the driver
 * attach (`hasErrorLabel`), the driver's error classes — so the engine classifies by label only.
 */

/** The labels of a driver error, from the driver's facts (not its cause's: see labelsOf). */
export function driverFaultLabels(error: MongoError): Set<FaultLabel> {
  const labels = labelsForCode(faultCode(error.code));
  if (
    error instanceof MongoNetworkError || // also a pool cleared, a network timeout
    error instanceof MongoServerSelectionError ||
    error instanceof MongoOperationTimeoutError ||
    // A connection checkout that timed out (the driver does not export its class).
    error.name === 'MongoWaitQueueTimeoutError' ||
    error.errorLabels.some(isTransientServerLabel)
  ) {
    labels.add('transient');
  }
  // Refused by the driver before anything was sent: sending it again sends the same thing.
  if (error instanceof MongoInvalidArgumentError) labels.add('permanent');
  return labels;
}

/**
 * `error` labelled (a driver error by its facts; an error that is not the driver's is left to
 * be read as it is), for throwing on: `throw labelDriverError(error)`.
 */
export function labelDriverError<T>(error: T): T {
  if (error instanceof MongoError) labelFault(error, driverFaultLabels(error));
  return error;
}

/** The labels of one write's failure in a bulk result (its server code, a number or BSON). */
export function writeErrorLabels(code: unknown): ReadonlySet<FaultLabel> {
  return labelsForWriteCode(faultCode(code));
}

/**
 * A duplicate key: the error itself (labelled here if it was not yet), or any of its per-write
 * errors (a bulk's `writeErrors`). The adapters' one duplicate-key check.
 */
export function isDuplicateKey(error: unknown): boolean {
  if (labelsOf(labelDriverError(error)).has('duplicateKey')) return true;
  const e = error as { writeErrors?: unknown } | undefined;
  const list: unknown[] = Array.isArray(e?.writeErrors)
    ? e.writeErrors
    : e?.writeErrors
      ? [e.writeErrors]
      : [];
  return list.some((w) => {
    const code = (w as { code?: unknown } | undefined)?.code;
    return writeErrorLabels(code).has('duplicateKey');
  });
}

/**
 * `target` with its failures labelled as they leave it: every method's synchronous throw, its
 * rejected promise, a rejected step of an async iterable it returns (a partition read) and,
 * for the methods named in `wrapResults`, the object a call resolves to (a change feed's
 * cursor) alike. The directory hands out every adapter through this, so what any adapter
 * throws reaches the engine labelled, without a catch in each method. Errors that are not the
 * driver's (the adapters' own, a lost claim) pass as they are.
 */
export function faultLabelled<T extends object>(
  target: T,
  wrapResults: ReadonlyArray<keyof T & string> = [],
): T {
  const nested = new Set<PropertyKey>(wrapResults);
  return wrapMethods(target, (property, call) => (...args: unknown[]) => {
    let result: unknown;
    try {
      result = call(...args);
    } catch (error) {
      throw labelDriverError(error);
    }
    return labelledResult(result, nested.has(property));
  });
}

function labelledResult(result: unknown, wrapResolved: boolean): unknown {
  if (result instanceof Promise) {
    return result.then(
      (value: unknown) =>
        wrapResolved && value !== null && typeof value === 'object' ? faultLabelled(value) : value,
      (error: unknown) => {
        throw labelDriverError(error);
      },
    );
  }
  if (result !== null && typeof result === 'object' && Symbol.asyncIterator in result)
    return labelledIterator(result as AsyncIterable<unknown>);
  return result;
}

/** An async iterable (and iterator, as a generator is) whose rejected steps are labelled. */
function labelledIterator<T>(iterable: AsyncIterable<T>): AsyncIterableIterator<T> {
  let inner: AsyncIterator<T> | null = null;
  const it = (): AsyncIterator<T> => (inner ??= iterable[Symbol.asyncIterator]());
  const relabel = (error: unknown): never => {
    throw labelDriverError(error);
  };
  return {
    next: (...args: [] | [unknown]) =>
      it()
        .next(...args)
        .catch(relabel),
    return: (value?: unknown) => {
      const r = it().return;
      return r
        ? r.call(inner, value).catch(relabel)
        : Promise.resolve({ done: true, value: value as T });
    },
    throw: (error?: unknown) => {
      const t = it().throw;
      return t ? t.call(inner, error).catch(relabel) : Promise.reject(error);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
