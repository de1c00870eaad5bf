import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';
import type { DigestOptions, RangeDigest, ReadOptions } from '../ports/source-cluster';

/**
 * The digest both sides of a comparison are reduced to: SHA-256 over every document's exact BSON
 * bytes in the order given (`_id` order), with their count and total size. One definition for
 * every reader (a cluster adapter, a per-shard worker's share), so equal documents always hash
 * alike.
 */
export async function digestDocuments(
  batches: AsyncIterable<Uint8Array[]> | Iterable<Uint8Array[]>,
): Promise<RangeDigest> {
  const hash = createHash('sha256');
  let count = 0;
  let bytes = 0;
  for await (const batch of batches) {
    for (const raw of batch) {
      hash.update(raw);
      count += 1;
      bytes += raw.byteLength;
    }
  }
  return { count, bytes, hash: hash.digest('hex') };
}

/**
 * The digest of a set of documents, whatever order they come in: every document's exact BSON
 * bytes hashed alone (SHA-256), the hashes added up lane by lane (eight 32-bit lanes, each
 * modulo 2^32), with the count and total size. Equal sets always digest alike; a changed,
 * missing or extra document changes the sum unless eight independent 32-bit sums of unrelated
 * hashes cancel at once. What the copy computes over the documents it read of a partition, in
 * the order the source returned them, and what the verifier computes over the destination's
 * range to compare with it without reading the source again (see `Verification`).
 */
export class SetDigest {
  private readonly lanes = new Uint32Array(8);
  private count = 0;
  private bytes = 0;

  add(raw: Uint8Array): void {
    const hash = sha256(raw);
    const lanes = this.lanes;
    for (let i = 0; i < 8; i++) lanes[i] = (lanes[i]! + hash.readUInt32LE(i * 4)) >>> 0;
    this.count += 1;
    this.bytes += raw.byteLength;
  }

  result(): RangeDigest {
    const hex = Array.from(this.lanes, (lane) => lane.toString(16).padStart(8, '0')).join('');
    return { count: this.count, bytes: this.bytes, hash: `set:${hex}` };
  }
}

/** `SetDigest` of every document the batches hold. */
export async function digestSet(
  batches: AsyncIterable<Uint8Array[]> | Iterable<Uint8Array[]>,
): Promise<RangeDigest> {
  const digest = new SetDigest();
  for await (const batch of batches) for (const raw of batch) digest.add(raw);
  return digest.result();
}

/** One-shot SHA-256 (`crypto.hash` where this Node has it: no hash object per document). */
const sha256: (data: Uint8Array) => Buffer =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (data) =>
        (crypto as unknown as { hash(a: string, d: Uint8Array, e: 'buffer'): Buffer }).hash(
          'sha256',
          data,
          'buffer',
        )
    : (data) => createHash('sha256').update(data).digest();

/** The digest `options` ask for: `unordered`, a `SetDigest`; else the `_id`-ordered one. */
export function digestOf(
  options: Pick<DigestOptions, 'unordered'>,
  batches: AsyncIterable<Uint8Array[]> | Iterable<Uint8Array[]>,
): Promise<RangeDigest> {
  return options.unordered ? digestSet(batches) : digestDocuments(batches);
}

/**
 * The read a digest makes: the range in `_id` order (both sides sort alike), or in whatever
 * order the server returns it for an `unordered` (set) digest.
 */
export function digestRead(options: DigestOptions): ReadOptions {
  return {
    range: options.range,
    batchSize: options.batchSize ?? 1000,
    sortById: !options.unordered,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.uuid !== undefined ? { uuid: options.uuid } : {}),
  };
}
