import { CatchupEstimator } from './catchup-estimator';

describe('CatchupEstimator (estimatedSecondsToCEACatchup)', () => {
  it('divides the lag by how fast it fell over the recent interval', () => {
    const e = new CatchupEstimator(60_000, 5_000);
    e.observe('a', 0, 100);
    e.observe('a', 10_000, 80); // 2 s of lag gone per second
    expect(e.estimate('a')).toBe(40);
  });

  it('is unknown while the lag rises or stays, or the samples span too little time', () => {
    const e = new CatchupEstimator(60_000, 5_000);
    e.observe('a', 0, 10);
    e.observe('a', 2_000, 5);
    expect(e.estimate('a')).toBeUndefined(); // 2 s < 5 s
    e.observe('b', 0, 10);
    e.observe('b', 10_000, 10);
    expect(e.estimate('b')).toBeUndefined();
    e.observe('c', 0, 10);
    e.observe('c', 10_000, 30);
    expect(e.estimate('c')).toBeUndefined();
  });

  it('forgets samples older than the window and resets when change application stops', () => {
    const e = new CatchupEstimator(20_000, 5_000);
    e.observe('a', 0, 1_000);
    e.observe('a', 30_000, 100);
    e.observe('a', 40_000, 90); // the 1 000 s sample is out of the window: 1 s per s
    expect(e.estimate('a')).toBe(90);
    e.observe('a', 41_000, null);
    expect(e.estimate('a')).toBeUndefined();
  });
});
