import type { EngineLogger } from '../ports/engine-logger';
import type { DestinationCluster } from '../ports/destination-cluster';
import type { JobRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';
import {
  FakeCheckpoints,
  FakeFeed,
  FakeLookup,
  FakeWriter,
  NameRouter,
  ts,
} from '../apply/testing-fakes.spec-helper';
import { ChangeEventApplication } from './change-event-application';
import type { PhaseContext } from './phases';

const logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
} as unknown as EngineLogger;

describe('ChangeEventApplication', () => {
  it('the lag counts from what is applied when asked, not from what was applied at the poll', async () => {
    // The source's cluster time is read once (the next poll is a minute away); the feed is idle
    // at 198, so once its first batch is applied the lag is 2 s, without another poll.
    let polls = 0;
    const source = {
      clusterTime: async () => {
        polls += 1;
        return ts(200);
      },
    } as unknown as SourceCluster;
    const writer = new FakeWriter();
    const application = new ChangeEventApplication({
      ports: () => ({
        feed: new FakeFeed([], 198),
        writer,
        lookup: new FakeLookup(),
        checkpoints: new FakeCheckpoints(),
      }),
      lagPollMs: 60_000,
    });
    const controller = new AbortController();
    const ctx: PhaseContext = {
      job: { request: {} } as unknown as JobRecord,
      startAt: ts(100),
      checkpointKey: 'k',
      router: new NameRouter(() => true, writer),
      source,
      destination: {} as DestinationCluster,
      logger,
      signal: controller.signal,
    };
    expect(application.status().lagTimeSeconds).toBeNull();
    const running = application.run(ctx);
    try {
      const deadline = Date.now() + 3_000;
      while (application.status().lagTimeSeconds !== 2 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 5));
      expect(application.status()).toMatchObject({ lagTimeSeconds: 2, readyToCommit: true });
      expect(polls).toBe(1);
      // A commit's drain: every event up to its point applied, the lag is 0 until the next poll.
      await application.waitUntilApplied(ts(198));
      expect(application.status().lagTimeSeconds).toBe(0);
    } finally {
      controller.abort();
      await running.catch(() => undefined);
    }
  });
});
