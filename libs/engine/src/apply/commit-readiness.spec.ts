import { Binary, Timestamp } from 'bson';
import { canCommit, COMMIT_LAG_LIMIT_SECONDS, lagSeconds } from './commit-readiness';
import { resumeTokenTime } from './resume-token';

describe('commit readiness', () => {
  it('lag is source time minus applied time, never negative, null when unknown', () => {
    const at = (t: number) => new Timestamp({ t, i: 1 });
    expect(lagSeconds(at(110), at(100))).toBe(10);
    expect(lagSeconds(at(100), at(110))).toBe(0);
    expect(lagSeconds(at(100), undefined)).toBeNull();
  });

  it('canCommit needs the copy done, the applier running and a small lag', () => {
    const ok = { copyDone: true, applierRunning: true, lagSeconds: 1 };
    expect(canCommit(ok)).toBe(true);
    expect(canCommit({ ...ok, copyDone: false })).toBe(false);
    expect(canCommit({ ...ok, applierRunning: false })).toBe(false);
    expect(canCommit({ ...ok, lagSeconds: COMMIT_LAG_LIMIT_SECONDS + 1 })).toBe(false);
    expect(canCommit({ ...ok, lagSeconds: null })).toBe(false);
  });
});

describe('resumeTokenTime', () => {
  it('decodes the cluster time of a MongoDB v1 token (hex _data)', () => {
    const token = {
      _data:
        '82612E8513000000012B022C0100296E5A1004A5093ABB38FE4B9EA67F01BB1A96D812463C5F6964003C5F5F5F78000004',
    };
    expect(resumeTokenTime(token)).toEqual(new Timestamp({ t: 1630438675, i: 1 }));
  });
  it('decodes binary _data and refuses other formats', () => {
    const bin = new Binary(Buffer.from('82000000050000000701', 'hex'));
    expect(resumeTokenTime({ _data: bin })).toEqual(new Timestamp({ t: 5, i: 7 }));
    expect(resumeTokenTime({ _data: 'zz' })).toBeUndefined();
    expect(resumeTokenTime({ other: 1 })).toBeUndefined();
  });
});
