import { ApiError } from '@sync/contracts';

/**
 * What a failure IS, said once where it enters the engine: the driver adapters (libs/mongo)
 * label what they throw and every per-write failure of a bulk they return, from the driver's own
 * facts (the server's code, its error labels, the driver's error classes) — as the official
 * driver labels its errors (`RetryableWriteError`...). The engine then classifies by label only
 * (`hasFaultLabel`, `isTransientFault`), never by codes or class names.
 *
 * An error that never passed an adapter (a unit test's fake, an error the engine built around
 * a cause) is labelled here, by `labelsOf`, from the same facts read without the driver: the
 * same verdicts either way.
 */
export type FaultLabel =
  /** Running the same operation again may cure it (failover, shutdown, timeout, lost connection). */
  | 'transient'
  /** The server answered with an error code: a refusal repeats unless it is also transient. */
  | 'refused'
  /** A unique index (the `_id` index or another) already holds the key. */
  | 'duplicateKey'
  /** The write concern was not satisfied (timeout, unsatisfiable): the write may not be durable. */
  | 'writeConcern'
  /**
   * A write that cannot apply to the document as the destination holds it (an update's path
   * through a scalar, `$push` onto a non-array, a result past 16 MB). Per-write failures only.
   */
  | 'shapeConflict'
  /** The destination refused a document of the copy (other than as a duplicate key). */
  | 'documentRejected'
  /**
   * Running the sync again cannot cure it: the sync stops and shows it. The engine's own named
   * stops carry it from their construction (an ApplyError that is not retryable, a copy write
   * refused for good); an API error, a programming error (TypeError...) and an operation the
   * driver refused to send (MongoInvalidArgumentError) are read as such.
   */
  | 'permanent';

export const FAULT_LABELS: readonly FaultLabel[] = [
  'transient',
  'refused',
  'duplicateKey',
  'writeConcern',
  'shapeConflict',
  'documentRejected',
  'permanent',
];

/** Duplicate key: 11000 (and the codes older servers used for it, 11001 and 12582). */
const DUPLICATE_KEY_CODES: ReadonlySet<number> = new Set([11000, 11001, 12582]);

/**
 * Server error codes worth retrying: MongoDB's retryable-error list (HostUnreachable 6,
 * HostNotFound 7, NetworkTimeout 89, ShutdownInProgress 91, PrimarySteppedDown 189,
 * ExceededTimeLimit 262, SocketException 9001, NotWritablePrimary 10107, InterruptedAtShutdown
 * 11600, InterruptedDueToReplStateChange 11602, NotPrimaryNoSecondaryOk 13435,
 * NotPrimaryOrSecondary 13436, ...) plus cursor loss on failover (43), MaxTimeMSExpired (50),
 * WriteConcernFailed (64) and the read-concern/timeouts a failover causes.
 */
const TRANSIENT_CODES: ReadonlySet<number> = new Set([
  6, 7, 43, 50, 63, 64, 89, 91, 134, 150, 189, 237, 251, 262, 9001, 10107, 11600, 11602, 13435,
  13436,
]);

/** WriteConcernFailed (wtimeout) and UnsatisfiableWriteConcern. */
const WRITE_CONCERN_CODES: ReadonlySet<number> = new Set([64, 100]);

/**
 * Codes of a write that cannot apply to the destination's current shape of the document, which
 * a newer source state explains (a replayed `$set a.b` where `a` is now a scalar...).
 */
const SHAPE_CONFLICT_CODES: ReadonlySet<number> = new Set([
  2, // BadValue: "$push/$slice: the field must be an array but is of type …"
  14, // TypeMismatch
  28, // PathNotViable: "Cannot create field 'b' in element {a: 1}"
  40, // ConflictingUpdateOperators (defensive: translateUpdate never builds one)
  10334, // BSONObjectTooLarge: resulting document after update too large (newer servers)
  17419, // the same on older servers
]);

/** Server error labels that mean "try again" (the driver's and the server's). */
const TRANSIENT_SERVER_LABELS = /Retryable|ResumableChangeStreamError|TransientTransactionError/;

/** Names of the driver's error classes that mean "try again" (for unlabelled errors only). */
const TRANSIENT_CLASS_NAMES = /Network|ServerSelection|PoolCleared|Timeout|NotPrimary|Interrupted/;

/**
 * Names of the driver's error classes that mean "refused for good": an operation the driver
 * would not send (an argument it cannot encode or check): sent again, it is the same operation.
 */
const PERMANENT_CLASS_NAMES = /^MongoInvalidArgumentError$/;

