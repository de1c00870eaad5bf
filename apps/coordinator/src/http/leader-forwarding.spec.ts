import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Leadership } from '../leadership/leadership';
import { FORWARDED_HEADER, leaderForwarding } from './leader-forwarding';

describe('leaderForwarding with an API token', () => {
  let leader: Server;
  let url: string;
  const seen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    leader = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      res.setHeader('content-type', 'application/json');
      res.end('{"success":true}');
    });
    await new Promise<void>((resolve) => leader.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(leader.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => leader.close(() => resolve())));

  const follower = {
    isLeader: () => false,
    leader: () => ({ id: 'a', url }),
  } as unknown as Leadership;

  async function forward(token?: string): Promise<IncomingHttpHeaders> {
    seen.length = 0;
    const middleware = leaderForwarding(follower, 'b', 1_000, async () => undefined, token);
    const res = { statusCode: 0, setHeader: () => undefined, end: () => undefined };
    const req = {
      method: 'POST',
      url: '/api/v1/pause',
      headers: { authorization: 'Bearer the-clients-header-0123456789' },
      body: {},
    };
    await middleware(req as never, res as never, () => undefined);
    expect(res.statusCode).toBe(200);
    return seen[0];
  }

  it("sends this replica's token to the leader", async () => {
    const headers = await forward('replica-T0ken-0123456789');
    expect(headers.authorization).toBe('Bearer replica-T0ken-0123456789');
    expect(headers[FORWARDED_HEADER]).toBe('b');
  });

  it('sends no Authorization header without a token', async () => {
    expect((await forward()).authorization).toBeUndefined();
  });
});
