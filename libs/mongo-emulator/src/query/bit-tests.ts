import type { Binary } from 'bson';
import { bsonTypeOf, isNumeric, toNum } from '../bson/compare';
import { CommandError } from '../errors';
import { formatValue } from './format';

export type BitOp = '$bitsAllSet' | '$bitsAnySet' | '$bitsAllClear' | '$bitsAnyClear';

/**
 * Compiles a bit-test operator. The mask is a non-negative integral number, an array of bit
 * positions or BinData; candidates are integral numbers representable as int64 (two's
 * complement, so negative numbers have infinitely many high bits set) or BinData.
 */
export function compileBitTest(op: BitOp, arg: unknown): (value: unknown) => boolean {
  const positions = maskPositions(op, arg);
  const wantSet = op === '$bitsAllSet' || op === '$bitsAnySet';
  const all = op === '$bitsAllSet' || op === '$bitsAllClear';
  return (value) => {
    const bitAt = bitReader(value);
    if (!bitAt) return false;
    const test = (p: number) => bitAt(p) === wantSet;
    return all ? positions.every(test) : positions.some(test);
  };
}

function maskPositions(op: BitOp, arg: unknown): number[] {
  if (Array.isArray(arg)) {
    return arg.map((p) => {
      const n = integral(p);
      if (n === undefined || n < 0n) {
        throw new CommandError('BadValue', `bit positions must be >= 0 but got: ${formatValue(p)}`);
      }
      return Number(n);
    });
  }
  if (bsonTypeOf(arg) === 'binData') return binaryPositions(arg as Binary);
  const n = isNumeric(arg) ? integral(arg) : undefined;
  if (!isNumeric(arg)) {
    throw new CommandError(
      'BadValue',
      `${op} takes an Array, a number, or a BinData but received: ${formatValue(arg)}`,
    );
  }
  if (n === undefined || n < 0n) {
    throw new CommandError(
      'BadValue',
      `${op} bitmask must be a non-negative integer representable as a 64-bit integer: ${formatValue(arg)}`,
    );
  }
  const out: number[] = [];
  for (let i = 0; i < 64; i++) if ((n >> BigInt(i)) & 1n) out.push(i);
  return out;
}

function binaryPositions(bin: Binary): number[] {
  const bytes = bin.buffer.subarray(0, bin.position);
  const out: number[] = [];
  bytes.forEach((byte, i) => {
    for (let b = 0; b < 8; b++) if (byte & (1 << b)) out.push(i * 8 + b);
  });
  return out;
}

function integral(value: unknown): bigint | undefined {
  if (!isNumeric(value)) return undefined;
  const n = toNum(value);
  if (n.kind !== 'int' || n.v > 2n ** 63n - 1n || n.v < -(2n ** 63n)) return undefined;
  return n.v;
}

function bitReader(value: unknown): ((pos: number) => boolean) | undefined {
  if (bsonTypeOf(value) === 'binData') {
    const bin = value as Binary;
    const bytes = bin.buffer.subarray(0, bin.position);
    return (p) => ((bytes[p >> 3] ?? 0) & (1 << (p & 7))) !== 0;
  }
  const n = integral(value);
  if (n === undefined) return undefined;
  const u = BigInt.asUintN(64, n);
  // Beyond bit 63 a two's complement number repeats its sign bit.
  return (p) => (p > 63 ? n < 0n : ((u >> BigInt(p)) & 1n) === 1n);
}
