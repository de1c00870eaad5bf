import { createHash } from 'node:crypto';

/** Bytes of a record's fingerprint kept: the first 16 of its SHA-1 (128 bits). */
const DIGEST_BYTES = 16;

/** A record's fingerprint: the first DIGEST_BYTES of the SHA-1 of its BSON. */
export function recordFingerprint(bytes: Uint8Array): Buffer {
  return createHash('sha1').update(bytes).digest().subarray(0, DIGEST_BYTES);
}

/**
 * What the job store knows of each catalog record it last wrote or read: the record's
 * fingerprint, its place in the catalog's order and the catalog version it was written under,
 * by namespace key. Kept in columns (a slot number per key, the fields in typed arrays) rather
 * than an object and a digest string per key: ~45 bytes per namespace instead of ~130, at
 * 100,000 namespaces ~8 MB less of the worker's heap for as long as the sync runs.
 */
export class WrittenCatalog {
  private readonly slots = new Map<string, number>();
  private digests = Buffer.alloc(0);
  private positions = new Int32Array(0);
  private versions = new Int32Array(0);
  private used = 0;
  private maxPos = -1;

  get size(): number {
    return this.slots.size;
  }

  keys(): IterableIterator<string> {
    return this.slots.keys();
  }

  has(key: string): boolean {
    return this.slots.has(key);
  }

  /** The record of `key` was written with this fingerprint. */
  matches(key: string, digest: Uint8Array): boolean {
    const slot = this.slots.get(key);
    if (slot === undefined) return false;
    const at = slot * DIGEST_BYTES;
    return this.digests.compare(digest, 0, DIGEST_BYTES, at, at + DIGEST_BYTES) === 0;
  }

  pos(key: string): number | undefined {
    const slot = this.slots.get(key);
    return slot === undefined ? undefined : this.positions[slot];
  }

  version(key: string): number | undefined {
    const slot = this.slots.get(key);
    return slot === undefined ? undefined : this.versions[slot];
  }

  /** The place after every record's: where a new record goes. */
  nextPos(): number {
    return this.maxPos + 1;
  }

  set(key: string, digest: Uint8Array, pos: number, version: number): void {
    let slot = this.slots.get(key);
    if (slot === undefined) {
      slot = this.used++;
      this.grow(this.used);
      this.slots.set(key, slot);
    }
    this.digests.set(digest.subarray(0, DIGEST_BYTES), slot * DIGEST_BYTES);
    this.positions[slot] = pos;
    this.versions[slot] = version;
    if (pos > this.maxPos) this.maxPos = pos;
  }

  /** `key`'s entry as `from` has it (it must have one). */
  copyFrom(from: WrittenCatalog, key: string): void {
    const slot = from.slots.get(key)!;
    const at = slot * DIGEST_BYTES;
    this.set(
      key,
      from.digests.subarray(at, at + DIGEST_BYTES),
      from.positions[slot]!,
      from.versions[slot]!,
    );
  }

  setVersion(key: string, version: number): void {
    const slot = this.slots.get(key);
    if (slot !== undefined) this.versions[slot] = version;
  }

  private grow(needed: number): void {
    if (needed <= this.positions.length) return;
    const capacity = Math.max(64, needed, this.positions.length * 2);
    const digests = Buffer.alloc(capacity * DIGEST_BYTES);
    this.digests.copy(digests);
    this.digests = digests;
    const positions = new Int32Array(capacity);
    positions.set(this.positions);
    this.positions = positions;
    const versions = new Int32Array(capacity);
    versions.set(this.versions);
    this.versions = versions;
  }
}

/**
 * A save's encoding of the catalog, made before its first await (the records may be the
 * caller's live objects): every record's fingerprint, and the BSON of those that differ from
 * what `written` holds (all of them when nothing is known), packed back to back in one buffer.
 * At 100,000 namespaces a Buffer object per record for its bytes and another for its
 * fingerprint cost ~25 MB for as long as a first save lasted.
 */
export class EncodedCatalog {
  readonly keys: string[];
  private readonly digests: Buffer;
  /** Per record: where its bytes start in `packed` (-1: known equal, not kept) and end. */
  private readonly starts: number[];
  private readonly ends: number[];
  private packed = Buffer.alloc(0);
  private used = 0;

  constructor(
    records: ReadonlyArray<{ key: string }>,
    written: WrittenCatalog | null,
    encode: (record: { key: string }) => Uint8Array,
  ) {
    const n = records.length;
    this.keys = new Array<string>(n);
    this.digests = Buffer.alloc(n * DIGEST_BYTES);
    this.starts = new Array<number>(n);
    this.ends = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const record = records[i]!;
      const bytes = encode(record);
      const digest = recordFingerprint(bytes);
      digest.copy(this.digests, i * DIGEST_BYTES);
      this.keys[i] = record.key;
      if (written?.matches(record.key, digest)) {
        this.starts[i] = -1;
        this.ends[i] = -1;
      } else {
        this.starts[i] = this.used;
        this.keep(bytes);
        this.ends[i] = this.used;
      }
    }
  }

  get length(): number {
    return this.keys.length;
  }

  digest(i: number): Buffer {
    return this.digests.subarray(i * DIGEST_BYTES, (i + 1) * DIGEST_BYTES);
  }

  /** Record `i` differed from the written catalog given (or none was): its bytes are kept. */
  kept(i: number): boolean {
    return this.starts[i]! >= 0;
  }

  /** Record `i`'s BSON, unless it was known equal (then not kept). */
  bytes(i: number): Uint8Array | undefined {
    const start = this.starts[i]!;
    return start < 0 ? undefined : this.packed.subarray(start, this.ends[i]!);
  }

  private keep(bytes: Uint8Array): void {
    const needed = this.used + bytes.length;
    if (needed > this.packed.length) {
      const grown = Buffer.allocUnsafe(Math.max(needed, this.packed.length * 2, 64 * 1024));
      this.packed.copy(grown, 0, 0, this.used);
      this.packed = grown;
    }
    this.packed.set(bytes, this.used);
    this.used = needed;
  }
}
