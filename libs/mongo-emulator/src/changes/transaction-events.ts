import type { Document } from 'bson';
import type { OplogEntry } from '../oplog/oplog-entry';
import { transactionOperations } from '../transactions/transaction';
import { encodeResumeToken, type ResumeTokenData, type ResumeTokenDoc } from './resume-token';
import type { BuiltEvent } from './event-builder';

/**
 * The operations of a committed transaction as the change stream unwinds them from its last
 * applyOps entry (mongod's TransactionHistoryIterator + unwind stage): each one gets the
 * commit's time and wall time, the transaction's lsid/txnNumber and its index in the
 * transaction (`txnOpIndex`). A partialTxn entry yields nothing: its operations are reported
 * with the final entry, once the transaction committed.
 */
export function unwindTransaction(entry: OplogEntry): OplogEntry[] {
  return transactionOperations(entry).map((op, txnOpIndex) => ({
    ...op,
    ts: entry.ts,
    wallMs: entry.wallMs,
    lsid: entry.lsid,
    txnNumber: entry.txnNumber,
    txnOpIndex,
  }));
}

/** The resume token data of an unwound operation's event: `txnOpIndex` set. */
export function transactionTokenData(data: ResumeTokenData, entry: OplogEntry): ResumeTokenData {
  return { ...data, txnOpIndex: entry.txnOpIndex ?? 0 };
}

/**
 * An event of an unwound operation: mongod 7.0's transform stage adds `txnNumber` and `lsid`
 * before the resume token (change_stream_event_transform.cpp), so they come first.
 */
export function transactionEvent(built: BuiltEvent, entry: OplogEntry): BuiltEvent {
  const tokenData = transactionTokenData(built.tokenData, entry);
  const token: ResumeTokenDoc = encodeResumeToken(tokenData);
  const event: Document = { txnNumber: entry.txnNumber, lsid: entry.lsid };
  for (const [key, value] of Object.entries(built.event)) {
    if (key === 'txnNumber' || key === 'lsid') continue;
    event[key] = key === '_id' ? token : value;
  }
  return { event, token, tokenData };
}
