import type { Document } from 'bson';

/**
 * MongoDB server error codes the emulator raises, with their official codeNames
 * (src/mongo/base/error_codes.yml in the server repository).
 */
export const ErrorCodes = {
  InternalError: 1,
  BadValue: 2,
  NoSuchKey: 4,
  FailedToParse: 9,
  UserNotFound: 11,
  Unauthorized: 13,
  TypeMismatch: 14,
  AuthenticationFailed: 18,
  IllegalOperation: 20,
  NamespaceNotFound: 26,
  IndexNotFound: 27,
  PathNotViable: 28,
  ConflictingUpdateOperators: 40,
  CursorNotFound: 43,
  NoMatchingDocument: 47,
  NamespaceExists: 48,
  MaxTimeMSExpired: 50,
  DollarPrefixedFieldName: 52,
  InvalidIdField: 53,
  NotSingleValueField: 54,
  CommandNotFound: 59,
  ImmutableField: 66,
  CannotCreateIndex: 67,
  IndexAlreadyExists: 68,
  InvalidOptions: 72,
  InvalidNamespace: 73,
  IndexOptionsConflict: 85,
  IndexKeySpecsConflict: 86,
  NetworkTimeout: 89,
  ShutdownInProgress: 91,
  OperationFailed: 96,
  WriteConflict: 112,
  CommandNotSupported: 115,
  DocumentValidationFailure: 121,
  CommandNotSupportedOnView: 166,
  OptionNotSupportedOnView: 167,
  InvalidPipelineOperator: 168,
  CommandOnShardedViewNotSupportedOnMongod: 169,
  NoSuchTransaction: 251,
  InvalidResumeToken: 260,
  ChangeStreamFatalError: 280,
  ChangeStreamHistoryLost: 286,
  CannotConvertIndexToUnique: 359,
  UserWritesBlocked: 371,
  ConversionFailure: 241,
  Overflow: 15,
  QueryFeatureNotAllowed: 224,
  Location40323: 40323,
  Location40601: 40601,
  Location40602: 40602,
  Location40415: 40415,
  Location40324: 40324,
  Location16410: 16410,
  Location31254: 31254,
  NotWritablePrimary: 10107,
  DuplicateKey: 11000,
  Interrupted: 11601,
  BSONObjectTooLarge: 10334,
  NotPrimaryNoSecondaryOk: 13435,
  // Added for the wire server, auth and failCommand (names from error_codes.yml).
  HostUnreachable: 6,
  HostNotFound: 7,
  ProtocolError: 17,
  InvalidBSON: 22,
  LockTimeout: 24,
  WriteConcernFailed: 64,
  PrimarySteppedDown: 189,
  NoSuchSession: 206,
  TransactionTooOld: 225,
  ExceededTimeLimit: 262,
  OperationNotSupportedInTransaction: 263,
  MechanismUnavailable: 334,
  UnsupportedOpQueryCommand: 352,
  SocketException: 9001,
  InterruptedAtShutdown: 11600,
  InterruptedDueToReplStateChange: 11602,
  NotPrimaryOrSecondary: 13436,
  // Cursor invalidation, collectionUUID, causal consistency.
  QueryPlanKilled: 175,
  ClusterTimeFailsRateLimiter: 205,
  InvalidUUID: 207,
  CollectionUUIDMismatch: 361,
  // Sharding (mongos).
  AlreadyInitialized: 23,
  ShardKeyNotFound: 61,
  CommandFailed: 125,
  NamespaceNotSharded: 118,
  ConflictingOperationInProgress: 117,
  ShardNotFound: 70,
  // Multi-document transactions.
  TransactionCommitted: 256,
} as const;

export type ErrorCodeName = keyof typeof ErrorCodes;

const NAMES_BY_CODE = new Map<number, string>(
  Object.entries(ErrorCodes).map(([name, code]) => [code, name]),
);

export function codeNameOf(code: number): string {
  return NAMES_BY_CODE.get(code) ?? `Location${code}`;
}

/** Thrown by command handlers; the dispatcher turns it into `{ok: 0, errmsg, code, codeName, ...}`. */
export class CommandError extends Error {
  readonly code: number;
  readonly codeName: string;
  readonly errorLabels: string[];
  /** Extra fields copied onto the error reply (e.g. keyPattern/keyValue for 11000). */
  readonly extra: Document;

  constructor(
    codeName: ErrorCodeName | number,
    message: string,
    options: { labels?: string[]; extra?: Document } = {},
  ) {
    super(message);
    this.name = 'CommandError';
    this.code = typeof codeName === 'number' ? codeName : ErrorCodes[codeName];
    this.codeName = typeof codeName === 'number' ? codeNameOf(codeName) : codeName;
    this.errorLabels = options.labels ?? [];
    this.extra = options.extra ?? {};
  }

  toReply(): Document {
    const reply: Document = {
      ok: 0,
      errmsg: this.message,
      code: this.code,
      codeName: this.codeName,
    };
    Object.assign(reply, this.extra);
    if (this.errorLabels.length) reply.errorLabels = [...this.errorLabels];
    return reply;
  }
}

/** A per-document write error reported inside `writeErrors` rather than failing the command. */
export interface WriteErrorEntry {
  index: number;
  code: number;
  codeName?: string;
  errmsg: string;
  keyPattern?: Document;
  keyValue?: Document;
  errInfo?: Document;
}

export function writeErrorFrom(index: number, err: CommandError): WriteErrorEntry {
  return { index, code: err.code, errmsg: err.message, ...err.extra };
}
