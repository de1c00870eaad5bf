import { createHash } from 'node:crypto';
import type { RangeDigest } from '../ports/source-cluster';

/**
 * What `digestWhole` reduces each collection to, on both sides of a comparison: SHA-256 over
 * every document's exact BSON bytes in the order given (`_id` order), with their count and total
 * size. One definition for every reader, so equal documents always hash alike.
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
