import { Binary, Int32, Timestamp, type Document } from 'bson';
import { CommandError } from '../errors';
import { bsonTypeOf } from '../bson/compare';
import { decodeKeyString, encodeKeyString } from './keystring';

/**
 * Resume tokens as MongoDB 7.0 builds them (src/mongo/db/pipeline/resume_token.cpp): a
 * KeyString of (clusterTime, version, tokenType, txnOpIndex, fromInvalidate, uuid|null,
 * eventIdentifier), returned as `{_data: <uppercase hex>}` plus `_typeBits` when needed.
 * KeyString preserves order, so tokens compare as strings in stream order, and a
 * high-water-mark token (tokenType 0) sorts before every event token at the same time.
 */

export const TOKEN_VERSION = 2;

const ErrorCodesInvalidResumeToken = 260;
/** MongoDB reports a malformed UUID with InvalidUUID-style FailedToParse. */
const ErrorCodesInvalidUUID = 9;

export const TokenType = {
  HighWaterMark: 0,
  Event: 128,
} as const;

/** Operation types whose v1 token identity is just the documentKey (change_stream_helpers_legacy). */
const CLASSIC_OPERATION_TYPES = new Set([
  'insert',
  'update',
  'replace',
  'delete',
  'drop',
  'rename',
  'dropDatabase',
  'invalidate',
]);

export interface ResumeTokenData {
  clusterTime: Timestamp;
  version: number;
  tokenType: number;
  txnOpIndex: number;
  fromInvalidate: boolean;
  uuid?: Binary;
  /** v2: `{operationType, documentKey | operationDescription}`; v1: the documentKey. */
  eventIdentifier?: Document;
}

export interface ResumeTokenDoc {
  _data: string;
  _typeBits?: Binary;
}

/** Data of the token of one event, built from what the event reports. */
export function eventTokenData(args: {
  clusterTime: Timestamp;
  uuid?: Binary;
  operationType: string;
  documentKey?: Document;
  operationDescription?: Document;
  version?: number;
}): ResumeTokenData {
  const version = args.version ?? TOKEN_VERSION;
  let eventIdentifier: Document | undefined;
  if (version <= 1 && CLASSIC_OPERATION_TYPES.has(args.operationType)) {
    eventIdentifier = args.documentKey;
  } else {
    eventIdentifier = { operationType: args.operationType };
    if (args.documentKey !== undefined) eventIdentifier.documentKey = args.documentKey;
    else if (args.operationDescription !== undefined)
      eventIdentifier.operationDescription = args.operationDescription;
  }
  return {
    clusterTime: args.clusterTime,
    version,
    tokenType: TokenType.Event,
    txnOpIndex: 0,
    fromInvalidate: false,
    uuid: args.uuid,
    eventIdentifier,
  };
}

export function highWaterMarkData(
  clusterTime: Timestamp,
  version = TOKEN_VERSION,
): ResumeTokenData {
  return {
    clusterTime,
    version,
    tokenType: TokenType.HighWaterMark,
    txnOpIndex: 0,
    fromInvalidate: false,
  };
}

export function encodeResumeToken(data: ResumeTokenData): ResumeTokenDoc {
  // Ints travel as Int32 so the KeyString type bits stay all-zero, as in MongoDB.
  const values: unknown[] = [data.clusterTime, new Int32(data.version)];
  if (data.version >= 1) values.push(new Int32(data.tokenType));
  values.push(new Int32(data.txnOpIndex));
  if (data.version >= 1) values.push(data.fromInvalidate);
  if (data.uuid) values.push(data.uuid);
  else if (data.version >= 2) values.push(null);
  if (data.eventIdentifier !== undefined) values.push(data.eventIdentifier);
  const { bytes, typeBits } = encodeKeyString(values);
  const doc: ResumeTokenDoc = { _data: Buffer.from(bytes).toString('hex').toUpperCase() };
  if (typeBits) doc._typeBits = new Binary(Buffer.from(typeBits), 0);
  return doc;
}

export function highWaterMarkToken(clusterTime: Timestamp): ResumeTokenDoc {
  return encodeResumeToken(highWaterMarkData(clusterTime));
}

function invalid(code: number, message: string): never {
  throw new CommandError(code, message);
}

function intOf(value: unknown): number | undefined {
  return bsonTypeOf(value) === 'int'
    ? Number(value instanceof Int32 ? value.value : value)
    : undefined;
}

/**
 * Parses a client-supplied token, with the checks (and error codes) of ResumeToken::getData.
 * Only tokens with our encoding, or MongoDB's for the supported value types, decode.
 */
