import { Timestamp } from 'bson';
import type { ResumeToken } from './ports';

/** KeyString type byte of a Timestamp: the first value of every MongoDB resume token. */
const KEYSTRING_TIMESTAMP = 0x82;

/**
 * The cluster time inside a resume token, or undefined when the token has another format.
 * MongoDB's `_data` is a hex KeyString whose first value is the event's (or, for a
 * postBatchResumeToken, the high-water mark's) cluster time: byte 0x82 then 4 bytes of seconds
 * and 4 bytes of increment, big-endian. That is what lets an idle stream report progress.
 */
export function resumeTokenTime(token: ResumeToken | undefined): Timestamp | undefined {
  const data = token?._data as unknown;
  let bytes: Uint8Array | undefined;
  if (typeof data === 'string') {
    if (!/^[0-9a-fA-F]{18}/.test(data)) return undefined;
    bytes = Uint8Array.from(
      data
        .slice(0, 18)
        .match(/../g)!
        .map((h) => parseInt(h, 16)),
    );
  } else if (data && typeof data === 'object' && 'buffer' in data) {
    bytes = (data as { buffer: Uint8Array }).buffer;
  }
  if (!bytes || bytes.length < 9 || bytes[0] !== KEYSTRING_TIMESTAMP) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return new Timestamp({ t: view.getUint32(1), i: view.getUint32(5) });
}
