import { Timestamp } from 'bson';
import type { HistoryWindow } from '../ports/source-cluster';
import { HistoryGuard } from './history-guard';
import type { JobSession } from './job-session';

const ts = (seconds: number) => new Timestamp({ t: seconds, i: 1 });
const window = (oldest: number, newest: number, shard?: string): HistoryWindow => ({
  oldest: ts(oldest),
  newest: ts(newest),
  oldestWallMs: oldest * 1000,
  newestWallMs: newest * 1000,
  ...(shard ? { shard } : {}),
});

function session(windows: HistoryWindow[] | null, t0 = 1_000): JobSession {
  return {
    job: { t0: t0 === 0 ? new Timestamp({ t: 0, i: 0 }) : ts(t0), estimatedTotalBytes: 1_000_000 },
    tally: { copiedBytes: 0 },
    source: { historyWindows: async () => windows },
  } as unknown as JobSession;
}

const logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
const guard = () =>
  new HistoryGuard({ logger, clock: { now: () => 0, sleep: async () => undefined } });

describe('HistoryGuard on a sharded source (one oplog window per shard)', () => {
  it('fails with HistoryLost naming the shard whose oplog no longer holds T0', async () => {
    const lost = await guard().check(
      session([window(900, 2_000, 'shardA'), window(1_100, 2_000, 'shardB')]),
      { applying: false, lagTimeSeconds: null },
    );
    expect(lost?.name).toBe('HistoryLostError');
    expect(lost?.message).toMatch(/change history on shard shardB no longer reaches .* T0/);
  });

  it('has nothing to keep before a per-shard follower adopts the plan (T0 still zero)', async () => {
    expect(
      await guard().check(session([window(1_100, 2_000, 'shardA')], 0), {
        applying: false,
        lagTimeSeconds: null,
      }),
    ).toBeNull();
  });

  it('warns about the tightest shard while change events are applied', async () => {
    const g = guard();
    const applying = { applying: true, lagTimeSeconds: 60 };
    // The first look: both histories as they are; the next, both have lost their oldest entries.
    await g.check(
      session([window(990, 1_990, 'shardA'), window(1_890, 1_990, 'shardB')]),
      applying,
    );
    // lag 60 s: shardA keeps 1000 s of history (fine), shardB only 100 s (60 > 0.5 × 100)
    expect(
      await g.check(
        session([window(1_000, 2_000, 'shardA'), window(1_900, 2_000, 'shardB')]),
        applying,
      ),
    ).toBeNull();
    expect(g.warnings).toHaveLength(1);
    expect(g.oplogTimeRemainingSeconds).toBe(40); // shardB: 100 s of history, 60 s behind
    expect(g.warnings[0]).toMatch(
      /^OplogWindowSmall: .*change history \(shard shardB\) holds only about 100 s/,
    );
  });

  it('stays silent when every shard keeps enough, and is off when a window cannot be read', async () => {
    const g = guard();
    await g.check(session([window(500, 2_000, 'a'), window(600, 2_000, 'b')]), {
      applying: true,
      lagTimeSeconds: 5,
    });
    expect(g.warnings).toEqual([]);
    expect(await g.check(session(null), { applying: false, lagTimeSeconds: null })).toBeNull();
  });

  it('while copying, the oplog time remaining is how long T0 stays in the tightest history', async () => {
    const g = guard();
    expect(g.oplogTimeRemainingSeconds).toBeNull();
    // T0 = 1000; shard a holds 500..2000 (T0 stays 500 s more), shard b 900..2000 (100 s more)
    await g.check(session([window(500, 2_000, 'a'), window(900, 2_000, 'b')]), {
      applying: false,
      lagTimeSeconds: null,
    });
    expect(g.oplogTimeRemainingSeconds).toBe(100);
  });
});

describe('HistoryGuard on an oplog that has not filled yet', () => {
  /** A copy of `total` bytes, 100,000 copied per second of the guard's clock. */
  function copying(windows: () => HistoryWindow[], total = 1_000_000) {
    let now = 0;
    const tally = { copiedBytes: 0 };
    const s = {
      job: { t0: ts(1_000), estimatedTotalBytes: total },
      tally,
      source: { historyWindows: async () => windows() },
    } as unknown as JobSession;
    const g = new HistoryGuard({
      logger,
      clock: { now: () => now, sleep: async () => undefined },
    });
    const look = async (atSeconds: number) => {
      now = atSeconds * 1000;
      tally.copiedBytes = atSeconds * 100_000;
      return g.check(s, { applying: false, lagTimeSeconds: null });
    };
    return { g, look };
  }

  it('raises no warning while its oldest entry stays where it was (nothing is truncated)', async () => {
    // A cluster loaded just before the sync: 60 s of history, T0 at its newest end, a copy
    // expected to take 98 s more — but the oplog keeps everything so far.
    const { g, look } = copying(() => [window(940, 1_000)], 10_000_000);
    await look(0);
    await look(2);
    expect(g.warnings).toEqual([]);
    // What the span says is still reported, as a lower bound.
    expect(g.oplogTimeRemainingSeconds).toBe(60);
    expect(g.oplogTimeRemainingIsLowerBound).toBe(true);
  });

  it('warns once the history is seen losing entries, and fails when T0 is gone', async () => {
    let oldest = 940;
    const { g, look } = copying(() => [window(oldest, 1_000)]);
    await look(0);
    await look(2);
    expect(g.warnings).toEqual([]);
    expect(g.oplogTimeRemainingIsLowerBound).toBe(true);
    oldest = 945; // truncating: 55 s of history left for T0, ~8 s of copy to go at 100 kB/s
    await look(2);
    expect(g.warnings).toEqual([]); // 8 s < 0.5 × 55 s
    expect([g.oplogTimeRemainingSeconds, g.oplogTimeRemainingIsLowerBound]).toEqual([55, false]);
    oldest = 990; // 10 s left: 8 s > 0.5 × 10 s
    await look(2);
    expect(g.warnings).toHaveLength(1);
    expect(g.warnings[0]).toMatch(/^OplogWindowSmall: the copy is expected to take about 8 s more/);
    oldest = 1_001;
    expect((await look(3))?.name).toBe('HistoryLostError');
  });

  it('fails at once when T0 is already gone, without waiting to see the history move', async () => {
    const { look } = copying(() => [window(1_010, 1_100)]);
    expect((await look(0))?.name).toBe('HistoryLostError');
  });
});