export function decodeResumeToken(token: unknown): ResumeTokenData {
  const doc = token as Document;
  if (bsonTypeOf(token) !== 'object' || typeof doc._data !== 'string') {
    invalid(
      40647,
      `Bad resume token: _data of missing or of wrong type. Expected string, got ${JSON.stringify(token)}`,
    );
  }
  let typeBits: Uint8Array | undefined;
  if (doc._typeBits !== undefined) {
    const tb = doc._typeBits as Binary;
    if (bsonTypeOf(tb) !== 'binData' || tb.sub_type !== 0) {
      invalid(40648, `Bad resume token: _typeBits of wrong type ${JSON.stringify(token)}`);
    }
    typeBits = tb.buffer.subarray(0, tb.position);
  }
  const hex = doc._data as string;
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    invalid(9, 'resume token string was not a valid hex string');
  }
  let values: unknown[];
  try {
    values = decodeKeyString(Buffer.from(hex, 'hex'), typeBits);
  } catch (err) {
    return invalid(50811, `KeyString format error: ${(err as Error).message}`);
  }
  const it = values[Symbol.iterator]();
  const next = () => it.next();

  let r = next();
  if (r.done) invalid(40649, 'invalid empty resume token');
  if (bsonTypeOf(r.value) !== 'timestamp')
    invalid(ErrorCodesInvalidResumeToken, 'Resume token clusterTime is not a Timestamp');
  const clusterTime = r.value as Timestamp;

  r = next();
  if (r.done) invalid(50796, 'Resume Token does not contain version');
  const version = intOf(r.value);
  if (version === undefined) invalid(50854, 'Invalid resume token: wrong type for version');
  if (version !== 0 && version !== 1 && version !== 2) {
    invalid(50795, 'Invalid Resume Token: only supports version 0, 1 and 2');
  }

  let tokenType: number = TokenType.Event;
  if (version >= 1) {
    r = next();
    if (r.done) invalid(51055, 'Resume Token does not contain tokenType');
    const t = intOf(r.value);
    if (t === undefined) invalid(51056, 'Resume Token tokenType is not an int.');
    if (t !== TokenType.Event && t !== TokenType.HighWaterMark)
      invalid(51057, `Token type ${t} not recognized`);
    tokenType = t;
  }

  r = next();
  if (r.done) invalid(50793, 'Resume Token does not contain txnOpIndex');
  const txnOpIndex = intOf(r.value);
  if (txnOpIndex === undefined) invalid(50855, 'Resume Token txnOpIndex is not an integer');
  if (txnOpIndex < 0) invalid(50794, 'Invalid Resume Token: txnOpIndex should be non-negative');

  let fromInvalidate = false;
  if (version >= 1) {
    r = next();
    if (r.done) invalid(50872, 'Resume Token does not contain fromInvalidate');
    if (typeof r.value !== 'boolean')
      invalid(50870, 'Resume Token fromInvalidate is not a boolean.');
    fromInvalidate = r.value;
  }

  const data: ResumeTokenData = { clusterTime, version, tokenType, txnOpIndex, fromInvalidate };
  r = next();
  if (r.done) {
    if (version > 1) invalid(6189500, 'Expected UUID or null');
    return data;
  }
  if (r.value !== null) {
    const uuid = r.value as Binary;
    if (bsonTypeOf(uuid) !== 'binData' || uuid.sub_type !== 4 || uuid.position !== 16) {
      invalid(ErrorCodesInvalidUUID, 'Invalid UUID in resume token');
    }
    data.uuid = uuid;
  }
  r = next();
  if (!r.done && tokenType === TokenType.HighWaterMark)
    invalid(6189504, 'Invalid high water mark token');
  if (r.done) {
    if (tokenType === TokenType.Event && version >= 2) {
      invalid(6189501, 'Expected an eventIdentifier for an event resume token');
    }
    return data;
  }
  if (bsonTypeOf(r.value) !== 'object')
    invalid(6189503, 'Resume Token eventIdentifier is not an object');
  data.eventIdentifier = r.value as Document;
  r = next();
  if (!r.done && version >= 2) {
    // fragmentNum ($changeStreamSplitLargeEvent): accepted, though the emulator never splits events.
    const fragment = intOf(r.value);
    if (fragment === undefined || fragment < 0) {
      invalid(7182501, "Resume token 'fragmentNum' must be a non-negative integer.");
    }
    r = next();
  }
  if (!r.done) invalid(40646, 'invalid oversized resume token');
  return data;
}

export function isHighWaterMark(data: ResumeTokenData): boolean {
  return data.tokenType === TokenType.HighWaterMark;
}

/** Token strings compare in stream order (KeyString property). */
export function compareTokens(a: ResumeTokenDoc, b: ResumeTokenDoc): number {
  return a._data < b._data ? -1 : a._data > b._data ? 1 : 0;
}

/** Human-readable form used in error messages, like MongoDB's `{_data: "..."}`. */
export function tokenToString(token: ResumeTokenDoc): string {
  return `{_data: "${token._data}"}`;
}

/** Timestamp immediately before `ts` (so an exclusive scan after it includes `ts`). */
export function previousTimestamp(ts: Timestamp): Timestamp {
  if (ts.i > 0) return new Timestamp({ t: ts.t, i: ts.i - 1 });
  if (ts.t === 0) return ts;
  return new Timestamp({ t: ts.t - 1, i: 0xffffffff });
}
