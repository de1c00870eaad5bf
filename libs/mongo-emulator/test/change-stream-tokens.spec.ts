import { Binary, Double, Int32, Long, ObjectId, Timestamp } from 'bson';
import {
  compareTokens,
  decodeResumeToken,
  encodeResumeToken,
  eventTokenData,
  highWaterMarkToken,
  TokenType,
} from '../src/changes';
import { CommandError } from '../src/errors';
import { describeEmulatorOnly } from './helpers/real-server';

const uuid = new Binary(Buffer.from('a5093abb38fe4b9ea67f01bb1a96d812', 'hex'), 4);
const ts = (t: number, i: number) => new Timestamp({ t, i });

function codeOf(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (err) {
    return (err as CommandError).code;
  }
  return undefined;
}

const suite = describeEmulatorOnly("unit test of the emulator's resume-token codec, no server");

suite('resume tokens', () => {
  it('decodes and re-encodes a token produced by MongoDB byte for byte', () => {
    // A v1 insert token from a real server (documentKey {_id: '___x'}).
    const hex =
      '82612E8513000000012B022C0100296E5A1004A5093ABB38FE4B9EA67F01BB1A96D812463C5F6964003C5F5F5F78000004';
    const data = decodeResumeToken({ _data: hex });
    expect(data.clusterTime.equals(ts(1630438675, 1))).toBe(true);
    expect(data.version).toBe(1);
    expect(data.tokenType).toBe(TokenType.Event);
    expect(data.txnOpIndex).toBe(0);
    expect(data.fromInvalidate).toBe(false);
    expect(Buffer.from(data.uuid!.buffer).toString('hex')).toBe('a5093abb38fe4b9ea67f01bb1a96d812');
    expect(data.eventIdentifier).toEqual({ _id: '___x' });
    expect(encodeResumeToken(data)._data).toBe(hex);
  });

  it('builds v2 event tokens keyed by operationType and documentKey, uppercase hex', () => {
    const data = eventTokenData({
      clusterTime: ts(100, 2),
      uuid,
      operationType: 'insert',
      documentKey: { _id: 1 },
    });
    const token = encodeResumeToken(data);
    expect(token._data).toMatch(/^[0-9A-F]+$/);
    expect(token._data.startsWith('82000000640000000' + '22B042C0100296E5A1004')).toBe(true);
    expect(token._typeBits).toBeUndefined();
    const back = decodeResumeToken(token);
    expect(back.version).toBe(2);
    expect(back.eventIdentifier).toEqual({
      operationType: 'insert',
      documentKey: { _id: new Int32(1) },
    });
  });

  it('keeps numeric types of the documentKey through _typeBits', () => {
    for (const id of [
      new Long(5),
      new Double(2),
      new Double(2.5),
      new Int32(-300),
      'a\0b',
      new ObjectId(),
    ]) {
      const token = encodeResumeToken(
        eventTokenData({
          clusterTime: ts(1, 1),
          uuid,
          operationType: 'delete',
          documentKey: { _id: id },
        }),
      );
      const key = decodeResumeToken(token).eventIdentifier!.documentKey as { _id: unknown };
      expect(key._id).toEqual(id);
    }
  });

  it('orders tokens by cluster time, high-water marks before events of the same time', () => {
    const ev = (t: number, i: number, id: number) =>
      encodeResumeToken(
        eventTokenData({
          clusterTime: ts(t, i),
          uuid,
          operationType: 'insert',
          documentKey: { _id: id },
        }),
      );
    const sequence = [
      highWaterMarkToken(ts(10, 1)),
      ev(10, 1, 99),
      highWaterMarkToken(ts(10, 2)),
      ev(10, 2, 1),
      ev(10, 300, -5),
      highWaterMarkToken(ts(11, 0)),
      ev(11, 0, 1),
      ev(2 ** 31, 1, 0),
    ];
    for (let i = 1; i < sequence.length; i++)
      expect(compareTokens(sequence[i - 1], sequence[i])).toBe(-1);
    const invalidate = encodeResumeToken({
      ...eventTokenData({ clusterTime: ts(10, 2), uuid, operationType: 'drop' }),
      fromInvalidate: true,
    });
    const drop = encodeResumeToken(
      eventTokenData({ clusterTime: ts(10, 2), uuid, operationType: 'drop' }),
    );
    expect(compareTokens(drop, invalidate)).toBe(-1);
    expect(decodeResumeToken(invalidate).fromInvalidate).toBe(true);
  });

  it('decodes high-water-mark tokens', () => {
    const data = decodeResumeToken(highWaterMarkToken(ts(7, 3)));
    expect(data.tokenType).toBe(TokenType.HighWaterMark);
    expect(data.uuid).toBeUndefined();
    expect(data.eventIdentifier).toBeUndefined();
  });

  it('rejects malformed tokens with MongoDB codes', () => {
    expect(codeOf(() => decodeResumeToken({}))).toBe(40647);
    expect(codeOf(() => decodeResumeToken({ _data: 5 }))).toBe(40647);
    expect(codeOf(() => decodeResumeToken('abc'))).toBe(40647);
    expect(codeOf(() => decodeResumeToken({ _data: 'XYZ' }))).toBe(9);
    expect(codeOf(() => decodeResumeToken({ _data: '8200' }))).toBe(50811);
    // Timestamp then kEnd: no version.
    expect(codeOf(() => decodeResumeToken({ _data: '82000000010000000104' }))).toBe(50796);
  });
});