/**
 * A server error code as a number. A command run with exact BSON options (`promoteValues:
 * false`, as the job store's reads are) gets its error reply decoded the same way, so its
 * `code` is an Int32 (or a Long, a Double), not a number.
 */
export function faultCode(code: unknown): number | undefined {
  if (typeof code === 'number') return code;
  if (code === null || typeof code !== 'object') return undefined;
  const bson = code as { _bsontype?: unknown; toNumber?: () => number; valueOf(): unknown };
  if (bson._bsontype === 'Long' && typeof bson.toNumber === 'function') return bson.toNumber();
  if (bson._bsontype === 'Int32' || bson._bsontype === 'Double') {
    const value = bson.valueOf();
    return typeof value === 'number' ? value : undefined;
  }
  return undefined;
}

/** The labels a server error code carries (a whole command's error). */
export function labelsForCode(code: number | undefined): Set<FaultLabel> {
  const labels = new Set<FaultLabel>();
  if (typeof code !== 'number') return labels;
  labels.add('refused');
  if (TRANSIENT_CODES.has(code)) labels.add('transient');
  if (DUPLICATE_KEY_CODES.has(code)) labels.add('duplicateKey');
  if (WRITE_CONCERN_CODES.has(code)) labels.add('writeConcern');
  return labels;
}

/** The labels of one write's failure in a bulk, by its server code. */
export function labelsForWriteCode(code: number | undefined): Set<FaultLabel> {
  const labels = labelsForCode(code);
  if (typeof code === 'number' && SHAPE_CONFLICT_CODES.has(code)) labels.add('shapeConflict');
  return labels;
}

/** Whether a server's error label (e.g. `RetryableWriteError`) means "try again". */
export function isTransientServerLabel(label: string): boolean {
  return TRANSIENT_SERVER_LABELS.test(label);
}

const LABELS = 'faultLabels';

/** Something labelled: an error, or a per-write failure (WriteFailure.faultLabels). */
interface Labelled {
  faultLabels?: ReadonlySet<FaultLabel>;
}

/**
 * Attaches `labels` to `target` (added to any it has), not enumerable, so an error's shape,
 * equality and serialization stay as they were. Returns `target`.
 */
export function labelFault<T>(target: T, labels: Iterable<FaultLabel>): T {
  if (!target || typeof target !== 'object') return target;
  const own = (target as Labelled)[LABELS];
  const merged = new Set<FaultLabel>(own instanceof Set ? own : []);
  for (const label of labels) merged.add(label);
  Object.defineProperty(target, LABELS, {
    value: merged as ReadonlySet<FaultLabel>,
    enumerable: false,
    configurable: true,
    writable: true,
  });
  return target;
}

/**
 * The labels of a failure: those its adapter (or its constructor) attached, else (it never
 * passed an adapter) read from its server code, its error labels and its class (an API error
 * and a programming error are `permanent`). Its own labels only; see
 * `isTransientFault` for a cause's.
 */
export function labelsOf(error: unknown): ReadonlySet<FaultLabel> {
  if (!error || typeof error !== 'object') return new Set();
  const attached = (error as Labelled)[LABELS];
  if (attached instanceof Set) return attached;
  const { code, name, errorLabels } = error as {
    code?: unknown;
    name?: unknown;
    errorLabels?: unknown;
  };
  const numeric = faultCode(code);
  // A per-write failure of a bulk (not an Error) may be a shape conflict; a command's error not.
  const labels = error instanceof Error ? labelsForCode(numeric) : labelsForWriteCode(numeric);
  if (typeof name === 'string' && TRANSIENT_CLASS_NAMES.test(name)) labels.add('transient');
  const serverLabels =
    errorLabels instanceof Set ? [...errorLabels] : Array.isArray(errorLabels) ? errorLabels : [];
  if (serverLabels.some((l) => isTransientServerLabel(String(l)))) labels.add('transient');
  if (
    error instanceof ApiError ||
    (typeof name === 'string' && PERMANENT_CLASS_NAMES.test(name)) ||
    error instanceof TypeError ||
    error instanceof RangeError ||
    error instanceof ReferenceError
  ) {
    labels.add('permanent');
  }
  return labels;
}

/** Whether the failure (not its causes) carries `label`. */
export function hasFaultLabel(error: unknown, label: FaultLabel): boolean {
  return labelsOf(error).has(label);
}

/** Whether the failure or one of its causes (`cause`, up to 5 deep) carries `label`. */
export function hasFaultLabelInChain(error: unknown, label: FaultLabel): boolean {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    if (hasFaultLabel(e, label)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
