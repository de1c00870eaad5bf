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

/** The read a digest makes: the range in `_id` order (both sides sort alike). */
export function digestRead(options: DigestOptions): ReadOptions {
  return {
    range: options.range,
    batchSize: options.batchSize ?? 1000,
    sortById: true,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.uuid !== undefined ? { uuid: options.uuid } : {}),
  };
}
