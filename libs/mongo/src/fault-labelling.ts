import {
  isTransientServerLabel,
  labelFault,
  labelsForCode,
  labelsForWriteCode,
  labelsOf,
  type FaultLabel,
} from '@sync/engine';
import {
  MongoError,
  MongoNetworkError,
  MongoOperationTimeoutError,
  MongoServerSelectionError,
} from 'mongodb';

/**
 * The adapters' one labelling of driver failures (the engine's fault labels, fault-labels.ts):
 * what an adapter throws, and each per-write failure of a bulk it returns, is labelled here
 * from the driver's own facts — the server's code, the error labels the server and the driver
 * attach (`hasErrorLabel`), the driver's error classes — so the engine classifies by label only.
 */

/** The labels of a driver error, from the driver's facts (not its cause's: see labelsOf). */
export function driverFaultLabels(error: MongoError): Set<FaultLabel> {
  const labels = labelsForCode(typeof error.code === 'number' ? error.code : undefined);
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

/** The labels of one write's failure in a bulk result (its server code). */
export function writeErrorLabels(code: number | undefined): ReadonlySet<FaultLabel> {
  return labelsForWriteCode(code);
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
    return writeErrorLabels(typeof code === 'number' ? code : undefined).has('duplicateKey');
  });
}
