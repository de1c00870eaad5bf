import type { Document } from 'bson';
import type { Collection } from './collection';

/**
 * Storage statistics in collStats' shape. Sizes are real BSON byte counts for documents;
 * storageSize is the data size rounded up to 4 KiB pages (there is no compression), and
 * index sizes are estimates from the stored key counts.
 */
export function collectionStats(coll: Collection, scale = 1): Document {
  const s = (n: number) => Math.trunc(n / scale);
  const indexSizes: Document = {};
  for (const idx of coll.indexes) indexSizes[idx.name] = s(coll.indexSize(idx));
  const count = coll.count;
  const storageSize = Math.max(4096, Math.ceil(coll.dataSize / 4096) * 4096);
  const totalIndexSize = coll.totalIndexSize;
  const out: Document = {
    ns: coll.ns,
    size: s(coll.dataSize),
    count,
    avgObjSize: count ? Math.trunc(coll.dataSize / count) : 0,
    numOrphanDocs: 0,
    storageSize: s(storageSize),
    freeStorageSize: 0,
    capped: coll.capped,
  };
  if (coll.capped) {
    if (coll.options.max !== undefined) out.max = coll.options.max;
    out.maxSize = s(Number(coll.options.size));
  }
  Object.assign(out, {
    nindexes: coll.indexes.length,
    indexBuilds: [],
    totalIndexSize: s(totalIndexSize),
    totalSize: s(storageSize + totalIndexSize),
    indexSizes,
    scaleFactor: scale,
  });
  return out;
}

/** Bytes a collection occupies "on disk" (data pages plus indexes), for listDatabases/dbStats. */
export function collectionFootprint(coll: Collection): number {
  return Math.max(4096, Math.ceil(coll.dataSize / 4096) * 4096) + coll.totalIndexSize;
}
